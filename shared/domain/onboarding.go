package domain

import "time"

// OnboardingStatus is where an onboarding stands as a whole.
type OnboardingStatus string

// Onboarding statuses (issue contract). Open statuses hold the host lock: at
// most one open onboarding per (site, hostname).
const (
	OnboardingPending            OnboardingStatus = "pending"
	OnboardingRunning            OnboardingStatus = "running"
	OnboardingCompleted          OnboardingStatus = "completed"
	OnboardingFailed             OnboardingStatus = "failed"
	OnboardingManualIntervention OnboardingStatus = "manual_intervention"
	OnboardingCancelled          OnboardingStatus = "cancelled"
)

// IsOpenStatus reports whether an onboarding in status s still owns its host.
// manual_intervention is open: the machine is frozen mid-flight and a second
// onboarding must not touch it until an operator resolves or cancels it.
func IsOpenStatus[St OnboardingStatus | DecommissionStatus](s St) bool {
	switch string(s) {
	case string(OnboardingPending), string(OnboardingRunning), string(OnboardingManualIntervention):
		return true
	}
	return false
}

// Stage is the step of the workflow an onboarding is in. The order of the
// steps lives only in the state machine (statemachines/onboarding.asl.json);
// the read model records entry, exit and outcome of each on the timeline.
type Stage string

// Onboarding stages.
const (
	// StageQueued: the onboarding waits for a slot of its site's throttle
	// (policy max_concurrent_onboardings) with status pending.
	StageQueued     Stage = "queued"
	StageValidate   Stage = "validate"
	StageDiscover   Stage = "discover"
	StageCommission Stage = "commission"
	StageWaitReady  Stage = "wait_ready"
	// StageVerifyHardware: what MAAS commissioned is checked against the
	// SKU before storage or deploy touch the machine.
	StageVerifyHardware Stage = "verify_hardware"
	// StageConfigureMachine: the site design's boot disk and interfaces
	// are set in MAAS while the machine is Ready.
	StageConfigureMachine Stage = "configure_machine"
	StageStorage          Stage = "storage"
	StagePXEPreflight     Stage = "pxe_preflight"
	StageRoCE             Stage = "roce"
	StageHardening        Stage = "hardening"
	StageRenderPayload    Stage = "render_payload"
	StageDeploy           Stage = "deploy"
	StageWaitDeployed     Stage = "wait_deployed"
	StageRecoverDeploy    Stage = "recover_deploy"
	StageWaitEnrollment   Stage = "wait_enrollment"
	StageCompletionGates  Stage = "completion_gates"
	StageDone             Stage = "done"
	// StageReset is restart-clean's first step: the machine is released
	// (erased per policy) before the new attempt commissions it afresh.
	StageReset Stage = "reset"
	// StageAdopt is adopt's first step: what MAAS and the node show is
	// mapped to the stage the run continues from.
	StageAdopt Stage = "adopt"
)

