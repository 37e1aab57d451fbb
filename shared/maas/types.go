package maas

import (
	"time"

	"github.com/maasflow/maasflow/shared/domain"
)

// Status is MAAS's numeric node status (maas-behaviour §4).
type Status int

// MAAS node statuses.
const (
	StatusNew                      Status = 0
	StatusCommissioning            Status = 1
	StatusFailedCommissioning      Status = 2
	StatusMissing                  Status = 3
	StatusReady                    Status = 4
	StatusReserved                 Status = 5
	StatusDeployed                 Status = 6
	StatusRetired                  Status = 7
	StatusBroken                   Status = 8
	StatusDeploying                Status = 9
	StatusAllocated                Status = 10
	StatusFailedDeployment         Status = 11
	StatusReleasing                Status = 12
	StatusFailedReleasing          Status = 13
	StatusDiskErasing              Status = 14
	StatusFailedDiskErasing        Status = 15
	StatusRescueMode               Status = 16
	StatusEnteringRescueMode       Status = 17
	StatusFailedEnteringRescueMode Status = 18
	StatusExitingRescueMode        Status = 19
	StatusFailedExitingRescueMode  Status = 20
	StatusTesting                  Status = 21
	StatusFailedTesting            Status = 22
)

var statusNames = map[Status]string{
	StatusNew: "New", StatusCommissioning: "Commissioning", StatusFailedCommissioning: "Failed commissioning",
	StatusMissing: "Missing", StatusReady: "Ready", StatusReserved: "Reserved", StatusDeployed: "Deployed",
	StatusRetired: "Retired", StatusBroken: "Broken", StatusDeploying: "Deploying", StatusAllocated: "Allocated",
	StatusFailedDeployment: "Failed deployment", StatusReleasing: "Releasing",
	StatusFailedReleasing: "Releasing failed", StatusDiskErasing: "Disk erasing",
	StatusFailedDiskErasing: "Failed disk erasing", StatusRescueMode: "Rescue mode",
	StatusEnteringRescueMode: "Entering rescue mode", StatusFailedEnteringRescueMode: "Failed to enter rescue mode",
	StatusExitingRescueMode: "Exiting rescue mode", StatusFailedExitingRescueMode: "Failed to exit rescue mode",
	StatusTesting: "Testing", StatusFailedTesting: "Failed testing",
}

// String returns MAAS's status_name label (note 13 is "Releasing failed").
func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return "Unknown"
}

// Machine is the part of MAAS's machine object maasflow reads (maas-behaviour §7).
type Machine struct {
	SystemID         string      `json:"system_id"`
	Hostname         string      `json:"hostname"`
	FQDN             string      `json:"fqdn"`
	Status           Status      `json:"status"`
	StatusName       string      `json:"status_name"`
	StatusMessage    string      `json:"status_message"`
	ErrorDescription string      `json:"error_description"`
	Owner            string      `json:"owner"`
	Locked           bool        `json:"locked"`
	PowerType        string      `json:"power_type"`
	PowerState       string      `json:"power_state"`
	Architecture     string      `json:"architecture"`
	OSystem          string      `json:"osystem"`
	DistroSeries     string      `json:"distro_series"`
	HWEKernel        string      `json:"hwe_kernel"`
	CPUCount         int         `json:"cpu_count"`
	Memory           int         `json:"memory"`
	IPAddresses      []string    `json:"ip_addresses"`
	BootInterfaceID  int         `json:"boot_interface_id"`
	Interfaces       []Interface `json:"interfaces"`
	// StatusAction is the action of the latest event (e.g. "modules-final").
	StatusAction string   `json:"status_action,omitempty"`
	Domain       string   `json:"domain,omitempty"`
	Zone         string   `json:"zone,omitempty"`
	Pool         string   `json:"pool,omitempty"`
	TagNames     []string `json:"tag_names,omitempty"`
	// PowerAddress is the BMC address from the power parameters when the
	// listing that produced this value included it; empty otherwise.
	PowerAddress string `json:"power_address,omitempty"`
	// CommissioningStatus is the script status of the current commissioning
	// set (maas-behaviour §7, §12): ScriptStatusPending until the host has
	// booted the ephemeral image and started the scripts; ScriptStatusNone
	// when no commissioning ran (or MAAS did not say).
	CommissioningStatus int `json:"commissioning_status"`
	// BootDiskID is the block device MAAS boots the machine from (its
	// boot_disk: the one set_boot_disk chose, else MAAS's default); 0 when
	// MAAS names none.
	BootDiskID int `json:"boot_disk_id,omitempty"`
}

