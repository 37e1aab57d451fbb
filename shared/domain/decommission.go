package domain

import "time"

// Decommission modes (requirements API boundary §4.4, blueprint "Decommission").
const (
	// DecommissionReimage drains, releases with erase, and onboards the same
	// node identity again on the Ready machine.
	DecommissionReimage = "reimage"
	// DecommissionFull drains, releases with erase, deletes the machine from
	// MAAS when policy says so, and removes the node (terminal).
	DecommissionFull = "full"
	// DecommissionStorageCleanup drains, releases with erase and retires the
	// node, so an operator decides what comes next.
	DecommissionStorageCleanup = "storage_cleanup"
)

// DecommissionModes lists the modes, for validation and docs.
func DecommissionModes() []string {
	return []string{DecommissionReimage, DecommissionFull, DecommissionStorageCleanup}
}

// DecommissionStage is where a decommission is. The ASL
// (statemachines/decommission.asl.json) orders the stages; the record says
// which one the run is in.
type DecommissionStage string

// Decommission stages.
const (
	DecomStageStart    DecommissionStage = "start"
	DecomStageDrain    DecommissionStage = "drain"
	DecomStageRelease  DecommissionStage = "release"
	DecomStageFallback DecommissionStage = "release_fallback"
	DecomStageDelete   DecommissionStage = "delete"
	DecomStageReimage  DecommissionStage = "reimage"
	DecomStageFinish   DecommissionStage = "finish"
)

// Erase modes a policy can ask of MAAS's release (maas-behaviour §8):
// none releases without erasing, plain overwrites the disks, quick wipes
// partition tables and the start and end of each disk, secure uses the
// drive's secure erase where it has one and overwrites otherwise.
const (
	EraseNone   = "none"
	ErasePlain  = "plain"
	EraseQuick  = "quick"
	EraseSecure = "secure"
)

// Erase outcomes recorded on a decommission.
const (
	// ErasePending: the release that erases has not ended yet.
	ErasePending = "pending"
	// EraseDone: MAAS reported the disks erased.
	EraseDone = "erased"
	// EraseNotDone: the machine was released without erasing its disks
	// (policy none, the release fallback, or a machine that was already
	// Ready). A tenant's data may still be on them.
	EraseNotDone = "not_erased"
	// EraseFailed: the erase failed or hung and nothing replaced it.
	EraseFailed = "failed"
)

// EraseEvidence is what a decommission knows about the disks: what was
// asked, what MAAS reported, and plainly whether they were erased.
type EraseEvidence struct {
	// Mode is the erase the policy asked for (none, plain, quick, secure).
	Mode string `json:"mode" dynamodbav:"mode"`
	// Outcome is pending, erased, not_erased or failed.
	Outcome string `json:"outcome" dynamodbav:"outcome"`
	// Fallback is set when the release fallback released without erase;
	// FallbackReason says why (erase failed, erase hung).
	Fallback       bool   `json:"fallback" dynamodbav:"fallback"`
	FallbackReason string `json:"fallback_reason,omitempty" dynamodbav:"fallback_reason,omitempty"`
	// Detail explains the outcome in one sentence.
	Detail string `json:"detail,omitempty" dynamodbav:"detail,omitempty"`
	// StartedAt is when the erasing release was sent.
	StartedAt *time.Time `json:"started_at,omitempty" dynamodbav:"started_at,omitempty"`
	// EventsAfter is the id of the machine's newest MAAS event just before
	// the release was sent: only newer events speak of this erase. A
	// machine keeps its events across owners, so an older "Disks erased"
	// is another decommission's (ids, not times: maas-behaviour §11).
	EventsAfter int64 `json:"events_after,omitempty" dynamodbav:"events_after,omitempty"`
	// MAASEvents are MAAS's own words about the erase ("Disks erased",
	// "Failed to erase disks.", "Aborted disk erasing").
	MAASEvents []string `json:"maas_events" dynamodbav:"maas_events,omitempty"`
	// EventsThrough is the id of the newest MAAS event read into
	// MAASEvents: a poll that reads the same events again (the release
	// fallback's, a retried poll) adds each MAAS event once.
	EventsThrough int64 `json:"events_through,omitempty" dynamodbav:"events_through,omitempty"`
	// ScriptResults are the release script results MAAS kept (MAAS 3.5+,
	// e.g. wipe-disks), when it has them.
	ScriptResults []EraseScriptResult `json:"script_results" dynamodbav:"script_results,omitempty"`
}

