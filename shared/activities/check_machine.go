package activities

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// PollTarget is the MAAS status a poll loop waits for.
type PollTarget string

// Poll targets.
const (
	// TargetReady waits for commissioning and testing to end in Ready (or
	// Allocated, for an adopted machine).
	TargetReady PollTarget = "ready"
	// TargetDeployed waits for Deployed.
	TargetDeployed PollTarget = "deployed"
	// TargetDeployable waits, after RecoverDeploy, for Ready or Allocated.
	TargetDeployable PollTarget = "deployable"
	// TargetReleased waits, after restart-clean's release, for Ready.
	TargetReleased PollTarget = "released"
)

// Poll outcomes.
const (
	OutcomeDone       = "done"
	OutcomeInProgress = "in_progress"
	OutcomeFailed     = "failed"
)

// Poll backoff and bounds. pollWait (release, reimage and drain waits):
// the first wait is 15 s and grows ×1.5 per poll up to 120 s. MAAS's own
// timeouts sit inside the bounds: commissioning and testing 30 min each
// (node_timeout), deploy 30 min (≤3.5) or 60 min (3.6+), release 5 min
// (maas-behaviour §4).
const (
	pollBaseSeconds = 15
	pollFactor      = 1.5
	pollMaxSeconds  = 120
)

// The onboarding's machine waits (CheckMachine) notice a transition within
// machinePollMaxSeconds: after the first poll (right after the action)
// they stay quiet for the phase's expected shortest duration, when MAAS
// cannot have finished, then poll every 30 s. Spending no GETs in the
// quiet part keeps the GETs of a typical wait at or below the old
// 15 s→120 s backoff's (docs/benchmarks.md, BenchmarkMachinePollSchedule).
const machinePollMaxSeconds = 30

var machinePollQuietSeconds = map[PollTarget]int{
	// Commissioning and testing a GPU server: power on, POST, PXE, the
	// ephemeral image and the scripts, then power off.
	TargetReady: 600,
	// Deploy: power on, POST, curtin install, reboot, POST again,
	// cloud-init.
	TargetDeployed: 540,
	// Release back to Ready/Allocated when a deploy is retried.
	TargetDeployable: 15,
	// Release, with the erase the policy asks for.
	TargetReleased: 15,
}

var pollBounds = map[PollTarget]time.Duration{
	TargetReady:      60 * time.Minute,
	TargetDeployed:   90 * time.Minute,
	TargetDeployable: 30 * time.Minute,
	// A secure erase of large NVMe disks takes hours; MAAS sets no bound
	// of its own on Disk erasing (maas-behaviour §5).
	TargetReleased: 6 * time.Hour,
}

// Poll is the Choice/Wait loop's state: how many polls ran, when the wait
// began (RFC 3339), how long the Wait state waits next, and the newest MAAS
// event already copied to the timeline.
type Poll struct {
	Count       int    `json:"count"`
	StartedAt   string `json:"started_at"`
	WaitSeconds int    `json:"wait_seconds"`
	LastEventID int64  `json:"last_event_id"`
	// EventsAfter, when set, is the newest MAAS event id before the
	// operation waited on began (the deploy's events_after): only events
	// after it decide the outcome. Unset, events created since StartedAt
	// do.
	EventsAfter int64 `json:"events_after,omitempty"`
	// Status is the machine's status as last read (a poll that sees no
	// change does not read it again).
	Status string `json:"status,omitempty"`
	// BootSeen: the wait for Ready saw the host boot (power_cycle_machine.go).
	BootSeen bool `json:"boot_seen,omitempty"`
	// WakeAt (RFC 3339) is when the parked wait is due a full check even
	// without a MAAS event for its machine (WatchMachine, WatchSites).
	WakeAt string `json:"wake_at,omitempty"`
}

// CheckMachineInput is one poll: what it waits for, and the stage the
// state machine runs the wait in (wait_ready, wait_deployed,
// recover_deploy), so the workflow's structure stays in the ASL.
type CheckMachineInput struct {
	OnboardingRef
	Target PollTarget   `json:"target"`
	Stage  domain.Stage `json:"stage"`
	Poll   Poll         `json:"poll"`
}

// CheckMachineOutput is the machine's status, the outcome the Choice
// reads, and the next poll state.
type CheckMachineOutput struct {
	StatusName string `json:"status_name"`
	Outcome    string `json:"outcome"`
	Reason     string `json:"reason"`
	Poll       Poll   `json:"poll"`
}