// Script status codes of a set or a result (maas-behaviour §12).
const (
	// ScriptStatusNone: nothing ran (MAAS reports -1, "Unknown").
	ScriptStatusNone    = -1
	ScriptStatusPending = 0
	ScriptStatusRunning = 1
)

// Interface is a machine network interface (maas-behaviour §9).
type Interface struct {
	ID         int    `json:"id"`
	Name       string `json:"name"`
	Type       string `json:"type"`
	MACAddress string `json:"mac_address"`
	Enabled    bool   `json:"enabled"`
	VLAN       *VLAN  `json:"vlan,omitempty"`
	Links      []Link `json:"links"`
	// Discovered is what commissioning saw the interface take by DHCP
	// (maas-behaviour §9): the subnet MAAS knows the interface is on even
	// when its links name none.
	Discovered []Discovered `json:"discovered,omitempty"`
	// Parents are a bond's members or a VLAN interface's parent, Children
	// the bonds and VLAN interfaces over this one, by name.
	Parents  []string `json:"parents,omitempty"`
	Children []string `json:"children,omitempty"`
}

// Discovered is one address commissioning observed on an interface.
type Discovered struct {
	IPAddress string  `json:"ip_address,omitempty"`
	Subnet    *Subnet `json:"subnet,omitempty"`
}

// VLAN is the part of MAAS's VLAN object PXE preflight needs.
type VLAN struct {
	ID     int    `json:"id"`
	VID    int    `json:"vid"`
	Fabric string `json:"fabric"`
	DHCPOn bool   `json:"dhcp_on"`
	// RelayVLAN is set when DHCP is relayed from another VLAN.
	RelayVLAN *int `json:"relay_vlan,omitempty"`
}

// Link is one interface link (maas-behaviour §9 "Link JSON").
type Link struct {
	ID        int     `json:"id"`
	Mode      string  `json:"mode"` // auto, dhcp, static, link_up
	IPAddress string  `json:"ip_address,omitempty"`
	Subnet    *Subnet `json:"subnet,omitempty"`
}

// Subnet is the part of MAAS's subnet object maasflow checks.
type Subnet struct {
	ID        int    `json:"id"`
	Name      string `json:"name"`
	CIDR      string `json:"cidr"`
	GatewayIP string `json:"gateway_ip"`
	VLAN      *VLAN  `json:"vlan,omitempty"`
	// DNSServers are the subnet's own DNS servers (empty: MAAS's).
	DNSServers []string `json:"dns_servers,omitempty"`
}

// Link modes accepted by LinkSubnet.
const (
	LinkModeAuto   = "AUTO"
	LinkModeDHCP   = "DHCP"
	LinkModeStatic = "STATIC"
	LinkModeLinkUp = "LINK_UP"
)

// MachineCreateParams creates a machine with IPMI power (maas-behaviour §6).
// Architecture is sent whenever set: with power_type=ipmi and no
// architecture MAAS discards the MACs (maas-behaviour §14.9).
type MachineCreateParams struct {
	Hostname      string
	Architecture  string
	MACAddresses  []string
	Domain        string
	PowerType     string // "ipmi" when empty
	PowerAddress  string
	PowerUser     string
	PowerPass     Secret
	PowerDriver   string // LAN_2_0 when empty
	Commission    bool
	Commissioning CommissionParams
}

