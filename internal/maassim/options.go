package maassim

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/maasflow/maasflow/shared/clock"
)

// Options configure a Simulator. The zero value is usable: a generated API
// key, the wall clock, default phase durations, seed 0 and no global faults.
type Options struct {
	// APIKey is the MAAS API key "consumer:token:secret" the simulator
	// accepts; empty generates one (APIKey returns it).
	APIKey string
	// UserAPIKey is the key of a second MAAS user, "user", who is not an
	// administrator (is_superuser false, maas-behaviour §13): it can read,
	// create machines (which stay New) and allocate, deploy and release
	// machines it may edit, and gets MAAS's empty 403 on every admin
	// operation. Empty generates one (UserAPIKey returns it).
	UserAPIKey string
	// Clock drives every phase; nil means the wall clock.
	Clock clock.Clock
	// Durations are the simulated phase lengths; zero fields take defaults.
	Durations Durations
	// Seed seeds system ids, generated hostnames, BMC passwords written by
	// commissioning and the global fault rolls: same seed, same ids.
	Seed int64
	// ErrorRate is the fraction of MAAS API calls answered 503 before they
	// reach a handler; SlowRate the fraction delayed by SlowDelay (on Clock).
	ErrorRate float64
	SlowRate  float64
	SlowDelay time.Duration
	// HTTPClient calls the enrollment URL when the simulator plays a node;
	// nil uses a client with a 30-second timeout.
	HTTPClient *http.Client
	// Logger receives the simulator's own log lines; nil discards them.
	Logger *slog.Logger
	// ClockSkew is how far the region's wall clock is off: every timestamp
	// MAAS writes (event created, script set and result times) is shifted
	// by it, as on a region whose NTP is broken, while phases still run on
	// Clock. Event ids are unaffected, so "events after id N" stays exact
	// (maas-behaviour §11). Positive: MAAS is ahead of the control plane.
	ClockSkew time.Duration
	// SecondSubnet adds 10.21.0.0/24 (id 2, gateway 10.21.0.1) to the PXE
	// VLAN next to 10.20.0.0/24, so an interface on that VLAN has two
	// subnets to choose from: with pxe_link_up_only and pxe_not_discovered
	// nothing MAAS knows says which one the boot interface belongs to.
	// Commissioning still links and discovers on 10.20.0.0/24.
	SecondSubnet bool
	// SubnetCIDR is the one IPv4 subnet machines deploy on, a /24 or wider;
	// empty means DefaultSubnetCIDR (about 200 deployed machines).
	SubnetCIDR string
	// TaggedVLANs add tagged VLANs to the fabric, each with one subnet,
	// for VLAN interfaces (create_vlan) to join (network_vlans.go).
	TaggedVLANs []TaggedVLAN
	// MissingScripts is the missing_script fault: the region lacks these
	// scripts (built-in or a site's, scripts.go), so the scripts list
	// omits them and a commission naming one is refused.
	MissingScripts []string
}

// Durations are the simulated lengths of MAAS's asynchronous phases. A zero
// field takes its default from DefaultDurations.
type Durations struct {
	// Commissioning runs the commissioning scripts (default 2m).
	Commissioning time.Duration
	// Testing runs the tests that follow commissioning (default 1m).
	Testing time.Duration
	// Deploying goes from power-on to the installed OS fetching its
	// user-data, which is when MAAS marks the machine Deployed (default 8m).
	Deploying time.Duration
	// Releasing is the wait for the power-off that completes a release
	// (default 30s).
	Releasing time.Duration
	// DiskErasing runs wipe-disks in the ephemeral environment (default 3m).
	DiskErasing time.Duration
	// NodeTimeout is MAAS's node_timeout: a deployment whose OS never reaches
	// the metadata service, or a commissioning whose host never boots, fails
	// this long after it started (default 30m).
	NodeTimeout time.Duration
	// PowerOffTimeout is how long Releasing waits for power-off before
	// "Releasing failed" (MAAS hard-codes 5m).
	PowerOffTimeout time.Duration
	// RescueMode is the time to enter or exit rescue mode (default 1m).
	RescueMode time.Duration
}

// DefaultDurations returns the phase lengths used for zero fields.
func DefaultDurations() Durations {
	return Durations{
		Commissioning:   2 * time.Minute,
		Testing:         time.Minute,
		Deploying:       8 * time.Minute,
		Releasing:       30 * time.Second,
		DiskErasing:     3 * time.Minute,
		NodeTimeout:     30 * time.Minute,
		PowerOffTimeout: 5 * time.Minute,
		RescueMode:      time.Minute,
	}
}

