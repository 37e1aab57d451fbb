package domain

import (
	"slices"
	"time"
)

// Status of a site, profile or SKU record that operators can disable.
const (
	StatusActive   = "active"
	StatusDisabled = "disabled"
)

// Site is one MAAS region maasflow drives. Its Policy is the default every
// profile under it inherits (requirements API boundary §4.2, requirements design notes "profile inheritance").
// Credentials never live on the record: CredentialsSet only says they were
// written through the secrets port.
type Site struct {
	ID          string `json:"id" dynamodbav:"id"`
	Name        string `json:"name" dynamodbav:"name"`
	MAASURL     string `json:"maas_url" dynamodbav:"maas_url"`
	Description string `json:"description,omitempty" dynamodbav:"description,omitempty"`
	// Region is the region the site is in (e.g. us-east-1); an SKU with a
	// region onboards only at a site of that region.
	Region         string       `json:"region,omitempty" dynamodbav:"region,omitempty"`
	Status         string       `json:"status" dynamodbav:"status"`
	Policy         Policy       `json:"policy" dynamodbav:"policy"`
	CredentialsSet bool         `json:"credentials_set" dynamodbav:"credentials_set"`
	Probe          *ProbeResult `json:"probe,omitempty" dynamodbav:"probe,omitempty"`
	CreatedAt      time.Time    `json:"created_at" dynamodbav:"created_at"`
	UpdatedAt      time.Time    `json:"updated_at" dynamodbav:"updated_at"`
	// Version is the optimistic-concurrency counter; every write bumps it.
	Version int64 `json:"-" dynamodbav:"version"`

	// Connectivity is how maasflow reaches the site's MAAS:
	// ConnectivityVPC or ConnectivityConnector (empty reads as VPC).
	Connectivity string `json:"connectivity" dynamodbav:"connectivity,omitempty"`
	// AllowHTTP lets a VPC site's MAAS URL be plain http, which the AWS
	// deployment accepts only for a private address.
	AllowHTTP bool `json:"allow_http" dynamodbav:"allow_http,omitempty"`
}

// Site connectivity (docs/decisions.md, "Site connector").
const (
	// ConnectivityVPC: the functions reach MAAS over the network they run
	// in (the MAAS VPC, Direct Connect or VPN; locally, the host's network).
	ConnectivityVPC = "vpc"
	// ConnectivityConnector: MAAS calls go through `maasflow connector`
	// at the site, which may hold the MAAS API key itself.
	ConnectivityConnector = "connector"
)

// ThroughConnector reports whether the site is reached through its connector.
func (s Site) ThroughConnector() bool { return s.Connectivity == ConnectivityConnector }

// ConnectorStatus is a connector site's connector as the probe saw it.
type ConnectorStatus struct {
	Online        bool      `json:"online" dynamodbav:"online"`
	Version       string    `json:"version,omitempty" dynamodbav:"version,omitempty"`
	Hostname      string    `json:"hostname,omitempty" dynamodbav:"hostname,omitempty"`
	LastHeartbeat time.Time `json:"last_heartbeat,omitzero" dynamodbav:"last_heartbeat,omitempty"`
	StartedAt     time.Time `json:"started_at,omitzero" dynamodbav:"started_at,omitempty"`
	MAASReachable bool      `json:"maas_reachable" dynamodbav:"maas_reachable"`
}

// ProbeResult is what the last site probe saw (requirements API boundary §4.1 probe).
type ProbeResult struct {
	Healthy      bool      `json:"healthy" dynamodbav:"healthy"`
	Version      string    `json:"version,omitempty" dynamodbav:"version,omitempty"`
	Capabilities []string  `json:"capabilities,omitempty" dynamodbav:"capabilities,omitempty"`
	User         string    `json:"user,omitempty" dynamodbav:"user,omitempty"`
	IsAdmin      bool      `json:"is_admin" dynamodbav:"is_admin"`
	Error        string    `json:"error,omitempty" dynamodbav:"error,omitempty"`
	CheckedAt    time.Time `json:"checked_at" dynamodbav:"checked_at"`
	// MissingScripts are the scripts the site's profiles name that the
	// region does not have (an unhealthy probe).
	MissingScripts []string `json:"missing_scripts,omitempty" dynamodbav:"missing_scripts,omitempty"`

	// Connector is set for connector sites: its heartbeat and version.
	Connector *ConnectorStatus `json:"connector,omitempty" dynamodbav:"connector,omitempty"`
}

