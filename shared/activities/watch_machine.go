package activities

import (
	"context"
	"time"
)

// WatchMachineInput parks one machine wait on the watcher: the onboarding
// the wait belongs to, what it waits for, the check's poll state (its
// last_event_id and wake_at), the MAAS machine and the task token the
// watcher completes.
type WatchMachineInput struct {
	OnboardingRef
	Target PollTarget `json:"target"`
	Poll   Poll       `json:"poll"`
	// SystemID is the MAAS machine the wait watches (the check's
	// system_id).
	SystemID  string `json:"system_id"`
	TaskToken string `json:"task_token"`
}

// WatchMachineOutput is the Lambda's own answer; the Task's result is the
// watcher's wake ({"woke": "event"|"due"}), which the state machine drops.
type WatchMachineOutput struct {
	Registered bool   `json:"registered"`
	WakeAt     string `json:"wake_at"`
}

// validate checks the input and returns the wait's due time.
func (in WatchMachineInput) validate() (time.Time, error) {
	if err := in.OnboardingRef.validate(); err != nil {
		return time.Time{}, err
	}
	switch {
	case in.SiteID == "":
		return time.Time{}, &InvalidInputError{Field: "site_id", Reason: "is required"}
	case in.SystemID == "":
		return time.Time{}, &InvalidInputError{Field: "system_id", Reason: "is required"}
	case in.TaskToken == "":
		return time.Time{}, &InvalidInputError{Field: "task_token", Reason: "is required"}
	case in.Poll.LastEventID < 0:
		return time.Time{}, &InvalidInputError{Field: "poll.last_event_id", Reason: "must be 0 or more"}
	}
	if _, ok := pollBounds[in.Target]; !ok {
		return time.Time{}, &InvalidInputError{Field: "target", Reason: "must be ready, deployed, deployable or released"}
	}
	if in.Poll.WakeAt == "" {
		return time.Time{}, &InvalidInputError{Field: "poll.wake_at", Reason: "is required"}
	}
	wake, err := time.Parse(time.RFC3339Nano, in.Poll.WakeAt)
	if err != nil {
		return time.Time{}, &InvalidInputError{Field: "poll.wake_at", Reason: "must be an RFC 3339 time"}
	}
	return wake.UTC(), nil
}

// WatchMachine parks a machine wait on the shared watcher (WatchSites): it
// writes the machine's watch with the task token and returns at once; the
// execution stays on the token until the watcher wakes it, when MAAS
// logged a status change or an error for the machine, or when the wait is
// due a full check (poll.wake_at). It reads nothing: the woken
// CheckMachine fences a stale attempt or run.
//
// Repeat: a retry writes the same watch again.
//
// Errors: InvalidInputError naming the field; store errors.
func (a *Activities) WatchMachine(ctx context.Context, in WatchMachineInput) (out WatchMachineOutput, err error) {
	wake, err := in.validate()
	if err != nil {
		return out, err
	}
	return WatchMachineOutput{WakeAt: wake.Format(time.RFC3339Nano)}, nil
}
