package onboarding

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// A machine wait parks on the machine watch (WatchMachine) between checks:
// the watcher wakes it within 30 s of MAAS logging a status change or an
// error for the machine, and at poll.wake_at whatever happened, so a
// transition MAAS logged no event for, or a machine deleted from MAAS, is
// still noticed within machineWakeEvery.
const machineWakeEvery = 10 * time.Minute

// legacyPollSeconds is poll.wait_seconds for executions still on a
// definition whose machine waits are Wait states.
const legacyPollSeconds = 30

var pollBounds = map[activities.PollTarget]time.Duration{
	activities.TargetReady:      60 * time.Minute,
	activities.TargetDeployed:   90 * time.Minute,
	activities.TargetDeployable: 30 * time.Minute,
	// A secure erase of large NVMe disks takes hours; MAAS sets no bound
	// of its own on Disk erasing (maas-behaviour §5).
	activities.TargetReleased: 6 * time.Hour,
}

// CheckMachineInput is one poll: what it waits for, and the stage the
// state machine runs the wait in (wait_ready, wait_deployed,
// recover_deploy), so the workflow's structure stays in the ASL.
type CheckMachineInput struct {
	OnboardingRef
	Target activities.PollTarget `json:"target"`
	Stage  domain.Stage          `json:"stage"`
	Poll   activities.Poll       `json:"poll"`
}

// CheckMachineOutput is the machine's status, the outcome the Choice
// reads, and the next poll state; SystemID is the MAAS machine, which the
// wait's WatchMachine watches.
type CheckMachineOutput struct {
	SystemID   string          `json:"system_id"`
	StatusName string          `json:"status_name"`
	Outcome    string          `json:"outcome"`
	Reason     string          `json:"reason"`
	Poll       activities.Poll `json:"poll"`
}