// Profile is an operational policy bundle under a site. It owns the runtime
// target (architecture, distro series, kernel) and may override any of the
// site's policy fields; unset fields inherit.
type Profile struct {
	ID           string    `json:"id" dynamodbav:"id"`
	SiteID       string    `json:"site_id" dynamodbav:"site_id"`
	Name         string    `json:"name" dynamodbav:"name"`
	Architecture string    `json:"architecture" dynamodbav:"architecture"`
	DistroSeries string    `json:"distro_series" dynamodbav:"distro_series"`
	HWEKernel    string    `json:"hwe_kernel,omitempty" dynamodbav:"hwe_kernel,omitempty"`
	Status       string    `json:"status" dynamodbav:"status"`
	Policy       Policy    `json:"policy" dynamodbav:"policy"`
	CreatedAt    time.Time `json:"created_at" dynamodbav:"created_at"`
	UpdatedAt    time.Time `json:"updated_at" dynamodbav:"updated_at"`
	Version      int64     `json:"-" dynamodbav:"version"`

	// ProfileScripts are the MAAS scripts commissioning runs, by name.
	ProfileScripts
}

// ProfileScripts name the MAAS scripts a profile's machines run (names or
// tags of scripts the site's MAAS already has; no API takes a script's
// content): commissioning scripts run after MAAS's built-in ones (firmware
// update, RAID configuration, hardware manifest), testing scripts replace
// MAAS's default tests (GPU burn-in). "none" in TestingScripts runs no
// tests.
type ProfileScripts struct {
	CommissioningScripts []string `json:"commissioning_scripts,omitempty" dynamodbav:"commissioning_scripts,omitempty"`
	TestingScripts       []string `json:"testing_scripts,omitempty" dynamodbav:"testing_scripts,omitempty"`
}

// Names are every script name the profile depends on, commissioning
// first, without "none": what the site probe checks MAAS has.
func (p ProfileScripts) Names() []string {
	var out []string
	for _, n := range append(append([]string{}, p.CommissioningScripts...), p.TestingScripts...) {
		if n != "none" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// SKU is a catalog entry a node must reference (requirements runbook "SKU catalog
// governance"): free-text SKUs are not accepted.
type SKU struct {
	ID          string `json:"id" dynamodbav:"id"`
	GPUModel    string `json:"gpu_model" dynamodbav:"gpu_model"`
	GPUsTotal   int    `json:"gpus_total" dynamodbav:"gpus_total"`
	Description string `json:"description,omitempty" dynamodbav:"description,omitempty"`
	// SKUHardware holds the constraints beyond the GPU model and count
	// (Compare checks a machine against them).
	SKUHardware
	Active bool `json:"active" dynamodbav:"active"`
	// Proposal is the pending change of Active a second admin must
	// approve; LastDecision the last one approved or rejected.
	Proposal     *SKUProposal `json:"proposal,omitempty" dynamodbav:"proposal,omitempty"`
	LastDecision *SKUDecision `json:"last_decision,omitempty" dynamodbav:"last_decision,omitempty"`
	CreatedAt    time.Time    `json:"created_at" dynamodbav:"created_at"`
	UpdatedAt    time.Time    `json:"updated_at" dynamodbav:"updated_at"`
	Version      int64        `json:"-" dynamodbav:"version"`
}

// RoCEAssignment is one site-scoped RoCE phase-2 row keyed by site and
// hostname (requirements readiness §3.3, requirements API boundary §4.2). A host usually has several.
type RoCEAssignment struct {
	ID        string    `json:"id" dynamodbav:"id"`
	SiteID    string    `json:"site_id" dynamodbav:"site_id"`
	Hostname  string    `json:"hostname" dynamodbav:"hostname"`
	Interface string    `json:"interface" dynamodbav:"interface"`
	IPv4CIDR  string    `json:"ipv4_cidr" dynamodbav:"ipv4_cidr"`
	UpdatedAt time.Time `json:"updated_at" dynamodbav:"updated_at"`
	// Source says who owns the row (RoCESourceDesign or RoCESourceDirect).
	// It is not stored: the store sets it as it reads, because a designed
	// host's rows are read from the site's design.
	Source string `json:"source" dynamodbav:"-"`
}

// Owners of a RoCE row.
const (
	// RoCESourceDesign: the row is one of a node's roce_rails in the site's
	// applied design; it changes only through the design.
	RoCESourceDesign = "design"
	// RoCESourceDirect: the row was written through the RoCE rows API for a
	// host the site's design does not name.
	RoCESourceDirect = "direct"
)

// AuditEntry records one privileged mutation (requirements runbook "audit and security
// controls"): who did what to which target, and how it ended.
type AuditEntry struct {
	ID            string    `json:"id" dynamodbav:"id"`
	Time          time.Time `json:"time" dynamodbav:"time"`
	Actor         string    `json:"actor" dynamodbav:"actor"`
	Action        string    `json:"action" dynamodbav:"action"`
	Target        string    `json:"target" dynamodbav:"target"`
	Result        string    `json:"result" dynamodbav:"result"`
	CorrelationID string    `json:"correlation_id" dynamodbav:"correlation_id"`
}
