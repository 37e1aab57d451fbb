package main

import (
	"github.com/maasflow/maasflow/client"
	"github.com/maasflow/maasflow/cmd/maasflow/internal/admin"
)

// The names the tests of the whole binary read the admin commands' output
// and limits by.
type (
	adminWatchEvent = admin.WatchEvent
	adminDecomEvent = admin.DecomEvent
	adminRoCEView   = admin.RoCEView
	adminVersion    = admin.Version
)

const (
	adminWatchStatus      = admin.WatchStatusKind
	adminWatchMaxFailures = admin.WatchMaxFailures
	adminDriftPageLimit   = admin.DriftPageLimit
	headerCorrelationID   = client.HeaderCorrelationID
	envMAASAPIKey         = "MAAS_API_KEY"
	envBMCUsername        = "BMC_USERNAME"
	envBMCPassword        = "BMC_PASSWORD"
)
