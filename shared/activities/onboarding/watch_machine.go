package onboarding

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/logfield"
	"github.com/maasflow/maasflow/shared/store"
)

// WatchMachineInput parks one machine wait on the watcher: the onboarding
// the wait belongs to, what it waits for, the check's poll state (its
// last_event_id and wake_at), the MAAS machine and the task token the
// watcher completes.
type WatchMachineInput struct {
	OnboardingRef
	Target activities.PollTarget `json:"target"`
	Poll   activities.Poll       `json:"poll"`
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

// Wake reasons, the output a parked wait is completed with.
const (
	wokeEvent = "event"
	wokeDue   = "due"
	// wokeSuperseded: the machine is watched by a newer attempt or run, so
	// this wait is let go at once and its check reports the stale run.
	wokeSuperseded = "superseded"
)

// wakeOutput is the task output of a woken wait.
func wakeOutput(reason string) []byte {
	out, _ := json.Marshal(struct {
		Woke string `json:"woke"`
	}{reason})
	return out
}

// validate checks the input and returns the wait's due time.
func (in WatchMachineInput) validate() (time.Time, error) {
	if err := in.OnboardingRef.validate(); err != nil {
		return time.Time{}, err
	}
	switch {
	case in.SiteID == "":
		return time.Time{}, &activities.InvalidInputError{Field: "site_id", Reason: "is required"}
	case in.SystemID == "":
		return time.Time{}, &activities.InvalidInputError{Field: "system_id", Reason: "is required"}
	case in.TaskToken == "":
		return time.Time{}, &activities.InvalidInputError{Field: "task_token", Reason: "is required"}
	case in.Poll.LastEventID < 0:
		return time.Time{}, &activities.InvalidInputError{Field: "poll.last_event_id", Reason: "must be 0 or more"}
	}
	if _, ok := pollBounds[in.Target]; !ok {
		return time.Time{}, &activities.InvalidInputError{Field: "target", Reason: "must be ready, deployed, deployable or released"}
	}
	if in.Poll.WakeAt == "" {
		return time.Time{}, &activities.InvalidInputError{Field: "poll.wake_at", Reason: "is required"}
	}
	wake, err := time.Parse(time.RFC3339Nano, in.Poll.WakeAt)
	if err != nil {
		return time.Time{}, &activities.InvalidInputError{Field: "poll.wake_at", Reason: "must be an RFC 3339 time"}
	}
	return wake.UTC(), nil
}

// WatchMachine parks a machine wait on the shared watcher (WatchSites): it
// writes the machine's watch with the task token (one conditional write)
// and returns at once; the execution stays on the token until the watcher
// wakes it, when MAAS logged a status change or an error for the machine
// after poll.last_event_id, or at poll.wake_at. It reads nothing: the
// woken CheckMachine fences a stale attempt or run. A wait whose machine a
// newer attempt or run already watches is woken at once, so its check
// reports the stale run.
//
// Repeat: a retry writes the same watch again.
//
// Errors: InvalidInputError naming the field; store errors.
func (a *Activities) WatchMachine(ctx context.Context, in WatchMachineInput) (out WatchMachineOutput, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	wake, err := in.validate()
	if err != nil {
		return out, err
	}
	log := a.d.Logger.With(slog.String(logfield.Activity, "WatchMachine"), slog.String(logfield.OnboardingID, in.OnboardingID),
		slog.String(logfield.SiteID, in.SiteID), slog.String(logfield.MAASSystemID, in.SystemID),
		slog.String(logfield.CorrelationID, in.CorrelationID))
	if a.d.Watches == nil {
		return out, &activities.ActivityFailedError{Activity: "WatchMachine", Message: "no watch store configured"}
	}
	w := domain.MachineWatch{
		SiteID: in.SiteID, SystemID: in.SystemID, OnboardingID: in.OnboardingID, Attempt: in.Attempt, Run: in.Run,
		Target: string(in.Target), TaskToken: domain.Secret(in.TaskToken), After: in.Poll.LastEventID,
		WakeAt: wake, RegisteredAt: a.d.Clock.Now().UTC(),
	}
	out.WakeAt = wake.Format(time.RFC3339Nano)
	err = a.d.Watches.PutMachineWatch(ctx, w)
	var superseded *store.ItemConflictError
	if errors.As(err, &superseded) {
		log.InfoContext(ctx, "a newer attempt or run watches the machine; waking this wait")
		return out, a.completeWait(ctx, in.TaskToken, wokeSuperseded)
	}
	if err != nil {
		return out, activities.StoreError("register machine watch", err)
	}
	log.InfoContext(ctx, "machine wait parked", slog.String("target", string(in.Target)),
		slog.Int64("after_event", w.After), slog.Time("wake_at", wake))
	out.Registered = true
	return out, nil
}

// completeWait completes a parked wait's task token; a task that ended
// already is done with. The error never holds the token: only its type.
func (a *Activities) completeWait(ctx context.Context, token, reason string) error {
	if a.d.Completer == nil {
		return &activities.ActivityFailedError{Activity: "WatchMachine", Message: "no task completer configured"}
	}
	err := a.d.Completer.CompleteTask(ctx, token, wakeOutput(reason))
	if err == nil || taskEnded(err) {
		return nil
	}
	return &activities.ActivityFailedError{Activity: "WatchMachine", Message: fmt.Sprintf("the workflow refused the wake (%T)", activities.RootError(err))}
}

// taskEnded reports whether err says the task had already ended
// (run.TaskEndedError, matched by its TaskEnded method).
func taskEnded(err error) bool {
	var ended interface{ TaskEnded() bool }
	return errors.As(err, &ended) && ended.TaskEnded()
}