// CheckMachine is the poll behind every Choice/Wait loop: waiting is
// output (outcome in_progress with poll.wait_seconds), never an error. Each
// poll copies MAAS's new events onto the timeline (idempotent by MAAS event
// id). For target deployed, Deployed is done (not success: enrollment is
// the proof), Failed deployment is failed, and Deploying with a
// datasource/cloud-init-like error event since the deploy began is failed
// at once: the machine would sit in Deploying until MAAS's 30–60 min
// timeout (maas-behaviour §14.1).
//
// It polls in the stage the state machine names (wait_ready,
// wait_deployed, recover_deploy), from whatever stage came before.
//
// Errors: MachineWaitTimeoutError when the wait outlives its bound
// (ready 60 min, deployed 90 min, deployable 30 min); MAAS errors.
func (a *Activities) CheckMachine(ctx context.Context, in CheckMachineInput) (out CheckMachineOutput, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c, err := a.begin(ctx, "CheckMachine", in.Stage, in.OnboardingRef)
	defer c.finish(ctx, &err)
	if err != nil {
		return out, err
	}
	if _, ok := pollBounds[in.Target]; !ok {
		return out, &InvalidInputError{Field: "target", Reason: "must be ready, deployed, deployable or released"}
	}
	if in.Stage == "" {
		return out, &InvalidInputError{Field: "stage", Reason: "is required"}
	}
	now := a.d.Clock.Now().UTC()
	started := now
	if in.Poll.StartedAt != "" {
		if started, err = time.Parse(time.RFC3339Nano, in.Poll.StartedAt); err != nil {
			return out, &InvalidInputError{Field: "poll.started_at", Reason: "must be an RFC 3339 time"}
		}
	}
	if err := c.enter(ctx, nil); err != nil {
		return out, err
	}
	client, err := c.maas(ctx)
	if err != nil {
		return out, err
	}
	seen, err := c.pollMachine(ctx, client, in.Target, in.Poll)
	if err != nil {
		return out, err
	}
	m := seen.machine
	outcome, reason := OutcomeInProgress, "no change since the last poll"
	if seen.read {
		relevant := eventsAfterID(seen.events, in.Poll.EventsAfter)
		if in.Poll.EventsAfter == 0 {
			relevant = eventsSince(seen.events, started)
		}
		outcome, reason = pollOutcome(in.Target, m, relevant)
	}
	status := in.Poll.Status
	// A poll that read nothing new keeps the boot as last seen: the cheap
	// poll starts only once the boot was seen (pollMachine).
	bootSeen, notBooted := in.Poll.BootSeen, false
	if seen.read {
		status = statusName(m)
		bootSeen, notBooted = bootCheck(in.Target, m, in.Poll, seen.events, now.Sub(started))
	}
	if outcome == OutcomeInProgress && notBooted {
		outcome, reason = OutcomeNotBooted, fmt.Sprintf("no boot %d min after the wait began: MAAS shows %s with the commissioning scripts pending and no PXE boot",
			int(now.Sub(started).Minutes()), statusName(m))
	}
	maasRows := seen.rows
	out = CheckMachineOutput{
		StatusName: status,
		Outcome:    outcome,
		Reason:     reason,
		Poll: Poll{Count: in.Poll.Count + 1, StartedAt: started.Format(time.RFC3339Nano), LastEventID: seen.lastEventID,
			EventsAfter: in.Poll.EventsAfter, Status: status, BootSeen: bootSeen},
	}
	c.log.InfoContext(ctx, "machine polled", slog.String("target", string(in.Target)), slog.String("status", out.StatusName),
		slog.String("outcome", outcome), slog.Int("poll", out.Poll.Count))
	// The poll's MAAS events and the stage's end, if this is it, are one
	// timeline write.
	switch outcome {
	case OutcomeDone:
		detail := fmt.Sprintf("machine %s: %s", out.StatusName, reason)
		c.log.InfoContext(ctx, "stage exited", slog.String("outcome", outcomeOK), slog.String("detail", detail))
		rows := append(maasRows, domain.TimelineEntry{Kind: domain.TimelineStageExited, Outcome: outcomeOK, Detail: detail})
		if cp := targetCheckpoints[in.Target]; cp != "" && c.ob.Checkpoint != cp {
			// The checkpoint goes with the stage's end, in one write.
			c.later(rows...)
			return out, c.update(ctx, func(o *domain.Onboarding) error {
				o.Checkpoint = cp
				return nil
			})
		}
		return out, c.timeline(ctx, rows...)
	case OutcomeNotBooted:
		c.later(maasRows...)
		return out, c.note(ctx, sourcePowerCycle, reason)
	case OutcomeFailed:
		// A failed commissioning or testing names its scripts, with their
		// exit status and output on the timeline (seed 000 §8.3).
		diag, scripts, err := scriptFailureDiagnostics(ctx, client, m)
		if err != nil {
			return out, err
		}
		if len(scripts) > 0 {
			out.Reason = truncate(reason+"; failed scripts: "+strings.Join(scripts, ", "), 1024)
		}
		rows := append(maasRows, domain.TimelineEntry{Kind: domain.TimelineStageExited, Outcome: outcomeFailed,
			Detail: fmt.Sprintf("machine %s: %s", out.StatusName, out.Reason)})
		return out, c.timeline(ctx, append(rows, diag...)...)
	}
	if len(maasRows) > 0 {
		if err := c.timeline(ctx, maasRows...); err != nil {
			return out, err
		}
	}
	waited := now.Sub(started)
	if limit := pollBounds[in.Target]; waited > limit {
		return out, &MachineWaitTimeoutError{SystemID: c.ob.MAASSystemID, Target: in.Target, Status: out.StatusName,
			WaitedSeconds: int(waited.Seconds()), LimitSeconds: int(limit.Seconds())}
	}
	out.Poll.WaitSeconds = machinePollWait(in.Target, in.Poll.Count)
	return out, nil
}

