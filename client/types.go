package client

import (
	"encoding/json"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
)

// The wire types below follow shared/api/openapi.yaml's schemas of the same
// names. Policy, the probe result and the erase evidence are the domain's
// own types, which the API serialises as they are.
type (
	// Policy is a site's or profile's own policy: unset members inherit.
	Policy = domain.Policy
	// EffectivePolicy is a policy with every member resolved.
	EffectivePolicy = domain.EffectivePolicy
	// ProbeResult is the outcome of the last MAAS probe of a site.
	ProbeResult = domain.ProbeResult
	// EraseEvidence is what a decommission observed of the disk erase.
	EraseEvidence = domain.EraseEvidence
	// Failure is the error of a run: code, message and stage.
	Failure = domain.Failure
	// Status is an onboarding's (and a decommission's) status.
	Status = domain.OnboardingStatus
	// Operation is a recovery operation (retry, resume, …).
	Operation = domain.RecoveryOperation
)

// Site is a MAAS site.
type Site struct {
	ID              string          `json:"id"`
	Name            string          `json:"name"`
	MAASURL         string          `json:"maas_url"`
	Description     string          `json:"description,omitempty"`
	Status          string          `json:"status"`
	Policy          Policy          `json:"policy"`
	EffectivePolicy EffectivePolicy `json:"effective_policy"`
	CredentialsSet  bool            `json:"credentials_set"`
	Connectivity    string          `json:"connectivity,omitempty"`
	AllowHTTP       bool            `json:"allow_http,omitempty"`
	Region          string          `json:"region,omitempty"`
	Probe           *ProbeResult    `json:"probe,omitempty"`
	CreatedAt       time.Time       `json:"created_at"`
	UpdatedAt       time.Time       `json:"updated_at"`
}

// SiteCreate is the body of CreateSite.
type SiteCreate struct {
	Name         string  `json:"name"`
	MAASURL      string  `json:"maas_url"`
	Description  string  `json:"description,omitempty"`
	Policy       *Policy `json:"policy,omitempty"`
	Connectivity string  `json:"connectivity,omitempty"`
	AllowHTTP    bool    `json:"allow_http,omitempty"`
	Region       string  `json:"region,omitempty"`
}

// SitePatch is the body of UpdateSite: nil members stay as they are;
// Policy is a JSON merge patch (null clears a member).
type SitePatch struct {
	Name         *string         `json:"name,omitempty"`
	MAASURL      *string         `json:"maas_url,omitempty"`
	Description  *string         `json:"description,omitempty"`
	Status       *string         `json:"status,omitempty"`
	Policy       json.RawMessage `json:"policy,omitempty"`
	Connectivity *string         `json:"connectivity,omitempty"`
	AllowHTTP    *bool           `json:"allow_http,omitempty"`
	Region       *string         `json:"region,omitempty"`
}

// Credentials are a site's MAAS API key and BMC credentials (write only).
type Credentials struct {
	MAASAPIKey  string `json:"maas_api_key,omitempty"`
	BMCUsername string `json:"bmc_username"`
	BMCPassword string `json:"bmc_password"`
}

// ProbeAnswer is a probe's result for the site it probed.
type ProbeAnswer struct {
	ProbeResult
	SiteID string `json:"site_id"`
}

// Profile is a site's deployment profile.
type Profile struct {
	ID              string          `json:"id"`
	SiteID          string          `json:"site_id"`
	Name            string          `json:"name"`
	Architecture    string          `json:"architecture"`
	DistroSeries    string          `json:"distro_series"`
	HWEKernel       string          `json:"hwe_kernel,omitempty"`
	Status          string          `json:"status"`
	Policy          Policy          `json:"policy"`
	EffectivePolicy EffectivePolicy `json:"effective_policy"`
	CreatedAt       time.Time       `json:"created_at"`
	UpdatedAt       time.Time       `json:"updated_at"`
}

// ProfileCreate is the body of CreateProfile.
type ProfileCreate struct {
	Name         string  `json:"name"`
	Architecture string  `json:"architecture"`
	DistroSeries string  `json:"distro_series"`
	HWEKernel    string  `json:"hwe_kernel,omitempty"`
	Policy       *Policy `json:"policy,omitempty"`
}

// ProfilePatch is the body of UpdateProfile (see SitePatch).
type ProfilePatch struct {
	Name         *string         `json:"name,omitempty"`
	Architecture *string         `json:"architecture,omitempty"`
	DistroSeries *string         `json:"distro_series,omitempty"`
	HWEKernel    *string         `json:"hwe_kernel,omitempty"`
	Status       *string         `json:"status,omitempty"`
	Policy       json.RawMessage `json:"policy,omitempty"`
}