// EraseScriptResult is one release script's result as MAAS reported it.
type EraseScriptResult struct {
	Name       string `json:"name" dynamodbav:"name"`
	Status     string `json:"status" dynamodbav:"status"`
	ExitStatus *int   `json:"exit_status,omitempty" dynamodbav:"exit_status,omitempty"`
	Output     string `json:"output,omitempty" dynamodbav:"output,omitempty"`
}

// DecommissionStatus is where a decommission stands as a whole. Its values
// are the onboarding's wire strings (an operator reads one vocabulary), but
// a decommission's status is its own type, so its rules cannot be handed
// an onboarding's status by mistake.
type DecommissionStatus string

// Decommission statuses.
const (
	DecommissionPending            DecommissionStatus = "pending"
	DecommissionRunning            DecommissionStatus = "running"
	DecommissionCompleted          DecommissionStatus = "completed"
	DecommissionFailed             DecommissionStatus = "failed"
	DecommissionManualIntervention DecommissionStatus = "manual_intervention"
	DecommissionCancelled          DecommissionStatus = "cancelled"
)

// Decommission is the read model of one decommission workflow (requirements API boundary
// §7 node_decommissions). An open one (pending, running,
// manual_intervention) holds the node.
type Decommission struct {
	ID       string             `json:"id" dynamodbav:"id"`
	NodeID   string             `json:"node_id" dynamodbav:"node_id"`
	SiteID   string             `json:"site_id" dynamodbav:"site_id"`
	Hostname string             `json:"hostname" dynamodbav:"hostname"`
	Mode     string             `json:"mode" dynamodbav:"mode"`
	Reason   string             `json:"reason,omitempty" dynamodbav:"reason,omitempty"`
	Status   DecommissionStatus `json:"status" dynamodbav:"status"`
	Stage    DecommissionStage  `json:"stage" dynamodbav:"stage"`
	Attempt  int                `json:"attempt" dynamodbav:"attempt"`
	// Run numbers the executions of this attempt, as Onboarding.Run does.
	Run          int    `json:"run,omitempty" dynamodbav:"run,omitempty"`
	MAASSystemID string `json:"maas_system_id" dynamodbav:"maas_system_id"`
	// OnboardingID links the onboarding a reimage started.
	OnboardingID string `json:"onboarding_id,omitempty" dynamodbav:"onboarding_id,omitempty"`
	// NodeStatusBefore is the node's status when the decommission began,
	// restored when it fails before anything changed.
	NodeStatusBefore string `json:"node_status_before,omitempty" dynamodbav:"node_status_before,omitempty"`
	// ReleaseStartedAt is when the release stage of any attempt first
	// acted on the machine in MAAS (written just before the first request
	// goes out, so a run stopped mid-send counts). rerun and retry never
	// clear it: from then on the machine may no longer run the tenant's OS.
	ReleaseStartedAt *time.Time    `json:"release_started_at,omitempty" dynamodbav:"release_started_at,omitempty"`
	Erase            EraseEvidence `json:"erase" dynamodbav:"erase"`
	// MachineDeleted is set once a full decommission deleted the machine
	// from MAAS.
	MachineDeleted bool       `json:"machine_deleted" dynamodbav:"machine_deleted"`
	ExecutionID    string     `json:"execution_id,omitempty" dynamodbav:"execution_id,omitempty"`
	CorrelationID  string     `json:"correlation_id" dynamodbav:"correlation_id"`
	Error          *Failure   `json:"error,omitempty" dynamodbav:"error,omitempty"`
	CreatedBy      string     `json:"created_by" dynamodbav:"created_by"`
	CreatedAt      time.Time  `json:"created_at" dynamodbav:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at" dynamodbav:"updated_at"`
	CompletedAt    *time.Time `json:"completed_at,omitempty" dynamodbav:"completed_at,omitempty"`
	Version        int64      `json:"-" dynamodbav:"version"`
}

