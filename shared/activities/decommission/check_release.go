package decommission

import (
	"context"
	"fmt"
	"time"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/run"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// CheckReleaseInput is one release poll.
type CheckReleaseInput struct {
	DecommissionRef
	Poll activities.Poll `json:"poll"`
}

// Release poll outcomes beyond done, in_progress and failed.
const (
	// OutcomeEraseFailed: MAAS reported Failed disk erasing.
	OutcomeEraseFailed = "erase_failed"
	// OutcomeEraseHung: the machine stayed Disk erasing past the policy's
	// erase bound.
	OutcomeEraseHung = "erase_hung"
)

// CheckReleaseOutput is the outcome the state machine's Choice reads, with
// the policy's release_fallback so the ASL takes the fallback decision.
type CheckReleaseOutput struct {
	StatusName      string          `json:"status_name"`
	Outcome         string          `json:"outcome"`
	Reason          string          `json:"reason"`
	ReleaseFallback bool            `json:"release_fallback"`
	Poll            activities.Poll `json:"poll"`
}

// CheckRelease polls the release: Ready is done; Releasing and Disk
// erasing are in progress, until the erase outlives the policy's
// erase_timeout_seconds (erase_hung; MAAS sets no timeout of its own
// there, maas-behaviour §4); Failed disk erasing is erase_failed; anything
// else is failed. Each poll copies MAAS's new events onto the timeline and
// keeps those about the erase as evidence; at Ready the evidence is closed
// with the release script results MAAS has (3.5+) and a plain statement of
// whether the disks were erased. Waiting is output, never an error.
//
// Errors: MAAS errors, store errors.
func (a *Activities) CheckRelease(ctx context.Context, in CheckReleaseInput) (out CheckReleaseOutput, err error) {
	c, err := a.beginDecom(ctx, "CheckRelease", domain.DecomStageRelease, in.DecommissionRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	if c.Rec.Erase.Fallback {
		c.Stage = domain.DecomStageFallback
	}
	if err := c.enter(ctx); err != nil {
		return out, err
	}
	now := a.d.Clock.Now().UTC()
	started := now
	if in.Poll.StartedAt != "" {
		if started, err = time.Parse(time.RFC3339Nano, in.Poll.StartedAt); err != nil {
			return out, &activities.InvalidInputError{Field: "poll.started_at", Reason: "must be an RFC 3339 time"}
		}
	}
	pol, err := c.policy(ctx)
	if err != nil {
		return out, err
	}
	client, m, err := c.machine(ctx)
	if err != nil {
		return out, err
	}
	after := in.Poll.LastEventID
	if after == 0 {
		// The first poll starts after the events the machine had before
		// this decommission's release: older ones are not its evidence.
		after = c.Rec.Erase.EventsAfter
	}
	lastID, eraseEvents, err := c.copyMAASEvents(ctx, client, m.SystemID, after)
	if err != nil {
		return out, err
	}
	out = CheckReleaseOutput{StatusName: activities.MachineStatusName(m), ReleaseFallback: pol.ReleaseFallback,
		Poll: activities.Poll{Count: in.Poll.Count + 1, StartedAt: started.Format(time.RFC3339Nano), LastEventID: lastID}}

	eraseSince := started
	if c.Rec.Erase.StartedAt != nil {
		eraseSince = *c.Rec.Erase.StartedAt
	}
	switch m.Status {
	case maas.StatusReady, maas.StatusNew:
		out.Outcome, out.Reason = activities.OutcomeDone, "released: "+activities.MachineStatusName(m)
	case maas.StatusReleasing:
		out.Outcome, out.Reason = activities.OutcomeInProgress, "releasing"
	case maas.StatusDiskErasing:
		out.Outcome, out.Reason = activities.OutcomeInProgress, "erasing disks"
		if limit := time.Duration(pol.EraseTimeoutSeconds) * time.Second; now.Sub(eraseSince) > limit && !c.Rec.Erase.Fallback {
			out.Outcome = OutcomeEraseHung
			out.Reason = fmt.Sprintf("still Disk erasing after %ds (limit %ds)", int(now.Sub(eraseSince).Seconds()), pol.EraseTimeoutSeconds)
		}
	case maas.StatusFailedDiskErasing:
		out.Outcome, out.Reason = OutcomeEraseFailed, "Failed disk erasing: "+m.ErrorDescription
		if c.Rec.Erase.Fallback {
			out.Outcome = activities.OutcomeFailed
		}
	default:
		out.Outcome, out.Reason = activities.OutcomeFailed, "release ended in "+activities.MachineStatusName(m)
	}

	var results []domain.EraseScriptResult
	if out.Outcome == activities.OutcomeDone || out.Outcome == OutcomeEraseFailed {
		results = c.releaseScripts(ctx, client, m.SystemID)
	}
	if err := c.update(ctx, func(d *domain.Decommission) error {
		ev := &d.Erase
		for _, e := range eraseEvents {
			if e.id <= ev.EventsThrough {
				continue // already evidence: MAAS wrote it once
			}
			ev.EventsThrough = e.id
			if len(ev.MAASEvents) < maxEraseEvents {
				ev.MAASEvents = append(ev.MAASEvents, e.text)
			}
		}
		if results != nil {
			ev.ScriptResults = results
		}
		switch out.Outcome {
		case activities.OutcomeDone:
			closeEvidence(ev)
		case OutcomeEraseFailed, OutcomeEraseHung:
			ev.Outcome = domain.EraseFailed
			ev.Detail = out.Reason
		default:
			// Whatever stops the run next (a failed release, a cancel, a
			// freeze), the outcome already says what MAAS reported.
			eventOutcome(ev, out.StatusName)
		}
		return nil
	}); err != nil {
		return out, err
	}
	switch out.Outcome {
	case activities.OutcomeDone:
		return out, c.Exit(ctx, fmt.Sprintf("machine %s; disks %s", out.StatusName, c.Rec.Erase.Outcome))
	case activities.OutcomeInProgress:
		out.Poll.WaitSeconds = activities.PollWait(in.Poll.Count)
		return out, nil
	}
	return out, c.Timeline(ctx, domain.DecommissionEvent{Kind: domain.TimelineStageExited, Outcome: run.OutcomeFailed,
		Detail: fmt.Sprintf("machine %s: %s", out.StatusName, out.Reason)})
}

// maxEraseEvents bounds the MAAS events kept as erase evidence.
const maxEraseEvents = 20

// closeEvidence states, once the machine is Ready, whether the disks were
// erased: never when the fallback released without erase or the policy
// asked none; erased when MAAS said so (event or wipe-disks result), or
// went through its erase to Ready (any erase failure would have stopped
// in Failed disk erasing, maas-behaviour §5).
func closeEvidence(ev *domain.EraseEvidence) {
	erasedEvent := false
	for _, e := range ev.MAASEvents {
		if e == "Disks erased" {
			erasedEvent = true
		}
	}
	wiped := false
	for _, r := range ev.ScriptResults {
		if r.Name == "wipe-disks" && r.Status == "Passed" {
			wiped = true
		}
	}
	switch {
	case ev.Fallback:
		ev.Outcome = domain.EraseNotDone
		ev.Detail = "the disks were NOT erased: the release fallback released the machine without erase after the erase " + ev.FallbackReason
	case ev.Mode == domain.EraseNone && !erasedEvent:
		ev.Outcome = domain.EraseNotDone
		ev.Detail = "the disks were NOT erased: policy erase_mode is none"
	case erasedEvent || wiped:
		ev.Outcome = domain.EraseDone
		ev.Detail = fmt.Sprintf("MAAS erased the disks (%s erase)", ev.Mode)
	default:
		ev.Outcome = domain.EraseDone
		ev.Detail = fmt.Sprintf("MAAS released the machine through its %s erase; it reported no failure", ev.Mode)
	}
}

// eventOutcome sets the erase outcome from MAAS's own events before the
// machine is Ready: the newest of "Disks erased" (erased) and "Failed to
// erase disks." / "Aborted disk erasing" (failed) decides. A release
// without erase (fallback, policy none) stays not_erased.
func eventOutcome(ev *domain.EraseEvidence, status string) {
	if ev.Fallback || ev.Outcome == domain.EraseNotDone {
		return
	}
	for i := len(ev.MAASEvents) - 1; i >= 0; i-- {
		switch ev.MAASEvents[i] {
		case "Disks erased":
			ev.Outcome = domain.EraseDone
			ev.Detail = fmt.Sprintf("MAAS reported the disks erased (%s erase); the machine is %s", ev.Mode, status)
			return
		case "Failed to erase disks.", "Aborted disk erasing":
			ev.Outcome = domain.EraseFailed
			ev.Detail = fmt.Sprintf("MAAS reported %q; the machine is %s", ev.MAASEvents[i], status)
			return
		}
	}
}

// ReleaseScriptReader reads a machine's release script results (MAAS 3.5+,
// maas-behaviour §12). Optional on a MAAS client.
type ReleaseScriptReader interface {
	ReleaseScriptResults(ctx context.Context, systemID string) (maas.ScriptSet, error)
}

// releaseScripts reads the newest release script results, best effort:
// older MAAS versions have none, and their absence is not a failure.
func (c *dcall) releaseScripts(ctx context.Context, client activities.MAAS, systemID string) []domain.EraseScriptResult {
	r, ok := client.(ReleaseScriptReader)
	if !ok {
		return nil
	}
	set, err := r.ReleaseScriptResults(ctx, systemID)
	if err != nil {
		c.Log.InfoContext(ctx, "no release script results", "error", err.Error())
		return nil
	}
	out := make([]domain.EraseScriptResult, 0, len(set.Results))
	for _, res := range set.Results {
		out = append(out, domain.EraseScriptResult{Name: res.Name, Status: res.StatusName, ExitStatus: res.ExitStatus,
			Output: activities.Tail(res.Output, 2048)})
	}
	return out
}

// copyMAASEvents copies the machine's events newer than after onto the
// decommission's timeline (each MAAS id once) and returns the newest id and
// the texts of those about the erase.
func (c *dcall) copyMAASEvents(ctx context.Context, client activities.MAAS, systemID string, after int64) (int64, []eraseEvent, error) {
	evs, err := client.Events(ctx, maas.EventQuery{SystemID: systemID, Level: maas.EventLevelInfo, Limit: activities.MaxEventsPerPoll, After: after})
	if err != nil {
		return after, nil, err
	}
	last := after
	var rows []domain.DecommissionEvent
	var erase []eraseEvent
	for i := len(evs) - 1; i >= 0; i-- { // MAAS answers newest first
		e := evs[i]
		if e.ID <= after {
			continue
		}
		last = max(last, e.ID)
		detail := e.Type
		if e.Description != "" {
			detail += " - " + e.Description
		}
		rows = append(rows, domain.DecommissionEvent{Kind: domain.TimelineMAASEvent, Time: e.Created.UTC(), Source: activities.SourceMAAS,
			Detail: activities.Truncate(e.Level+": "+detail, 1024), MAASEventID: e.ID})
		if isEraseEvent(e) {
			text := e.Type
			if e.Type == "Marking node failed" {
				text = e.Description
			}
			erase = append(erase, eraseEvent{id: e.ID, text: activities.Truncate(text, 256)})
		}
	}
	if len(rows) > 0 {
		if err := c.Timeline(ctx, rows...); err != nil {
			return after, nil, err
		}
	}
	return last, erase, nil
}

// eraseEvent is one MAAS event about the erase: its id and its words.
type eraseEvent struct {
	id   int64
	text string
}

// isEraseEvent picks MAAS's events about disk erasing (maas-behaviour §11):
// "Disks erased", "Aborted disk erasing", and the failure "Failed to erase
// disks.".
func isEraseEvent(e maas.Event) bool {
	switch e.Type {
	case "Disks erased", "Aborted disk erasing":
		return true
	case "Marking node failed":
		return e.Description == "Failed to erase disks."
	}
	return false
}