// RoCEAssignmentInput is one interface address to assign.
type RoCEAssignmentInput struct {
	Hostname  string `json:"hostname"`
	Interface string `json:"interface"`
	IPv4CIDR  string `json:"ipv4_cidr"`
}

// RoCEAssignment is a stored interface address.
type RoCEAssignment struct {
	ID        string    `json:"id"`
	SiteID    string    `json:"site_id"`
	Hostname  string    `json:"hostname"`
	Interface string    `json:"interface"`
	IPv4CIDR  string    `json:"ipv4_cidr"`
	UpdatedAt time.Time `json:"updated_at"`
	// Source is "design" for a row that is one of a node's roce_rails in
	// the site's applied design (changed only through the design), and
	// "direct" for a row written through the RoCE API.
	Source string `json:"source"`
}

// SKU is a hardware SKU.
type SKU struct {
	ID          string `json:"id"`
	GPUModel    string `json:"gpu_model"`
	GPUsTotal   int    `json:"gpus_total"`
	Description string `json:"description,omitempty"`
	Active      bool   `json:"active"`
	// Proposal is a pending change of Active a second admin approves.
	Proposal     *SKUProposal `json:"proposal,omitempty"`
	LastDecision *SKUDecision `json:"last_decision,omitempty"`
	CreatedAt    time.Time    `json:"created_at"`
	UpdatedAt    time.Time    `json:"updated_at"`
}

// SKUCreate is the body of CreateSKU; Active nil means true.
type SKUCreate struct {
	ID          string `json:"id"`
	GPUModel    string `json:"gpu_model"`
	GPUsTotal   int    `json:"gpus_total"`
	Description string `json:"description,omitempty"`
	Active      *bool  `json:"active,omitempty"`
}

// SKUPatch is the body of UpdateSKU.
type SKUPatch struct {
	Description *string `json:"description,omitempty"`
	// Active is proposed, not applied: a second admin approves it.
	Active *bool `json:"active,omitempty"`
	// Reason and RollbackNote go with the proposal; the note is required
	// to deactivate an SKU nodes in service use.
	Reason       *string `json:"reason,omitempty"`
	RollbackNote *string `json:"rollback_note,omitempty"`
}

// OnboardingCreate is the body of CreateOnboarding.
type OnboardingCreate struct {
	SiteID    string `json:"site_id"`
	ProfileID string `json:"profile_id"`
	SKUID     string `json:"sku_id"`
	Hostname  string `json:"hostname"`
	IPMIIP    string `json:"ipmi_ip"`
}

// Onboarding is one onboarding run of a host.
type Onboarding struct {
	ID     string `json:"id"`
	SiteID string `json:"site_id"`
	// SiteName and ProfileName name SiteID and ProfileID (empty from a
	// server that does not name them).
	SiteName       string   `json:"site_name,omitempty"`
	ProfileID      string   `json:"profile_id"`
	ProfileName    string   `json:"profile_name,omitempty"`
	SKUID          string   `json:"sku_id"`
	Hostname       string   `json:"hostname"`
	IPMIIP         string   `json:"ipmi_ip"`
	NodeID         string   `json:"node_id"`
	Status         Status   `json:"status"`
	Stage          string   `json:"stage"`
	Attempt        int      `json:"attempt"`
	Run            int      `json:"run,omitempty"`
	Checkpoint     string   `json:"checkpoint,omitempty"`
	QueuePosition  int      `json:"queue_position,omitempty"`
	DeployAttempts int      `json:"deploy_attempts"`
	MAASSystemID   string   `json:"maas_system_id"`
	ExecutionID    string   `json:"execution_id,omitempty"`
	CorrelationID  string   `json:"correlation_id"`
	BatchID        string   `json:"batch_id,omitempty"`
	Error          *Failure `json:"error,omitempty"`
	// HardwareDiff is set while the run is stopped at verify_hardware.
	HardwareDiff []HardwareMismatch `json:"hardware_diff,omitempty"`
	CreatedBy    string             `json:"created_by"`
	CreatedAt    time.Time          `json:"created_at"`
	UpdatedAt    time.Time          `json:"updated_at"`
	CompletedAt  *time.Time         `json:"completed_at,omitempty"`
}

// TimelineEntry is one row of a run's timeline.
type TimelineEntry struct {
	Time        time.Time `json:"time"`
	Attempt     int       `json:"attempt"`
	Kind        string    `json:"kind"`
	Stage       string    `json:"stage,omitempty"`
	Outcome     string    `json:"outcome,omitempty"`
	Detail      string    `json:"detail,omitempty"`
	Source      string    `json:"source,omitempty"`
	MAASEventID int64     `json:"maas_event_id,omitempty"`
}

// ScriptResult is the output of one MAAS commissioning or testing script.
type ScriptResult struct {
	Name    string    `json:"name"`
	Stage   string    `json:"stage,omitempty"`
	Attempt int       `json:"attempt"`
	Time    time.Time `json:"time"`
	Output  string    `json:"output"`
}