// ReleaseStarted reports whether any attempt of the decommission may have
// released (or begun to release) its machine, from the record and its
// whole timeline — never from the current attempt's stage alone, since a
// rerun starts again at the drain and a retry clears the erase's start:
//   - the record's release_started_at or the erase's start;
//   - the record at a stage after the release;
//   - a timeline row of any attempt at a stage after the release, or a row
//     at the release stage that MAAS wrote or that records a MAAS action
//     (source maas), which a release stage only writes once it acted.
func (d Decommission) ReleaseStarted(history []DecommissionEvent) bool {
	if d.ReleaseStartedAt != nil || d.Erase.StartedAt != nil || pastRelease(d.Stage) {
		return true
	}
	for _, r := range history {
		if pastRelease(r.Stage) {
			return true
		}
		if r.Stage == DecomStageRelease && (r.Kind == TimelineMAASEvent || r.Source == timelineSourceMAAS) {
			return true
		}
	}
	return false
}

// timelineSourceMAAS is the source of the rows that record what MAAS did
// or was asked (the activities' "maas").
const timelineSourceMAAS = "maas"

func pastRelease(stage DecommissionStage) bool {
	switch stage {
	case DecomStageFallback, DecomStageDelete, DecomStageReimage, DecomStageFinish:
		return true
	}
	return false
}

// MayReturnToService reports whether a decommission that ends without
// completing (cancelled, failed) may hand its node back the status it had.
// Only when no attempt released the machine (ReleaseStarted) and MAAS
// shows it Deployed now (maasDeployed; false when MAAS could not be read):
// a node in service must run the tenant's OS, never a machine that was
// released, erased or half-erased since. Otherwise the node is retired.
func (d Decommission) MayReturnToService(history []DecommissionEvent, maasDeployed bool) bool {
	return d.NodeStatusBefore != "" && maasDeployed && !d.ReleaseStarted(history)
}

// DecommissionEvent is one row of a decommission's timeline (requirements API boundary §7
// node_decommission_events): a workflow step, a decision or a MAAS event.
type DecommissionEvent struct {
	DecommissionID string            `json:"decommission_id" dynamodbav:"decommission_id"`
	Seq            string            `json:"seq" dynamodbav:"seq"`
	Time           time.Time         `json:"time" dynamodbav:"time"`
	Attempt        int               `json:"attempt" dynamodbav:"attempt"`
	Kind           TimelineKind      `json:"kind" dynamodbav:"kind"`
	Stage          DecommissionStage `json:"stage,omitempty" dynamodbav:"stage,omitempty"`
	Outcome        string            `json:"outcome,omitempty" dynamodbav:"outcome,omitempty"`
	Detail         string            `json:"detail,omitempty" dynamodbav:"detail,omitempty"`
	Source         string            `json:"source,omitempty" dynamodbav:"source,omitempty"`
	MAASEventID    int64             `json:"maas_event_id,omitempty" dynamodbav:"maas_event_id,omitempty"`
}

// NodeDecommissioning marks a node a decommission holds: unschedulable
// until the decommission ends (requirements runbook lifecycle extended by the
// decommission paths).
const NodeDecommissioning = "decommissioning"

// Allocation states (requirements runbook "Create allocation … verify progression").
const (
	AllocationRequested     = "requested"
	AllocationProvisioning  = "provisioning"
	AllocationActive        = "active"
	AllocationReleasing     = "releasing"
	AllocationReleased      = "released"
	AllocationReleaseFailed = "release_failed"
)

// AllocationStates lists the allocation states.
func AllocationStates() []string {
	return []string{AllocationRequested, AllocationProvisioning, AllocationActive,
		AllocationReleasing, AllocationReleased, AllocationReleaseFailed}
}

// Allocation is a tenant's hold on a node, owned by Provisioning.Allocation
// (requirements API boundary §3); maasflow reads and force-releases it, nothing more.
type Allocation struct {
	ID        string    `json:"allocation_id"`
	NodeID    string    `json:"node_id"`
	State     string    `json:"state"`
	UpdatedAt time.Time `json:"updated_at"`
}

// HoldsNode reports whether an allocation in state s still binds its node
// (anything but released).
func HoldsNode(s string) bool { return s != AllocationReleased }

// BlocksRetire reports whether an allocation in state s forbids retiring
// its node (requirements runbook: active, releasing or release_failed ownership).
func BlocksRetire(s string) bool {
	return s == AllocationActive || s == AllocationReleasing || s == AllocationReleaseFailed
}