// CheckMachine is the check behind every machine wait: waiting is output
// (outcome in_progress with poll.wake_at, when the parked wait is due its
// next check if MAAS logs nothing), never an error. It runs right after
// the action and whenever the machine watch wakes the wait, and reads the
// machine's new MAAS events (all levels, so poll.last_event_id is the
// machine's newest event id) and then the machine; the events of level
// INFO and above go onto the timeline (idempotent by MAAS event id).
//
// For target deployed, Deployed is done (not success: enrollment is the
// proof), Failed deployment is failed, and Deploying with a
// datasource/cloud-init-like error event since the deploy began is failed
// at once: the machine would sit in Deploying until MAAS's 30–60 min
// timeout (maas-behaviour §14.1).
//
// It checks in the stage the state machine names (wait_ready,
// wait_deployed, recover_deploy), from whatever stage came before.
//
// Errors: MachineWaitTimeoutError when the wait outlives its bound
// (ready 60 min, deployed 90 min, deployable 30 min); MAAS errors.
func (a *Activities) CheckMachine(ctx context.Context, in CheckMachineInput) (out CheckMachineOutput, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c, err := a.begin(ctx, "CheckMachine", in.Stage, in.OnboardingRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	if _, ok := pollBounds[in.Target]; !ok {
		return out, &activities.InvalidInputError{Field: "target", Reason: "must be ready, deployed, deployable or released"}
	}
	if in.Stage == "" {
		return out, &activities.InvalidInputError{Field: "stage", Reason: "is required"}
	}
	now := a.d.Clock.Now().UTC()
	started := now
	if in.Poll.StartedAt != "" {
		if started, err = time.Parse(time.RFC3339Nano, in.Poll.StartedAt); err != nil {
			return out, &activities.InvalidInputError{Field: "poll.started_at", Reason: "must be an RFC 3339 time"}
		}
	}
	if err := c.enter(ctx, nil); err != nil {
		return out, err
	}
	client, err := c.maas(ctx)
	if err != nil {
		return out, err
	}
	seen, err := c.readMachine(ctx, client, in.Poll.LastEventID)
	if err != nil {
		return out, err
	}
	m := seen.machine
	relevant := eventsAfterID(seen.events, in.Poll.EventsAfter)
	if in.Poll.EventsAfter == 0 {
		relevant = eventsSince(seen.events, started)
	}
	outcome, reason := pollOutcome(in.Target, m, relevant)
	status := activities.MachineStatusName(m)
	bootSeen, notBooted := bootCheck(in.Target, m, in.Poll, seen.events, now.Sub(started))
	if outcome == activities.OutcomeInProgress && notBooted {
		outcome, reason = OutcomeNotBooted, fmt.Sprintf("no boot %d min after the wait began: MAAS shows %s with the commissioning scripts pending and no PXE boot",
			int(now.Sub(started).Minutes()), activities.MachineStatusName(m))
	}
	maasRows := seen.rows
	out = CheckMachineOutput{
		SystemID:   c.Rec.MAASSystemID,
		StatusName: status,
		Outcome:    outcome,
		Reason:     reason,
		Poll: activities.Poll{Count: in.Poll.Count + 1, StartedAt: started.Format(time.RFC3339Nano), LastEventID: seen.lastEventID,
			EventsAfter: in.Poll.EventsAfter, Status: status, BootSeen: bootSeen},
	}
	c.Log.InfoContext(ctx, "machine polled", slog.String("target", string(in.Target)), slog.String("status", out.StatusName),
		slog.String("outcome", outcome), slog.Int("poll", out.Poll.Count))
	// The poll's MAAS events and the stage's end, if this is it, are one
	// timeline write.
	switch outcome {
	case activities.OutcomeDone:
		detail := fmt.Sprintf("machine %s: %s", out.StatusName, reason)
		c.Log.InfoContext(ctx, "stage exited", slog.String("outcome", outcomeOK), slog.String("detail", detail))
		rows := append(maasRows, domain.TimelineEntry{Kind: domain.TimelineStageExited, Outcome: outcomeOK, Detail: detail})
		if cp := targetCheckpoints[in.Target]; cp != "" && c.Rec.Checkpoint != cp {
			// The checkpoint goes with the stage's end, in one write.
			c.Later(rows...)
			return out, c.update(ctx, func(o *domain.Onboarding) error {
				o.Checkpoint = cp
				return nil
			})
		}
		return out, c.Timeline(ctx, rows...)
	case OutcomeNotBooted:
		c.Later(maasRows...)
		return out, c.Note(ctx, sourcePowerCycle, reason)
	case activities.OutcomeFailed:
		// A failed commissioning or testing names its scripts, with their
		// exit status and output on the timeline (requirements readiness §8.3).
		diag, scripts, err := scriptFailureDiagnostics(ctx, client, m)
		if err != nil {
			return out, err
		}
		if len(scripts) > 0 {
			out.Reason = activities.Truncate(reason+"; failed scripts: "+strings.Join(scripts, ", "), 1024)
		}
		rows := append(maasRows, domain.TimelineEntry{Kind: domain.TimelineStageExited, Outcome: outcomeFailed,
			Detail: fmt.Sprintf("machine %s: %s", out.StatusName, out.Reason)})
		return out, c.Timeline(ctx, append(rows, diag...)...)
	}
	if len(maasRows) > 0 {
		if err := c.Timeline(ctx, maasRows...); err != nil {
			return out, err
		}
	}
	waited := now.Sub(started)
	if limit := pollBounds[in.Target]; waited > limit {
		return out, &MachineWaitTimeoutError{SystemID: c.Rec.MAASSystemID, Target: in.Target, Status: out.StatusName,
			WaitedSeconds: int(waited.Seconds()), LimitSeconds: int(limit.Seconds())}
	}
	out.Poll.WakeAt = machineWakeAt(in.Target, started, now, bootSeen).Format(time.RFC3339Nano)
	// An execution started before the machine waits parked on the watch
	// runs the definition it started with (Step Functions keeps it), whose
	// Wait states read wait_seconds: it polls every 30 s until it ends
	// rather than in a tight loop.
	out.Poll.WaitSeconds = legacyPollSeconds
	return out, nil
}

// machineWakeAt is when a wait still in progress is due its next check if
// MAAS logs nothing for the machine: machineWakeEvery from now, but no
// later than just past the wait's bound (so MachineWaitTimeoutError comes
// on time) and, while the wait for Ready has not seen the host boot, than
// the boot deadline (so the power-cycle decision does).
func machineWakeAt(target activities.PollTarget, started, now time.Time, bootSeen bool) time.Time {
	at := now.Add(machineWakeEvery)
	at = minTime(at, started.Add(pollBounds[target]+time.Second))
	if target == activities.TargetReady && !bootSeen {
		at = minTime(at, started.Add(bootDeadline))
	}
	return at
}

// targetCheckpoints are the safe checkpoints a wait passes when MAAS
// shows what it waited for: Ready after commissioning, Deployed before the
// enrollment wait. A machine back to deployable is no checkpoint: the
// deploy is still to come.
var targetCheckpoints = map[activities.PollTarget]domain.Checkpoint{
	activities.TargetReady:    domain.CheckpointCommissioned,
	activities.TargetDeployed: domain.CheckpointDeployed,
}

// inProgressStatuses are, per target, the statuses pollOutcome answers
// in_progress for (a test holds the two together): a move into one of them
// does not wake a parked wait (wakesWait).
var inProgressStatuses = map[activities.PollTarget][]maas.Status{
	activities.TargetReady:      {maas.StatusCommissioning, maas.StatusTesting},
	activities.TargetDeployed:   {maas.StatusDeploying},
	activities.TargetReleased:   {maas.StatusReleasing, maas.StatusDiskErasing},
	activities.TargetDeployable: {maas.StatusDeploying, maas.StatusReleasing, maas.StatusDiskErasing},
}

// pollOutcome maps the machine's status (and, while deploying, its new
// events) to the loop's outcome.
func pollOutcome(target activities.PollTarget, m maas.Machine, events []maas.Event) (string, string) {
	name := activities.MachineStatusName(m)
	switch target {
	case activities.TargetReady:
		switch m.Status {
		case maas.StatusReady, maas.StatusAllocated:
			return activities.OutcomeDone, "ready for deployment"
		case maas.StatusCommissioning, maas.StatusTesting:
			return activities.OutcomeInProgress, "commissioning in progress"
		case maas.StatusNew:
			// Commission moves New to Commissioning in the same request;
			// New again means it was aborted or silently skipped.
			return activities.OutcomeFailed, "machine is New: commissioning is not running"
		default:
			return activities.OutcomeFailed, "commissioning ended in " + name
		}
	case activities.TargetDeployed:
		switch m.Status {
		case maas.StatusDeployed:
			return activities.OutcomeDone, "deployed; enrollment is the proof"
		case maas.StatusDeploying:
			for _, e := range events {
				if domain.IsDatasourceFailureEvent(deployEvent(e)) {
					return activities.OutcomeFailed, "stuck deploying: " + activities.Truncate(e.Type+" - "+e.Description, 240)
				}
			}
			return activities.OutcomeInProgress, "deploying"
		default:
			return activities.OutcomeFailed, "deploy ended in " + name
		}
	case activities.TargetReleased:
		switch m.Status {
		case maas.StatusReady:
			return activities.OutcomeDone, "released"
		case maas.StatusReleasing, maas.StatusDiskErasing:
			return activities.OutcomeInProgress, "releasing: " + name
		default:
			return activities.OutcomeFailed, "release ended in " + name
		}
	default: // TargetDeployable
		switch m.Status {
		case maas.StatusReady, maas.StatusAllocated:
			return activities.OutcomeDone, "back to " + name
		case maas.StatusDeploying, maas.StatusReleasing, maas.StatusDiskErasing:
			return activities.OutcomeInProgress, "recovering: " + name
		default:
			return activities.OutcomeFailed, "recovery ended in " + name
		}
	}
}

func deployEvent(e maas.Event) domain.DeployEvent {
	return domain.DeployEvent{Type: e.Type, Level: e.Level, Description: e.Description}
}

// eventsSince keeps events created at or after t, compared at MAAS's
// one-second resolution (maas-behaviour §11: created has no sub-second part).
func eventsSince(events []maas.Event, t time.Time) []maas.Event {
	cut := t.Truncate(time.Second)
	out := make([]maas.Event, 0, len(events))
	for _, e := range events {
		if !e.Created.Before(cut) {
			out = append(out, e)
		}
	}
	return out
}

// eventsAfterID keeps events newer than id: MAAS event ids only grow, so
// this holds whatever the region's clock says (maas-behaviour §11).
func eventsAfterID(events []maas.Event, id int64) []maas.Event {
	out := make([]maas.Event, 0, len(events))
	for _, e := range events {
		if e.ID > id {
			out = append(out, e)
		}
	}
	return out
}

// polled is what one check read: the machine, its new MAAS events, their
// timeline rows and the newest event id.
type polled struct {
	machine     maas.Machine
	events      []maas.Event
	rows        []domain.TimelineEntry
	lastEventID int64
}

// readMachine reads the machine's events after the wait's cursor, then the
// machine (two GETs). Events first: a status change MAAS logs between the
// two reads is newer than the cursor the parked wait gets, so the watcher
// wakes it for that change rather than missing it.
func (c *call) readMachine(ctx context.Context, client activities.MAAS, after int64) (polled, error) {
	out := polled{lastEventID: after}
	sid := c.Rec.MAASSystemID
	if sid == "" {
		return out, &MachineNotRecordedError{OnboardingID: c.Rec.ID, Activity: c.Activity}
	}
	evs, rows, last, err := c.readMAASEvents(ctx, client, sid, after)
	if err != nil {
		return out, err
	}
	out.events, out.rows, out.lastEventID = evs, rows, last
	m, err := client.Get(ctx, sid)
	if err != nil {
		return out, err
	}
	c.Log.DebugContext(ctx, "machine read", slog.String("status", activities.MachineStatusName(m)))
	out.machine = m
	return out, nil
}

// readMAASEvents reads the machine's events newer than after, at every
// level (DEBUG and above), and returns them, the maas_event timeline rows
// of those of level INFO and above for the caller to write with its own
// (the store writes each MAAS id once), and the newest id seen. DEBUG
// events (user requests, "Node changed status") stay off the timeline but
// move the cursor, so the watcher does not wake the wait for a change this
// check already saw.
func (c *call) readMAASEvents(ctx context.Context, client activities.MAAS, systemID string, after int64) ([]maas.Event, []domain.TimelineEntry, int64, error) {
	evs, err := client.Events(ctx, maas.EventQuery{SystemID: systemID, Level: maas.EventLevelDebug, Limit: activities.MaxEventsPerPoll, After: after})
	if err != nil {
		return nil, nil, after, err
	}
	last := after
	rows := make([]domain.TimelineEntry, 0, len(evs))
	for _, e := range evs {
		if e.ID <= after {
			continue
		}
		last = max(last, e.ID)
		if e.Level == maas.EventLevelDebug || e.Level == maas.EventLevelAudit {
			continue
		}
		detail := e.Type
		if e.Description != "" {
			detail += " - " + e.Description
		}
		rows = append(rows, domain.TimelineEntry{
			Kind: domain.TimelineMAASEvent, Time: e.Created.UTC(), Source: activities.SourceMAAS,
			Detail: activities.Truncate(e.Level+": "+detail, 1024), MAASEventID: e.ID,
		})
	}
	return evs, rows, last, nil
}