func (d Durations) withDefaults() Durations {
	def := DefaultDurations()
	pick := func(v, dv time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return dv
	}
	return Durations{
		Commissioning:   pick(d.Commissioning, def.Commissioning),
		Testing:         pick(d.Testing, def.Testing),
		Deploying:       pick(d.Deploying, def.Deploying),
		Releasing:       pick(d.Releasing, def.Releasing),
		DiskErasing:     pick(d.DiskErasing, def.DiskErasing),
		NodeTimeout:     pick(d.NodeTimeout, def.NodeTimeout),
		PowerOffTimeout: pick(d.PowerOffTimeout, def.PowerOffTimeout),
		RescueMode:      pick(d.RescueMode, def.RescueMode),
	}
}

// Faults are per-host failure knobs, set when the host is added. Counts are
// consumed one per attempt: CommissionFailures=2 fails the first two
// commissionings and lets the third pass.
type Faults struct {
	// CommissionFailures fails this many commissionings (Failed commissioning).
	CommissionFailures int `json:"commission_failures"`
	// TestingFailures fails this many post-commissioning test runs (Failed
	// testing).
	TestingFailures int `json:"testing_failures,omitempty"`
	// DeployDatasourceFailures makes this many deployments install fine but
	// boot an OS whose cloud-init cannot reach the MAAS metadata service: the
	// machine stays Deploying until NodeTimeout, then Failed deployment.
	DeployDatasourceFailures int `json:"deploy_datasource_failures"`
	// DeployOtherFailures fails this many deployments in curtin (Failed
	// deployment, installation log with the curtin error). They are consumed
	// before datasource failures.
	DeployOtherFailures int `json:"deploy_other_failures"`
	// EraseFailures fails this many disk erasures (Failed disk erasing).
	EraseFailures int `json:"erase_failures"`
	// EraseHangs makes this many disk erasures hang in Disk erasing until
	// they are aborted (release_scripts.go).
	EraseHangs int `json:"erase_hangs,omitempty"`
	// PXEUnlinked leaves the PXE interface disconnected after commissioning
	// (no VLAN, no links), so deploy answers 400 until it is linked.
	PXEUnlinked bool `json:"pxe_unlinked"`
	// PXELinkUpOnly leaves the PXE interface on its VLAN but with only a
	// LINK_UP link (no subnet) after commissioning, while its discovered
	// field still lists the DHCP address and subnet commissioning saw, as
	// seen on real regions (maas-behaviour §9). Deploy answers 400 until the
	// interface is linked to a subnet.
	PXELinkUpOnly bool `json:"pxe_link_up_only"`
	// PXENotDiscovered makes commissioning see no DHCP lease on the PXE
	// interface: its discovered field is null. With PXELinkUpOnly the only
	// way to a subnet is the interface's VLAN.
	PXENotDiscovered bool `json:"pxe_not_discovered"`
	// NoBootUntilPowerCycle hangs the host on the first power-on after a
	// machine is created for it (stuck in firmware, no PXE request). The
	// commissioning MAAS started waits without progress until node_timeout
	// (Failed commissioning), unless the host is power-cycled: a power_off
	// followed by power_on, or a new start while it is on, which MAAS
	// performs as a cycle (maas-behaviour §5). Consumed by that first
	// power-on.
	NoBootUntilPowerCycle bool `json:"no_boot_until_power_cycle"`
	// NeverBoots: the host gets power but never PXE-boots for commissioning,
	// however often it is cycled (firmware boot order set to disk only, a
	// dead boot NIC). MAAS shows Commissioning with its scripts pending and
	// no further event until node_timeout fails it (maas-behaviour §4, §5).
	NeverBoots bool `json:"never_boots"`
	// PowerFails makes every power action on the BMC fail.
	PowerFails bool `json:"power_fails"`
	// NeverEnrolls keeps the deployed node from calling the enrollment URL.
	NeverEnrolls bool `json:"never_enrolls"`
	// ExpiredCert keeps the node down after it enrolls until its
	// certificate has expired: the agent then starts with an expired
	// certificate and recovers with its recovery token. Consumed once.
	ExpiredCert bool `json:"expired_cert,omitempty"`
	// ReplaysRecoveryToken: after the agent's next recovery, a copy of the
	// node's disk from before it presents the spent recovery token again,
	// which the API must refuse. Consumed once.
	ReplaysRecoveryToken bool `json:"replays_recovery_token,omitempty"`
	// MissingGPUs: commissioning sees this many fewer GPUs than the host
	// has (a GPU fallen off the bus): the last ones are absent from the
	// node devices.
	MissingGPUs int `json:"missing_gpus,omitempty"`
	// OtherGPUModel makes commissioning see every GPU as this model
	// (a key of the GPU model table, e.g. "a100-sxm4" or "h100-pcie"): the
	// host was built with another part than it was sold with.
	OtherGPUModel string `json:"other_gpu_model,omitempty"`
	// MissingNICs: the last this-many extra NICs are absent (no interface,
	// no node device). The PXE NIC is never missing.
	MissingNICs int `json:"missing_nics,omitempty"`
	// SlowLinkMbps makes the host's last NIC negotiate this link speed
	// (Mbit/s) below its 100000 interface speed.
	SlowLinkMbps int `json:"slow_link_mbps,omitempty"`
	// MissingDisks: the last this-many disks are absent (no block device,
	// no node device).
	MissingDisks int `json:"missing_disks,omitempty"`
	// FailingScript names a commissioning or testing script that fails
	// (exit status 1, its output in the script results) whenever it runs on
	// the host: the commissioning (Failed commissioning) or testing (Failed
	// testing) it belongs to fails. Not consumed.
	FailingScript string `json:"failing_script,omitempty"`
}