// targetCheckpoints are the safe checkpoints a wait passes when MAAS
// shows what it waited for: Ready after commissioning, Deployed before the
// enrollment wait. A machine back to deployable is no checkpoint: the
// deploy is still to come.
var targetCheckpoints = map[PollTarget]domain.Checkpoint{
	TargetReady:    domain.CheckpointCommissioned,
	TargetDeployed: domain.CheckpointDeployed,
}

// machinePollWait is the wait before CheckMachine's poll n+1: the
// target's quiet period after the first poll, then machinePollMaxSeconds.
func machinePollWait(target PollTarget, n int) int {
	if quiet := machinePollQuietSeconds[target]; n == 0 && quiet > machinePollMaxSeconds {
		return quiet
	}
	return machinePollMaxSeconds
}

// pollWait is the wait before poll n+1: 15 s × 1.5ⁿ, at most 120 s.
func pollWait(n int) int {
	w := float64(pollBaseSeconds) * math.Pow(pollFactor, float64(n))
	if w > pollMaxSeconds || math.IsInf(w, 1) {
		return pollMaxSeconds
	}
	return int(w)
}

// pollOutcome maps the machine's status (and, while deploying, its new
// events) to the loop's outcome.
func pollOutcome(target PollTarget, m maas.Machine, events []maas.Event) (string, string) {
	name := statusName(m)
	switch target {
	case TargetReady:
		switch m.Status {
		case maas.StatusReady, maas.StatusAllocated:
			return OutcomeDone, "ready for deployment"
		case maas.StatusCommissioning, maas.StatusTesting:
			return OutcomeInProgress, "commissioning in progress"
		case maas.StatusNew:
			// Commission moves New to Commissioning in the same request;
			// New again means it was aborted or silently skipped.
			return OutcomeFailed, "machine is New: commissioning is not running"
		default:
			return OutcomeFailed, "commissioning ended in " + name
		}
	case TargetDeployed:
		switch m.Status {
		case maas.StatusDeployed:
			return OutcomeDone, "deployed; enrollment is the proof"
		case maas.StatusDeploying:
			for _, e := range events {
				if domain.IsDatasourceFailureEvent(deployEvent(e)) {
					return OutcomeFailed, "stuck deploying: " + truncate(e.Type+" - "+e.Description, 240)
				}
			}
			return OutcomeInProgress, "deploying"
		default:
			return OutcomeFailed, "deploy ended in " + name
		}
	case TargetReleased:
		switch m.Status {
		case maas.StatusReady:
			return OutcomeDone, "released"
		case maas.StatusReleasing, maas.StatusDiskErasing:
			return OutcomeInProgress, "releasing: " + name
		default:
			return OutcomeFailed, "release ended in " + name
		}
	default: // TargetDeployable
		switch m.Status {
		case maas.StatusReady, maas.StatusAllocated:
			return OutcomeDone, "back to " + name
		case maas.StatusDeploying, maas.StatusReleasing, maas.StatusDiskErasing:
			return OutcomeInProgress, "recovering: " + name
		default:
			return OutcomeFailed, "recovery ended in " + name
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

// machineFullReadEvery: every this many polls (and on the first) a wait
// reads the whole machine even when the cheap read saw no change, so a
// machine deleted from MAAS (which the status filter cannot tell from one
// still in progress) or a transition MAAS logged no event for is still
// noticed, within ten minutes at the 30 s cadence.
const machineFullReadEvery = 20

// inProgress are the statuses a wait for target skips with the cheap
// status read (MachineUnlessIn); the deployed wait reads events instead.
var inProgress = map[PollTarget][]maas.Status{
	TargetReady:      {maas.StatusCommissioning, maas.StatusTesting},
	TargetDeployable: {maas.StatusDeploying, maas.StatusReleasing, maas.StatusDiskErasing},
}

// statusPoller is the MAAS client's cheap status read (maas.Client).
type statusPoller interface {
	MachineUnlessIn(ctx context.Context, systemID string, statuses ...maas.Status) (maas.Machine, bool, error)
}

// polled is what one poll saw: the machine, when it was read, and the new
// MAAS events, when they were.
type polled struct {
	read        bool
	machine     maas.Machine
	events      []maas.Event
	rows        []domain.TimelineEntry
	lastEventID int64
}

// pollMachine is one poll at the least MAAS cost that still notices every
// transition at once: one GET while nothing changes.
//
//   - ready and deployable: GET machines/?id=…&not_status=<in progress>
//     (maas-behaviour §6) answers [] while the phase runs, and the machine
//     once it has left; only then are its events read (to the timeline).
//   - deployed: the events since the cursor (maas-behaviour §11) are read
//     on every poll, because a datasource failure shows only there while
//     the machine stays Deploying (§14.1); the machine is read when new
//     events came, since MAAS logs the end of a deploy (Deployed, Marking
//     node failed, Node installation failure) as an event (§11).
//
// The first poll and every machineFullReadEvery-th read everything.
func (c *call) pollMachine(ctx context.Context, client MAAS, target PollTarget, p Poll) (polled, error) {
	out := polled{lastEventID: p.LastEventID}
	sid := c.ob.MAASSystemID
	if sid == "" {
		return out, &MachineNotRecordedError{OnboardingID: c.ob.ID, Activity: c.activity}
	}
	// Until the host was seen to boot, the wait for Ready reads everything:
	// the boot check needs the machine's script status and the boot events.
	full := p.Count == 0 || p.Count%machineFullReadEvery == 0 || (target == TargetReady && !p.BootSeen)
	readEvents := func() error {
		evs, rows, last, err := c.readMAASEvents(ctx, client, sid, p.LastEventID)
		out.events, out.rows, out.lastEventID = evs, rows, last
		return err
	}
	cheap, ok := client.(statusPoller)
	switch {
	case full || !ok:
	case target == TargetDeployed:
		if err := readEvents(); err != nil || len(out.rows) == 0 {
			return out, err
		}
	default:
		m, left, err := cheap.MachineUnlessIn(ctx, sid, inProgress[target]...)
		if err != nil || !left {
			return out, err
		}
		out.read, out.machine = true, m
		return out, readEvents()
	}
	m, err := client.Get(ctx, sid)
	if err != nil {
		return out, err
	}
	c.log.DebugContext(ctx, "machine read", slog.String("status", statusName(m)))
	out.read, out.machine = true, m
	if out.events == nil && out.rows == nil {
		return out, readEvents()
	}
	return out, nil
}

// maxEventsPerPoll is MAAS's limit for events/?op=query (maas-behaviour §11).
const maxEventsPerPoll = 1000

// readMAASEvents reads the machine's events newer than after and returns
// them, their maas_event timeline rows for the caller to write with its own
// (the store writes each MAAS id once), and the newest id seen.
func (c *call) readMAASEvents(ctx context.Context, client MAAS, systemID string, after int64) ([]maas.Event, []domain.TimelineEntry, int64, error) {
	evs, err := client.Events(ctx, maas.EventQuery{SystemID: systemID, Level: maas.EventLevelInfo, Limit: maxEventsPerPoll, After: after})
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
		detail := e.Type
		if e.Description != "" {
			detail += " - " + e.Description
		}
		rows = append(rows, domain.TimelineEntry{
			Kind: domain.TimelineMAASEvent, Time: e.Created.UTC(), Source: sourceMAAS,
			Detail: truncate(e.Level+": "+detail, 1024), MAASEventID: e.ID,
		})
	}
	return evs, rows, last, nil
}