// CommissionParams are the commissioning flags (maas-behaviour §8).
type CommissionParams struct {
	EnableSSH            bool
	SkipBMCConfig        bool
	SkipNetworking       bool
	SkipStorage          bool
	CommissioningScripts []string // sent as one comma-separated value
	TestingScripts       []string // sent as one comma-separated value; "none" disables
}

// MachineDeployParams are the deploy parameters (maas-behaviour §8). UserData is
// the raw cloud-init payload; the client base64-encodes it.
type MachineDeployParams struct {
	UserData     Secret
	DistroSeries string
	HWEKernel    string
	EnableHWSync bool
	Comment      string
}

// MachineReleaseParams are the release parameters (maas-behaviour §8). Force never
// bypasses a state check in MAAS.
type MachineReleaseParams struct {
	Erase       bool
	SecureErase bool
	QuickErase  bool
	Force       bool
	Comment     string
}

// StorageLayoutParams sets the storage layout (READY only; maas-behaviour §8).
type StorageLayoutParams struct {
	Layout   string
	BootSize string
	RootSize string
}

// LinkSubnetParams links an interface to a subnet (maas-behaviour §9).
type LinkSubnetParams struct {
	Mode           string
	SubnetID       int
	IPAddress      string
	DefaultGateway bool
	Force          bool
}

// Event is a MAAS event (maas-behaviour §11).
type Event struct {
	ID          int64     `json:"id"`
	Node        string    `json:"node"`
	Hostname    string    `json:"hostname"`
	Level       string    `json:"level"`
	Created     time.Time `json:"created"`
	Type        string    `json:"type"`
	Description string    `json:"description"`
}

// EventQuery filters MAAS events (maas-behaviour §11). Level defaults to INFO in
// MAAS; Limit to 100 (max 1000).
type EventQuery struct {
	SystemID string
	// Hostname filters by hostname; with SystemID both must match.
	Hostname string
	Level    string
	Limit    int
	After    int64
}

// ScriptType selects a script-result set (maas-behaviour §12).
type ScriptType string

// Script-result set types.
const (
	ScriptsCommissioning ScriptType = "commissioning"
	ScriptsTesting       ScriptType = "testing"
	ScriptsInstallation  ScriptType = "installation"
)

// ScriptResult is one script's result with its decoded output.
type ScriptResult struct {
	ID         int    `json:"id"`
	Name       string `json:"name"`
	Status     int    `json:"status"`
	StatusName string `json:"status_name"`
	ExitStatus *int   `json:"exit_status,omitempty"`
	// Output is the decoded combined output. Binary outputs (the
	// /tmp/curtin-logs.tar result, maas-behaviour §12) are left out and Binary is
	// set, so that no undecodable bytes reach timelines.
	Output string `json:"output,omitempty"`
	Binary bool   `json:"binary,omitempty"`
}

// ScriptSet is a set of results of one type (maas-behaviour §12).
type ScriptSet struct {
	ID         int            `json:"id"`
	Type       ScriptType     `json:"type"`
	StatusName string         `json:"status_name"`
	Results    []ScriptResult `json:"results"`
}

// ProbeResult is what a probe learnt of a region (maas-behaviour §13).
type ProbeResult struct {
	Version      string   `json:"version"`
	Subversion   string   `json:"subversion,omitempty"`
	Capabilities []string `json:"capabilities"`
	Username     string   `json:"username"`
	IsAdmin      bool     `json:"is_admin"`
	// MissingScripts are the scripts the site's profiles name that the
	// region lacks (CheckScripts); a probe that found any is unhealthy.
	MissingScripts []string `json:"missing_scripts,omitempty"`
}

// Secret is a string that never prints (see domain.Secret).
type Secret = domain.Secret

// Event levels accepted by EventQuery.Level (maas-behaviour §11). MAAS returns the
// given level and above; AUDIT returns audit events only. User requests
// ("User starting deployment") are DEBUG.
const (
	EventLevelAudit    = "AUDIT"
	EventLevelDebug    = "DEBUG"
	EventLevelInfo     = "INFO"
	EventLevelWarning  = "WARNING"
	EventLevelError    = "ERROR"
	EventLevelCritical = "CRITICAL"
)