// Disk is a physical disk of a host.
type Disk struct {
	Name      string `json:"name"`
	SizeBytes int64  `json:"size_bytes"`
	Model     string `json:"model,omitempty"`
	Serial    string `json:"serial,omitempty"`
	// Bus is nvme (the default), sata or sas: an NVMe disk is a PCIe
	// device of its own, SATA and SAS disks sit behind one AHCI
	// controller or SAS HBA (disk_bus.go).
	Bus string `json:"bus,omitempty"`
}

// Hardware is a physical host as it exists before and apart from MAAS: its
// BMC, its NICs and disks, and its faults. It is the body of
// POST /_sim/hardware; BMCIP and PXEMAC are required, the rest defaults to a
// 64-core, 512 GiB amd64 server with one NVMe disk.
type Hardware struct {
	BMCIP    string `json:"bmc_ip"`
	PXEMAC   string `json:"pxe_mac"`
	Hostname string `json:"hostname,omitempty"`
	// ExtraMACs are further NICs; commissioning brings them up LINK_UP.
	ExtraMACs    []string `json:"extra_macs,omitempty"`
	Architecture string   `json:"architecture,omitempty"`
	CPUCount     int      `json:"cpu_count,omitempty"`
	MemoryMiB    int      `json:"memory_mib,omitempty"`
	Disks        []Disk   `json:"disks,omitempty"`
	// GPUs is the host's GPU count (default 8) and GPUModel their model,
	// a key of the GPU model table (default "h100-sxm5": NVIDIA 10de:2330
	// "GH100 [H100 SXM5 80GB]"); also "h100-pcie" and "a100-sxm4".
	GPUs     int    `json:"gpus,omitempty"`
	GPUModel string `json:"gpu_model,omitempty"`
	// BMCUsername and BMCPassword, when set, are the only IPMI credentials
	// the host's BMC accepts (bmc.go): a machine whose power parameters
	// carry others cannot be powered, as when a host's BMC user differs
	// from the site's.
	BMCUsername string `json:"bmc_username,omitempty"`
	BMCPassword string `json:"bmc_password,omitempty"`
	Faults      Faults `json:"faults"`
}

// MachineSeed is a machine record MAAS already has, the body of
// POST /_sim/machines. Status is a MAAS status constant name in lower case,
// as the status= filter takes it ("new", "ready", "allocated", "deployed",
// "failed_deployment", "broken", …; empty means "new"); transitional
// statuses such as "deploying" start that phase now. The record is linked to
// the Hardware with BMCIP, which is created (without faults) when missing.
// Two seeds with one hostname or one BMC address make an ambiguity on
// purpose: MAAS's own create path would refuse the duplicate hostname.
type MachineSeed struct {
	Hostname string `json:"hostname"`
	BMCIP    string `json:"bmc_ip"`
	PXEMAC   string `json:"pxe_mac"`
	Status   string `json:"status"`
	// Owner is the owning username for owned statuses (default "admin",
	// the API key's user); another name models a machine someone else holds.
	Owner string `json:"owner,omitempty"`
}

// Call is one line of CallStats: MAAS API calls for one method, path
// template and op.
type Call struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Op     string `json:"op"`
	Count  int    `json:"count"`
}

// CallStats counts the MAAS API calls the simulator answered (including
// refused ones), by method, path template and op, sorted by path, method, op.
type CallStats struct {
	Total int    `json:"total"`
	Calls []Call `json:"calls"`
}
