package activities

import "math"

// The machine waits' shared vocabulary: both workflows' checks poll MAAS
// with these targets, outcomes and backoff.

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

// Poll is a wait's state between its checks: how many checks ran, when the
// wait began (RFC 3339), how long a Wait state waits next (the release,
// reimage and drain loops, which still poll), and the newest MAAS event
// already read (last_event_id, the machine watch's starting point).
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
	// Status is the machine's status as last read.
	Status string `json:"status,omitempty"`
	// BootSeen: the wait for Ready saw the host boot (the onboarding's
	// power_cycle_machine.go).
	BootSeen bool `json:"boot_seen,omitempty"`
	// WakeAt (RFC 3339) is when the parked wait is due a full check even
	// without a MAAS event for its machine (WatchMachine, WatchSites).
	WakeAt string `json:"wake_at,omitempty"`
}

// PollWait is the wait before poll n+1: 15 s × 1.5ⁿ, at most 120 s.
func PollWait(n int) int {
	w := float64(pollBaseSeconds) * math.Pow(pollFactor, float64(n))
	if w > pollMaxSeconds || math.IsInf(w, 1) {
		return pollMaxSeconds
	}
	return int(w)
}

// MaxEventsPerPoll is MAAS's limit for events/?op=query (maas-behaviour §11).
const MaxEventsPerPoll = 1000