// Diagnostics are what MAAS said about an onboarding.
type Diagnostics struct {
	MAASEvents         []TimelineEntry `json:"maas_events"`
	InstallationOutput string          `json:"installation_output"`
	ScriptResults      []ScriptResult  `json:"script_results"`
}

// OnboardingDetail is an onboarding with its timeline, diagnostics and the
// recovery operations it accepts now.
type OnboardingDetail struct {
	Onboarding
	AllowedOperations []Operation     `json:"allowed_operations"`
	Timeline          []TimelineEntry `json:"timeline"`
	Diagnostics       Diagnostics     `json:"diagnostics"`
}

// Reason is the optional body of cancel and the recovery operations.
type Reason struct {
	Reason string `json:"reason,omitempty"`
}

// BatchCreate is the body of CreateBatch.
type BatchCreate struct {
	SiteID    string      `json:"site_id"`
	ProfileID string      `json:"profile_id"`
	SKUID     string      `json:"sku_id"`
	Nodes     []BatchNode `json:"nodes"`
}

// BatchNode is one host of a batch.
type BatchNode struct {
	Hostname string `json:"hostname"`
	IPMIIP   string `json:"ipmi_ip"`
}

// Batch is a batch of onboardings and how far each row got.
type Batch struct {
	ID          string         `json:"id"`
	SiteID      string         `json:"site_id"`
	SiteName    string         `json:"site_name,omitempty"`
	ProfileID   string         `json:"profile_id"`
	SKUID       string         `json:"sku_id"`
	Status      string         `json:"status"`
	ProfileName string         `json:"profile_name,omitempty"`
	Counts      map[string]int `json:"counts"`
	Items       []BatchItem    `json:"items"`
	CreatedBy   string         `json:"created_by"`
	CreatedAt   time.Time      `json:"created_at"`
	UpdatedAt   time.Time      `json:"updated_at"`
}

// BatchItem is one row of a batch.
type BatchItem struct {
	Hostname     string   `json:"hostname"`
	IPMIIP       string   `json:"ipmi_ip"`
	OnboardingID string   `json:"onboarding_id"`
	Status       string   `json:"status"`
	Stage        string   `json:"stage,omitempty"`
	Attempt      int      `json:"attempt,omitempty"`
	Error        *Failure `json:"error,omitempty"`
}

// Batch statuses.
const (
	BatchRunning            = "running"
	BatchManualIntervention = "manual_intervention"
	BatchCompleted          = "completed"
	BatchFailed             = "failed"
)

// AuditEntry is one audited admin action.
type AuditEntry struct {
	ID            string    `json:"id"`
	Time          time.Time `json:"time"`
	Actor         string    `json:"actor"`
	Action        string    `json:"action"`
	Target        string    `json:"target"`
	Result        string    `json:"result"`
	CorrelationID string    `json:"correlation_id"`
}

// DriftItem is a difference reconciliation found between the records and
// MAAS or the workflow engine.
type DriftItem = domain.DriftItem

// DriftResolve is the body of ResolveDrift.
type DriftResolve struct {
	Kind   string `json:"kind"`
	Action string `json:"action"`
	Reason string `json:"reason"`
}

// ReconcileRun is one reconcile run.
type ReconcileRun = domain.ReconcileRun

// ReconcileRunAnswer is the run RunReconciliation started or joined.
type ReconcileRunAnswer struct {
	ReconcileRun
	Joined bool `json:"joined"`
}

// ReconcileStatus is the current and last reconcile run.
type ReconcileStatus struct {
	Current       *ReconcileRun `json:"current,omitempty"`
	Last          *ReconcileRun `json:"last,omitempty"`
	NextScheduled *time.Time    `json:"next_scheduled,omitempty"`
	Interval      string        `json:"interval,omitempty"`
}

