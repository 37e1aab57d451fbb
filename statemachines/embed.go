// Package statemachines holds the workflows as Amazon States Language files
// and embeds them, so the local stack runs exactly the files that are
// deployed to Step Functions. Each <name>.asl.json is generated from
// src/<name>.asl.yaml, with the error lists and retriers of src/errors.yaml
// stated once (internal/aslsrc): edit the source, then go generate.
package statemachines

//go:generate go run ./internal/aslsrc/aslgen

import _ "embed"

// Onboarding is onboarding.asl.json: one node from an IPMI address to an
// enrolled, active node.
//
//go:embed onboarding.asl.json
var Onboarding []byte

// Reconcile is reconcile.asl.json: one reconcile run, fanned out per site.
//
//go:embed reconcile.asl.json
var Reconcile []byte

// Decommission is decommission.asl.json: one node drained, released with
// erase (or the release fallback) and removed, retired or reimaged.
//
//go:embed decommission.asl.json
var Decommission []byte

// BatchOnboarding is batch-onboarding.asl.json: a batch's rows, each run as
// a child execution of the onboarding state machine.
//
//go:embed batch-onboarding.asl.json
var BatchOnboarding []byte

// MachineWatch is machine-watch.asl.json: one minute of the machine watch,
// which wakes the onboarding waits whose machine changed.
//
//go:embed machine-watch.asl.json
var MachineWatch []byte
