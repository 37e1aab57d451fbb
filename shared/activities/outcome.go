package activities

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// What both workflows read from a state machine's Catch and from MAAS's
// event log.

// CatchResult is the {"Error","Cause"} object a Catch places in the state
// (the caught error's name and cause; not itself a Go error).
// For a Lambda error the Cause is the JSON text of aws-lambda-go's error
// payload ({"errorMessage","errorType"}).
type CatchResult struct {
	Error string `json:"Error"`
	Cause string `json:"Cause"`
}

// MaxFailureMessage bounds the recorded message (the event schema allows
// 2048).
const MaxFailureMessage = 1024

// FailureFrom reads the caught error: the name as the code, and the
// errorMessage of a Lambda error payload (or the raw cause) as the message.
func FailureFrom(e *CatchResult, stage domain.Stage) *domain.Failure {
	if e == nil || e.Error == "" {
		return &domain.Failure{Code: "Unknown", Message: "the workflow ended without an error description", Stage: stage}
	}
	msg := strings.TrimSpace(e.Cause)
	var payload struct {
		ErrorMessage string `json:"errorMessage"`
	}
	if json.Unmarshal([]byte(msg), &payload) == nil && payload.ErrorMessage != "" {
		msg = payload.ErrorMessage
	}
	if msg == "" {
		msg = e.Error
	}
	return &domain.Failure{Code: Truncate(e.Error, 128), Message: Truncate(msg, MaxFailureMessage), Stage: stage}
}

// RootError is the innermost error of a wrap chain.
func RootError(err error) error {
	for {
		inner := errors.Unwrap(err)
		if inner == nil {
			return err
		}
		err = inner
	}
}

// NewestEventID is the id of the machine's newest MAAS event, 0 when it has
// none (MAAS lists events newest first, maas-behaviour §11).
func NewestEventID(ctx context.Context, client MAAS, systemID string) (int64, error) {
	evs, err := client.Events(ctx, maas.EventQuery{SystemID: systemID, Level: maas.EventLevelDebug, Limit: 1})
	if err != nil || len(evs) == 0 {
		return 0, err
	}
	return evs[0].ID, nil
}