// Node is a node identity.
type Node struct {
	ID           string     `json:"id"`
	SiteID       string     `json:"site_id"`
	SiteName     string     `json:"site_name,omitempty"`
	Hostname     string     `json:"hostname"`
	SKUID        string     `json:"sku_id"`
	Status       string     `json:"status"`
	MAASSystemID string     `json:"maas_system_id,omitempty"`
	OnboardingID string     `json:"onboarding_id,omitempty"`
	EnrolledAt   *time.Time `json:"enrolled_at,omitempty"`
	// AsBuilt is the hardware its last passed verification found.
	AsBuilt   *AsBuilt   `json:"as_built,omitempty"`
	AsBuiltAt *time.Time `json:"as_built_at,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
}

// WorkflowRef names a node's last onboarding or decommission.
type WorkflowRef struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Stage  string `json:"stage"`
	Mode   string `json:"mode,omitempty"`
}

// Allocation is a tenant allocation bound to a node.
type Allocation struct {
	AllocationID string    `json:"allocation_id"`
	NodeID       string    `json:"node_id"`
	State        string    `json:"state"`
	UpdatedAt    time.Time `json:"updated_at,omitzero"`
}

// NodeDetail is a node with its last workflows and allocations.
type NodeDetail struct {
	Node
	LastOnboarding   *WorkflowRef `json:"last_onboarding,omitempty"`
	LastDecommission *WorkflowRef `json:"last_decommission,omitempty"`
	Allocations      []Allocation `json:"allocations"`
}

// ReissuedBundle is a node's new bootstrap bundle; it carries an
// enrollment token in clear, this once. The bundle is kept exactly as the
// API sent it, to be handed to the node: its members are not all strings
// (GPUAAS_TASK_SIGNING_PUBKEYS is a list).
type ReissuedBundle struct {
	NodeID          string          `json:"node_id"`
	ExpiresAt       time.Time       `json:"expires_at"`
	BootstrapBundle json.RawMessage `json:"bootstrap_bundle"`
}

// Decommission modes.
const (
	ModeReimage        = "reimage"
	ModeFull           = "full"
	ModeStorageCleanup = "storage_cleanup"
)

// DecommissionCreate is the body of DecommissionNode.
type DecommissionCreate struct {
	Mode   string `json:"mode"`
	Reason string `json:"reason,omitempty"`
}

// Decommission is one decommission (reimage, full or storage clean-up).
type Decommission struct {
	ID               string        `json:"id"`
	NodeID           string        `json:"node_id"`
	SiteID           string        `json:"site_id"`
	SiteName         string        `json:"site_name,omitempty"`
	Hostname         string        `json:"hostname"`
	Mode             string        `json:"mode"`
	Reason           string        `json:"reason,omitempty"`
	Status           Status        `json:"status"`
	Stage            string        `json:"stage"`
	Attempt          int           `json:"attempt"`
	Run              int           `json:"run,omitempty"`
	MAASSystemID     string        `json:"maas_system_id"`
	OnboardingID     string        `json:"onboarding_id,omitempty"`
	NodeStatusBefore string        `json:"node_status_before,omitempty"`
	Erase            EraseEvidence `json:"erase"`
	MachineDeleted   bool          `json:"machine_deleted"`
	ExecutionID      string        `json:"execution_id,omitempty"`
	CorrelationID    string        `json:"correlation_id"`
	Error            *Failure      `json:"error,omitempty"`
	CreatedBy        string        `json:"created_by"`
	CreatedAt        time.Time     `json:"created_at"`
	UpdatedAt        time.Time     `json:"updated_at"`
	CompletedAt      *time.Time    `json:"completed_at,omitempty"`
}

// DecommissionDetail is a decommission with its timeline and the recovery
// operations it accepts now.
type DecommissionDetail struct {
	Decommission
	Timeline          []TimelineEntry `json:"timeline,omitempty"`
	AllowedOperations []Operation     `json:"allowed_operations"`
}

// Terminal reports whether an onboarding or decommission in status s is
// over: it changes again only through a recovery operation.
func Terminal(s Status) bool {
	switch s {
	case domain.OnboardingCompleted, domain.OnboardingFailed, domain.OnboardingCancelled, domain.OnboardingManualIntervention:
		return true
	}
	return false
}

// DryRunPlan is what a destructive request would do, answered by a dry run
// (PlanDecommission, PlanRemoveNode, PlanDisableSite) that wrote nothing.
type DryRunPlan struct {
	DryRun          bool         `json:"dry_run"`
	Action          string       `json:"action"`
	Summary         string       `json:"summary"`
	Site            *PlanSite    `json:"site,omitempty"`
	Node            *PlanNode    `json:"node,omitempty"`
	Machine         *PlanMachine `json:"machine,omitempty"`
	Allocations     []Allocation `json:"allocations"`
	EraseMode       string       `json:"erase_mode,omitempty"`
	ReleaseFallback *bool        `json:"release_fallback,omitempty"`
	RevokesTokens   bool         `json:"revokes_tokens,omitempty"`
}

// PlanSite is a site a dry run would change.
type PlanSite struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Status      string `json:"status"`
	StatusAfter string `json:"status_after"`
}

// PlanNode is a node a dry run would change.
type PlanNode struct {
	ID          string `json:"id"`
	Hostname    string `json:"hostname"`
	Status      string `json:"status"`
	StatusAfter string `json:"status_after"`
}

// PlanMachine is what a dry run would do to the MAAS machine.
type PlanMachine struct {
	SystemID string `json:"system_id"`
	Release  bool   `json:"release"`
	Delete   bool   `json:"delete"`
}