// Onboarding is the read model of one single-node onboarding (requirements readiness §3.1
// request plus everything the workflow learns).
type Onboarding struct {
	ID        string           `json:"id" dynamodbav:"id"`
	SiteID    string           `json:"site_id" dynamodbav:"site_id"`
	ProfileID string           `json:"profile_id" dynamodbav:"profile_id"`
	SKUID     string           `json:"sku_id" dynamodbav:"sku_id"`
	Hostname  string           `json:"hostname" dynamodbav:"hostname"`
	IPMIIP    string           `json:"ipmi_ip" dynamodbav:"ipmi_ip"`
	NodeID    string           `json:"node_id" dynamodbav:"node_id"`
	Status    OnboardingStatus `json:"status" dynamodbav:"status"`
	Stage     Stage            `json:"stage" dynamodbav:"stage"`
	// Attempt numbers the run (rerun/restart-clean start a new one); token
	// and completion checks compare against it (requirements readiness §8.5).
	Attempt int `json:"attempt" dynamodbav:"attempt"`
	// Run numbers the executions of this attempt: 0 for the first, and one
	// more each time a recovery operation (retry, resume, adopt) starts the
	// same attempt again. It makes each execution's name new (ExecutionName)
	// while a repeated start of the same run keeps its name.
	Run int `json:"run,omitempty" dynamodbav:"run,omitempty"`
	// Checkpoint is the last safe stage boundary this attempt passed
	// (checkpoint.go): where resume continues from. Empty before the first.
	Checkpoint Checkpoint `json:"checkpoint,omitempty" dynamodbav:"checkpoint,omitempty"`
	// DeployAttempts counts deploys inside this run, for the bounded retry.
	DeployAttempts int `json:"deploy_attempts" dynamodbav:"deploy_attempts"`
	// DeployEventsAfter is the newest MAAS event id of the machine just
	// before the current deploy was asked for: the deploy's events are the
	// ones after it. Ids, not times: a region's clock may be off the
	// control plane's (maas-behaviour §11).
	DeployEventsAfter int64      `json:"deploy_events_after,omitempty" dynamodbav:"deploy_events_after,omitempty"`
	MAASSystemID      string     `json:"maas_system_id" dynamodbav:"maas_system_id"`
	ExecutionID       string     `json:"execution_id,omitempty" dynamodbav:"execution_id,omitempty"`
	CorrelationID     string     `json:"correlation_id" dynamodbav:"correlation_id"`
	Error             *Failure   `json:"error,omitempty" dynamodbav:"error,omitempty"`
	CreatedBy         string     `json:"created_by" dynamodbav:"created_by"`
	CreatedAt         time.Time  `json:"created_at" dynamodbav:"created_at"`
	UpdatedAt         time.Time  `json:"updated_at" dynamodbav:"updated_at"`
	CompletedAt       *time.Time `json:"completed_at,omitempty" dynamodbav:"completed_at,omitempty"`
	Version           int64      `json:"-" dynamodbav:"version"`
	// BatchID is the batch that started this onboarding, if any.
	BatchID string `json:"batch_id,omitempty" dynamodbav:"batch_id,omitempty"`

	// EnrollmentTaskToken is the workflow callback token of the enrollment
	// wait (.waitForTaskToken); the enrollment API completes it. It is an
	// internal handle, never shown by the API.
	EnrollmentTaskToken string `json:"-" dynamodbav:"enrollment_task_token,omitempty"`

	// PXEMAC is the boot interface's MAC the workflow observed (PXE
	// preflight); a later attempt's discovery also matches by it (requirements readiness
	// §4.1 step 3).
	PXEMAC string `json:"pxe_mac,omitempty" dynamodbav:"pxe_mac,omitempty"`
	// EnrollmentTokenHash is the hash of the enrollment token the current
	// deploy handed to the node: the completion gates check that this token
	// was consumed, by this attempt (requirements readiness §8.2, §8.5). A hash, never the
	// token; not shown by the API.
	EnrollmentTokenHash string `json:"-" dynamodbav:"enrollment_token_hash,omitempty"`

	// Slot is the onboarding's place in its site's throttle (a slot held,
	// or a place in the queue); the store gives it back in the write that
	// moves the onboarding out of pending/running or to another attempt.
	Slot *SiteSlot `json:"-" dynamodbav:"slot,omitempty"`
	// HardwareDiff is the designed-vs-built diff of the last hardware
	// verification that found the machine does not match its SKU; empty
	// once a verification passes.
	HardwareDiff []Mismatch `json:"hardware_diff,omitempty" dynamodbav:"hardware_diff,omitempty"`
	// RecommissionReady asks the next commissioning step to commission
	// the machine again even when MAAS shows it Ready, because what MAAS
	// recorded of its hardware may be out of date: a reimage (the machine
	// may have changed while deployed) and a retry after a failed hardware
	// verification (the hardware was repaired). Cleared when a hardware
	// verification passes.
	RecommissionReady bool `json:"recommission_ready,omitempty" dynamodbav:"recommission_ready,omitempty"`

	// QueuePosition is the onboarding's place in its site's throttle queue
	// (1 is next), filled in by reads that show it; never stored.
	QueuePosition int `json:"queue_position,omitempty" dynamodbav:"-"`
}

// SiteSlot is what an onboarding holds of its site's throttle for one
// attempt: a slot (Held) or a place in the queue (WaitKey, the sort key
// of its queue row, which orders the queue).
type SiteSlot struct {
	Attempt int    `json:"attempt" dynamodbav:"attempt"`
	Held    bool   `json:"held,omitempty" dynamodbav:"held,omitempty"`
	WaitKey string `json:"wait_key,omitempty" dynamodbav:"wait_key,omitempty"`
}

// Failure is why an onboarding stopped: the workflow error name (the ASL
// error, e.g. AmbiguousMachineMatchError) and a secret-free message.
type Failure struct {
	Code    string `json:"code" dynamodbav:"code"`
	Message string `json:"message" dynamodbav:"message"`
	Stage   Stage  `json:"stage,omitempty" dynamodbav:"stage,omitempty"`
	// Field is the request field a refusal is about (a batch row refused
	// before its onboarding started, e.g. hostname); empty otherwise.
	Field string `json:"field,omitempty" dynamodbav:"field,omitempty"`
}

// TimelineKind says what a timeline entry records.
type TimelineKind string

// Timeline entry kinds.
const (
	TimelineStageEntered TimelineKind = "stage_entered"
	TimelineStageExited  TimelineKind = "stage_exited"
	TimelineMAASEvent    TimelineKind = "maas_event"
	TimelineNote         TimelineKind = "note"
	// TimelineDiagnostic rows carry MAAS-side diagnostics (installation
	// output, script results) captured when a stage fails (requirements readiness §8.3);
	// Source names where the text came from, Detail holds its tail.
	TimelineDiagnostic TimelineKind = "diagnostic"
)

// TimelineEntry is one row of an onboarding's timeline: a workflow step, a
// note, a diagnostic or a copied MAAS event, so they can be read side by
// side (requirements readiness §6, §8.3). "Event" is kept for EventBridge and MAAS events.
type TimelineEntry struct {
	OnboardingID string `json:"onboarding_id" dynamodbav:"onboarding_id"`
	// Seq orders the timeline; the store assigns it from Time plus a
	// per-writer suffix so that concurrent writers never collide.
	Seq     string       `json:"seq" dynamodbav:"seq"`
	Time    time.Time    `json:"time" dynamodbav:"time"`
	Attempt int          `json:"attempt" dynamodbav:"attempt"`
	Kind    TimelineKind `json:"kind" dynamodbav:"kind"`
	Stage   Stage        `json:"stage,omitempty" dynamodbav:"stage,omitempty"`
	// Outcome is set on stage_exited: ok, retry, failed, manual_intervention.
	Outcome string `json:"outcome,omitempty" dynamodbav:"outcome,omitempty"`
	Detail  string `json:"detail,omitempty" dynamodbav:"detail,omitempty"`
	Source  string `json:"source,omitempty" dynamodbav:"source,omitempty"`
	// MAASEventID de-duplicates MAAS events copied onto the timeline.
	MAASEventID int64 `json:"maas_event_id,omitempty" dynamodbav:"maas_event_id,omitempty"`
}

// Node statuses (requirements runbook node lifecycle).
const (
	NodeOnboarding = "onboarding"
	NodeActive     = "active"
	NodeRetired    = "retired"
	NodeRemoved    = "removed"
)

// Node is the inventory record of a GPU server.
type Node struct {
	ID           string     `json:"id" dynamodbav:"id"`
	SiteID       string     `json:"site_id" dynamodbav:"site_id"`
	Hostname     string     `json:"hostname" dynamodbav:"hostname"`
	SKUID        string     `json:"sku_id" dynamodbav:"sku_id"`
	Status       string     `json:"status" dynamodbav:"status"`
	MAASSystemID string     `json:"maas_system_id,omitempty" dynamodbav:"maas_system_id,omitempty"`
	OnboardingID string     `json:"onboarding_id,omitempty" dynamodbav:"onboarding_id,omitempty"`
	EnrolledAt   *time.Time `json:"enrolled_at,omitempty" dynamodbav:"enrolled_at,omitempty"`
	// PXEMAC is the boot MAC an onboarding of the node observed: every
	// later onboarding of the node (rerun, reimage) can find its machine
	// by it when MAAS knows it under another hostname and power address
	// (requirements readiness §4.1 step 3).
	PXEMAC string `json:"pxe_mac,omitempty" dynamodbav:"pxe_mac,omitempty"`
	NodeIdentity
	// AsBuilt is the hardware the node's last passed verification found
	// in MAAS (GPUs with PCI address and NUMA node, NICs by PCI address
	// with MAC and name, disks), and AsBuiltAt when.
	AsBuilt   *AsBuilt   `json:"as_built,omitempty" dynamodbav:"as_built,omitempty"`
	AsBuiltAt *time.Time `json:"as_built_at,omitempty" dynamodbav:"as_built_at,omitempty"`
	CreatedAt time.Time  `json:"created_at" dynamodbav:"created_at"`
	UpdatedAt time.Time  `json:"updated_at" dynamodbav:"updated_at"`
	Version   int64      `json:"-" dynamodbav:"version"`
}

// EnrollmentToken is the stored side of a single-use, node-bound,
// TTL-limited enrollment token (requirements runbook). Only the SHA-256 hash is kept.
type EnrollmentToken struct {
	Hash         string     `json:"hash" dynamodbav:"hash"`
	NodeID       string     `json:"node_id" dynamodbav:"node_id"`
	OnboardingID string     `json:"onboarding_id" dynamodbav:"onboarding_id"`
	Attempt      int        `json:"attempt" dynamodbav:"attempt"`
	ExpiresAt    time.Time  `json:"expires_at" dynamodbav:"expires_at"`
	ConsumedAt   *time.Time `json:"consumed_at,omitempty" dynamodbav:"consumed_at,omitempty"`
	// RevokedAt is set when a newer token for the node superseded this one
	// before it was consumed (requirements runbook §4): it can no
	// longer be consumed.
	RevokedAt *time.Time `json:"revoked_at,omitempty" dynamodbav:"revoked_at,omitempty"`
	CreatedAt time.Time  `json:"created_at" dynamodbav:"created_at"`
	// ForStoppedRun marks a token an operator reissued for a run stopped in
	// manual_intervention or failed, so that a server deployed by hand with
	// maasflow's bootstrap can enroll while no execution runs: it is
	// consumable while its onboarding is stopped or reopened on the same
	// attempt, and its enrollment alone never makes the node active (adopt
	// does, saying why).
	ForStoppedRun bool `json:"for_stopped_run,omitempty" dynamodbav:"for_stopped_run,omitempty"`
}
