package maassim

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
)

// Timestamp formats MAAS uses (maas-behaviour §11, §12).
const (
	eventTimeFormat  = "Mon, 02 Jan. 2006 15:04:05"
	resultTimeFormat = "Mon, 02 Jan 2006 15:04:05 -0700"
)

type refJSON struct {
	ID          int    `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	ResourceURI string `json:"resource_uri"`
}

type domainJSON struct {
	ID                  int    `json:"id"`
	Name                string `json:"name"`
	TTL                 *int   `json:"ttl"`
	Authoritative       bool   `json:"authoritative"`
	IsDefault           bool   `json:"is_default"`
	ResourceRecordCount int    `json:"resource_record_count"`
	ResourceURI         string `json:"resource_uri"`
}

var (
	defaultDomain = domainJSON{ID: 0, Name: "maas", Authoritative: true, IsDefault: true, ResourceURI: apiPrefix + "domains/0/"}
	defaultZone   = refJSON{ID: 1, Name: "default", Description: "", ResourceURI: apiPrefix + "zones/default/"}
	defaultPool   = refJSON{ID: 0, Name: "default", Description: "Default pool", ResourceURI: apiPrefix + "resourcepool/0/"}
)

type vlanJSON struct {
	ID            int     `json:"id"`
	Name          string  `json:"name"`
	VID           int     `json:"vid"`
	MTU           int     `json:"mtu"`
	DHCPOn        bool    `json:"dhcp_on"`
	ExternalDHCP  *string `json:"external_dhcp"`
	RelayVLAN     *int    `json:"relay_vlan"`
	PrimaryRack   *string `json:"primary_rack"`
	SecondaryRack *string `json:"secondary_rack"`
	Fabric        string  `json:"fabric"`
	FabricID      int     `json:"fabric_id"`
	Space         string  `json:"space"`
	Description   string  `json:"description"`
	ResourceURI   string  `json:"resource_uri"`
}

func renderVLAN(v *vlan) *vlanJSON {
	if v == nil {
		return nil
	}
	rack := v.rackSID
	return &vlanJSON{
		ID: v.id, Name: v.name, VID: v.vid, MTU: v.mtu, DHCPOn: v.dhcpOn, PrimaryRack: &rack,
		Fabric: v.fabric.name, FabricID: v.fabric.id, Space: "undefined",
		ResourceURI: fmt.Sprintf("%svlans/%d/", apiPrefix, v.id),
	}
}

type subnetJSON struct {
	ID                        int       `json:"id"`
	Name                      string    `json:"name"`
	Description               string    `json:"description"`
	CIDR                      string    `json:"cidr"`
	GatewayIP                 *string   `json:"gateway_ip"`
	DNSServers                []string  `json:"dns_servers"`
	VLAN                      *vlanJSON `json:"vlan"`
	Space                     string    `json:"space"`
	RDNSMode                  int       `json:"rdns_mode"`
	ActiveDiscovery           bool      `json:"active_discovery"`
	AllowDNS                  bool      `json:"allow_dns"`
	AllowProxy                bool      `json:"allow_proxy"`
	Managed                   bool      `json:"managed"`
	DisabledBootArchitectures []string  `json:"disabled_boot_architectures"`
	ResourceURI               string    `json:"resource_uri"`
}

func renderSubnet(sn *subnet) *subnetJSON {
	if sn == nil {
		return nil
	}
	gw := sn.gateway.String()
	return &subnetJSON{
		ID: sn.id, Name: sn.name, CIDR: sn.cidr.String(), GatewayIP: &gw, DNSServers: append([]string{}, sn.dns...),
		VLAN: renderVLAN(sn.vlan), Space: "undefined", RDNSMode: 2, AllowDNS: true, AllowProxy: true,
		Managed: true, DisabledBootArchitectures: []string{},
		ResourceURI: fmt.Sprintf("%ssubnets/%d/", apiPrefix, sn.id),
	}
}

type fabricJSON struct {
	ID          int         `json:"id"`
	Name        string      `json:"name"`
	ClassType   *string     `json:"class_type"`
	VLANs       []*vlanJSON `json:"vlans"`
	ResourceURI string      `json:"resource_uri"`
}

func (s *Simulator) renderFabric() fabricJSON {
	f := s.net.fabric
	vlans := []*vlanJSON{}
	for _, v := range s.net.vlans() {
		vlans = append(vlans, renderVLAN(v))
	}
	return fabricJSON{
		ID: f.id, Name: f.name, VLANs: vlans,
		ResourceURI: fmt.Sprintf("%sfabrics/%d/", apiPrefix, f.id),
	}
}

type linkJSON struct {
	ID        int         `json:"id"`
	Mode      string      `json:"mode"`
	IPAddress string      `json:"ip_address,omitempty"`
	Subnet    *subnetJSON `json:"subnet,omitempty"`
}

// discoveredJSON is one entry of an interface's discovered list.
type discoveredJSON struct {
	IPAddress string      `json:"ip_address"`
	Subnet    *subnetJSON `json:"subnet"`
}

type ifaceJSON struct {
	ID              int              `json:"id"`
	Name            string           `json:"name"`
	Type            string           `json:"type"`
	MACAddress      string           `json:"mac_address"`
	Enabled         bool             `json:"enabled"`
	VLAN            *vlanJSON        `json:"vlan"`
	Links           []linkJSON       `json:"links"`
	Discovered      []discoveredJSON `json:"discovered"`
	Parents         []string         `json:"parents"`
	Children        []string         `json:"children"`
	Tags            []string         `json:"tags"`
	Params          any              `json:"params"`
	EffectiveMTU    int              `json:"effective_mtu"`
	Vendor          string           `json:"vendor"`
	Product         string           `json:"product"`
	FirmwareVersion *string          `json:"firmware_version"`
	LinkConnected   bool             `json:"link_connected"`
	InterfaceSpeed  int              `json:"interface_speed"`
	LinkSpeed       int              `json:"link_speed"`
	NUMANode        int              `json:"numa_node"`
	SRIOVMaxVF      int              `json:"sriov_max_vf"`
	SystemID        string           `json:"system_id"`
	ResourceURI     string           `json:"resource_uri"`
}

func renderIface(m *machine, i *iface) ifaceJSON {
	links := make([]linkJSON, 0, len(i.links))
	for _, l := range i.links {
		links = append(links, linkJSON{ID: l.id, Mode: l.mode, IPAddress: l.ip, Subnet: renderSubnet(l.subnet)})
	}
	var discovered []discoveredJSON
	for _, d := range i.discovered {
		discovered = append(discovered, discoveredJSON{IPAddress: d.ip, Subnet: renderSubnet(d.subnet)})
	}
	fw := "4.40 0x8001b71c 1.3429.0"
	speed := i.linkSpeed
	if speed == 0 {
		speed = defaultLinkSpeed
	}
	j := ifaceJSON{
		ID: i.id, Name: i.name, Type: "physical", MACAddress: i.mac, Enabled: i.enabled,
		VLAN: renderVLAN(i.vlan), Links: links, Discovered: discovered,
		Parents: ifaceNames(i.parents), Children: ifaceNames(m.children(i)), Tags: []string{},
		Params: ifaceParams(i), EffectiveMTU: m.effectiveMTU(i), Vendor: "Intel Corporation", Product: "Ethernet Controller E810-C for QSFP",
		FirmwareVersion: &fw, LinkConnected: true, InterfaceSpeed: defaultLinkSpeed, LinkSpeed: speed,
		SystemID: m.systemID, ResourceURI: fmt.Sprintf("%snodes/%s/interfaces/%d/", apiPrefix, m.systemID, i.id),
	}
	if i.kind != "" {
		// A bond or VLAN interface is no device: no vendor, product or
		// firmware of its own (MS/models/interface.py).
		j.Type, j.Vendor, j.Product, j.FirmwareVersion = i.kind, "", "", nil
	}
	return j
}

type blockDeviceJSON struct {
	ID                 int      `json:"id"`
	Name               string   `json:"name"`
	Type               string   `json:"type"`
	Path               string   `json:"path"`
	IDPath             string   `json:"id_path"`
	Model              string   `json:"model"`
	Serial             string   `json:"serial"`
	Size               int64    `json:"size"`
	BlockSize          int      `json:"block_size"`
	UsedSize           int64    `json:"used_size"`
	AvailableSize      int64    `json:"available_size"`
	UsedFor            string   `json:"used_for"`
	PartitionTableType *string  `json:"partition_table_type"`
	UUID               *string  `json:"uuid"`
	Tags               []string `json:"tags"`
	Filesystem         any      `json:"filesystem"`
	Partitions         []any    `json:"partitions"`
	StoragePool        *string  `json:"storage_pool"`
	FirmwareVersion    *string  `json:"firmware_version"`
	NUMANode           int      `json:"numa_node"`
	SystemID           string   `json:"system_id"`
	ResourceURI        string   `json:"resource_uri"`
}

func renderDisks(m *machine) []blockDeviceJSON {
	out := make([]blockDeviceJSON, 0, len(m.disks))
	boot := m.bootDiskIndex()
	for n, d := range m.disks {
		used := "Unused"
		var ptable *string
		var usedSize int64
		if m.storageLayout != "" && m.storageLayout != "blank" && n == boot {
			gpt := "GPT"
			ptable = &gpt
			used = fmt.Sprintf("GPT partitioned with %s layout", m.storageLayout)
			usedSize = d.SizeBytes
		}
		fw := "GDC7302Q"
		out = append(out, blockDeviceJSON{
			ID: m.diskID(n), Name: d.Name, Type: "physical", Path: "/dev/disk/by-dname/" + d.Name,
			IDPath: diskIDPath(d), Model: d.Model, Serial: d.Serial, Size: d.SizeBytes,
			BlockSize: 512, UsedSize: usedSize, AvailableSize: d.SizeBytes - usedSize, UsedFor: used,
			PartitionTableType: ptable, Tags: diskTags(d), Partitions: []any{}, FirmwareVersion: &fw,
			SystemID: m.systemID, ResourceURI: fmt.Sprintf("%snodes/%s/blockdevices/%d/", apiPrefix, m.systemID, m.diskID(n)),
		})
	}
	return out
}

type gatewayJSON struct {
	GatewayIP *string `json:"gateway_ip"`
	LinkID    *int    `json:"link_id"`
}

type numaJSON struct {
	Index        int   `json:"index"`
	Cores        []int `json:"cores"`
	Memory       int   `json:"memory"`
	HugepagesSet []any `json:"hugepages_set"`
}

// machineJSON is MAAS's machine object (maas-behaviour §7).
type machineJSON struct {
	SystemID                     string                 `json:"system_id"`
	Hostname                     string                 `json:"hostname"`
	Description                  string                 `json:"description"`
	HardwareUUID                 *string                `json:"hardware_uuid"`
	Domain                       domainJSON             `json:"domain"`
	FQDN                         string                 `json:"fqdn"`
	Owner                        *string                `json:"owner"`
	OwnerData                    map[string]string      `json:"owner_data"`
	Locked                       bool                   `json:"locked"`
	CacheSets                    []any                  `json:"cache_sets"`
	BCaches                      []any                  `json:"bcaches"`
	BiosBootMethod               *string                `json:"bios_boot_method"`
	BootInterface                *ifaceJSON             `json:"boot_interface"`
	Architecture                 string                 `json:"architecture"`
	MinHWEKernel                 string                 `json:"min_hwe_kernel"`
	HWEKernel                    *string                `json:"hwe_kernel"`
	CPUCount                     int                    `json:"cpu_count"`
	CPUSpeed                     int                    `json:"cpu_speed"`
	Memory                       int                    `json:"memory"`
	SwapSize                     *int64                 `json:"swap_size"`
	Storage                      float64                `json:"storage"`
	Status                       int                    `json:"status"`
	OSystem                      string                 `json:"osystem"`
	DistroSeries                 string                 `json:"distro_series"`
	Netboot                      bool                   `json:"netboot"`
	PowerType                    string                 `json:"power_type"`
	PowerState                   string                 `json:"power_state"`
	TagNames                     []string               `json:"tag_names"`
	AddressTTL                   *int                   `json:"address_ttl"`
	IPAddresses                  []string               `json:"ip_addresses"`
	InterfaceSet                 []ifaceJSON            `json:"interface_set"`
	Zone                         refJSON                `json:"zone"`
	Pool                         refJSON                `json:"pool"`
	DisableIPv4                  bool                   `json:"disable_ipv4"`
	ConstraintsByType            json.RawMessage        `json:"constraints_by_type,omitempty"`
	BootDisk                     *blockDeviceJSON       `json:"boot_disk"`
	BlockDeviceSet               []blockDeviceJSON      `json:"blockdevice_set"`
	PhysicalBlockDeviceSet       []blockDeviceJSON      `json:"physicalblockdevice_set"`
	VirtualBlockDeviceSet        []any                  `json:"virtualblockdevice_set"`
	VolumeGroups                 []any                  `json:"volume_groups"`
	RAIDs                        []any                  `json:"raids"`
	StatusAction                 *string                `json:"status_action"`
	StatusMessage                *string                `json:"status_message"`
	StatusName                   string                 `json:"status_name"`
	NodeType                     int                    `json:"node_type"`
	NodeTypeName                 string                 `json:"node_type_name"`
	SpecialFilesystems           []any                  `json:"special_filesystems"`
	Pod                          any                    `json:"pod"`
	DefaultGateways              map[string]gatewayJSON `json:"default_gateways"`
	CurrentCommissioningResultID *int                   `json:"current_commissioning_result_id"`
	CurrentTestingResultID       *int                   `json:"current_testing_result_id"`
	CurrentInstallationResultID  *int                   `json:"current_installation_result_id"`
	CommissioningStatus          int                    `json:"commissioning_status"`
	CommissioningStatusName      string                 `json:"commissioning_status_name"`
	TestingStatus                int                    `json:"testing_status"`
	TestingStatusName            string                 `json:"testing_status_name"`
	CPUTestStatus                int                    `json:"cpu_test_status"`
	CPUTestStatusName            string                 `json:"cpu_test_status_name"`
	MemoryTestStatus             int                    `json:"memory_test_status"`
	MemoryTestStatusName         string                 `json:"memory_test_status_name"`
	NetworkTestStatus            int                    `json:"network_test_status"`
	NetworkTestStatusName        string                 `json:"network_test_status_name"`
	StorageTestStatus            int                    `json:"storage_test_status"`
	StorageTestStatusName        string                 `json:"storage_test_status_name"`
	OtherTestStatus              int                    `json:"other_test_status"`
	OtherTestStatusName          string                 `json:"other_test_status_name"`
	InterfaceTestStatus          int                    `json:"interface_test_status"`
	InterfaceTestStatusName      string                 `json:"interface_test_status_name"`
	HardwareInfo                 map[string]string      `json:"hardware_info"`
	NUMANodeSet                  []numaJSON             `json:"numanode_set"`
	VirtualMachineID             *int                   `json:"virtualmachine_id"`
	ErrorDescription             string                 `json:"error_description"`
	EphemeralDeploy              bool                   `json:"ephemeral_deploy"`
	EnableHWSync                 bool                   `json:"enable_hw_sync"`
	EnableKernelCrashDump        bool                   `json:"enable_kernel_crash_dump"`
	IsDPU                        bool                   `json:"is_dpu"`
	WorkloadAnnotations          map[string]string      `json:"workload_annotations"`
	LastSync                     *string                `json:"last_sync"`
	NextSync                     *string                `json:"next_sync"`
	SyncInterval                 *int                   `json:"sync_interval"`
	ResourceURI                  string                 `json:"resource_uri"`
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (s *Simulator) powerState(m *machine) string {
	switch {
	case m.hw == nil:
		return "unknown"
	case m.hw.faults.PowerFails:
		return "error"
	case m.hw.powerOn:
		return "on"
	default:
		return "off"
	}
}

func setID(ss *scriptSet) *int {
	if ss == nil {
		return nil
	}
	id := ss.id
	return &id
}

func setStatusOrUnknown(ss *scriptSet) int {
	if ss == nil {
		return -1
	}
	return ss.status()
}

func (s *Simulator) renderMachine(m *machine) machineJSON {
	ifaces := make([]ifaceJSON, 0, len(m.ifaces))
	ips := []string{}
	var gw map[string]gatewayJSON
	var boot *ifaceJSON
	bi := m.bootIface()
	for _, i := range m.ifaces {
		ifaces = append(ifaces, renderIface(m, i))
		if i == bi {
			boot = &ifaces[len(ifaces)-1]
		}
		for _, l := range i.links {
			if l.ip != "" {
				ips = append(ips, l.ip)
			}
		}
	}
	gw = map[string]gatewayJSON{"ipv4": {}, "ipv6": {}}
	if bi != nil {
		for _, l := range bi.links {
			if l.subnet != nil && l.mode != "link_up" {
				g := l.subnet.gateway.String()
				id := l.id
				gw["ipv4"] = gatewayJSON{GatewayIP: &g, LinkID: &id}
				break
			}
		}
	}
	disks := renderDisks(m)
	var bootDisk *blockDeviceJSON
	var storageMB float64
	for n := range disks {
		storageMB += float64(disks[n].Size) / 1000 / 1000
	}
	if len(disks) > 0 {
		bootDisk = &disks[m.bootDiskIndex()]
	}
	var owner *string
	if m.owner != "" {
		o := m.owner
		owner = &o
	}
	var statusMsg *string
	if e := m.statusEvent; e != nil {
		msg := e.typ
		if e.description != "" {
			msg += " - " + e.description
		}
		statusMsg = &msg
	}
	testing := setStatusOrUnknown(m.currentTesting)
	storageTest := -1
	if m.currentTesting != nil {
		storageTest = testing
	}
	hwInfo := map[string]string{
		"system_vendor": "Unknown", "system_product": "Unknown", "system_family": "Unknown",
		"system_version": "Unknown", "system_sku": "Unknown", "system_serial": "Unknown",
		"cpu_model": "Unknown", "mainboard_vendor": "Unknown", "mainboard_product": "Unknown",
		"mainboard_serial": "Unknown", "mainboard_version": "Unknown", "mainboard_firmware_vendor": "Unknown",
		"mainboard_firmware_date": "Unknown", "mainboard_firmware_version": "Unknown",
		"chassis_vendor": "Unknown", "chassis_type": "Unknown", "chassis_serial": "Unknown", "chassis_version": "Unknown",
	}
	numa := []numaJSON{{Index: 0, Cores: []int{}, Memory: 0, HugepagesSet: []any{}}}
	if m.commissioned && m.hw != nil {
		hwInfo["system_vendor"] = "Supermicro"
		hwInfo["system_product"] = "SYS-821GE-TNHR"
		hwInfo["system_serial"] = "S" + m.hw.spec.PXEMAC
		hwInfo["cpu_model"] = "Intel(R) Xeon(R) Platinum 8480+"
		cores := make([]int, m.cpuCount)
		for n := range cores {
			cores[n] = n
		}
		numa = []numaJSON{{Index: 0, Cores: cores, Memory: m.memory, HugepagesSet: []any{}}}
	}
	boot4 := "uefi"
	return machineJSON{
		SystemID: m.systemID, Hostname: m.hostname, Description: m.description,
		Domain: defaultDomain, FQDN: m.hostname + "." + defaultDomain.Name, Owner: owner,
		OwnerData: map[string]string{}, Locked: m.locked, CacheSets: []any{}, BCaches: []any{},
		BiosBootMethod: &boot4, BootInterface: boot, Architecture: m.architecture, MinHWEKernel: m.minHWEKernel,
		HWEKernel: strPtr(m.hweKernel), CPUCount: m.cpuCount, CPUSpeed: 2000, Memory: m.memory,
		Storage: storageMB, Status: int(m.status), OSystem: m.osystem, DistroSeries: m.distroSeries,
		Netboot: m.netboot, PowerType: m.powerType, PowerState: s.powerState(m), TagNames: []string{},
		IPAddresses: ips, InterfaceSet: ifaces, Zone: defaultZone, Pool: defaultPool,
		BootDisk: bootDisk, BlockDeviceSet: disks, PhysicalBlockDeviceSet: disks,
		VirtualBlockDeviceSet: []any{}, VolumeGroups: []any{}, RAIDs: []any{},
		StatusMessage: statusMsg, StatusName: m.status.name(), NodeType: 0, NodeTypeName: "Machine",
		SpecialFilesystems: []any{}, DefaultGateways: gw,
		CurrentCommissioningResultID: setID(m.currentCommissioning),
		CurrentTestingResultID:       setID(m.currentTesting),
		CurrentInstallationResultID:  setID(m.currentInstallation),
		CommissioningStatus:          setStatusOrUnknown(m.currentCommissioning),
		CommissioningStatusName:      scriptStatusNames[setStatusOrUnknown(m.currentCommissioning)],
		TestingStatus:                testing, TestingStatusName: scriptStatusNames[testing],
		CPUTestStatus: -1, CPUTestStatusName: "Unknown", MemoryTestStatus: -1, MemoryTestStatusName: "Unknown",
		NetworkTestStatus: -1, NetworkTestStatusName: "Unknown",
		StorageTestStatus: storageTest, StorageTestStatusName: scriptStatusNames[storageTest],
		OtherTestStatus: -1, OtherTestStatusName: "Unknown", InterfaceTestStatus: -1, InterfaceTestStatusName: "Unknown",
		HardwareInfo: hwInfo, NUMANodeSet: numa, ErrorDescription: m.errorDescription,
		WorkloadAnnotations: map[string]string{},
		ResourceURI:         fmt.Sprintf("%smachines/%s/", apiPrefix, m.systemID),
	}
}

type eventJSON struct {
	ID          int     `json:"id"`
	Node        *string `json:"node"`
	Hostname    string  `json:"hostname"`
	Username    string  `json:"username"`
	Level       string  `json:"level"`
	Created     string  `json:"created"`
	Type        string  `json:"type"`
	Description string  `json:"description"`
}

// renderEvent renders e; skew is the region clock's offset (Options.ClockSkew).
func renderEvent(e *event, skew time.Duration) eventJSON {
	sid := e.m.systemID
	user := e.username
	if user == "" {
		user = "unknown"
	}
	return eventJSON{
		ID: e.id, Node: &sid, Hostname: e.m.hostname, Username: user, Level: levelNames[e.level],
		Created: e.created.Add(skew).UTC().Format(eventTimeFormat), Type: e.typ, Description: e.description,
	}
}

type scriptResultJSON struct {
	ID               int            `json:"id"`
	Name             string         `json:"name"`
	Created          string         `json:"created"`
	Updated          string         `json:"updated"`
	Status           int            `json:"status"`
	StatusName       string         `json:"status_name"`
	ExitStatus       *int           `json:"exit_status"`
	Started          *string        `json:"started"`
	Ended            *string        `json:"ended"`
	Runtime          string         `json:"runtime"`
	Starttime        any            `json:"starttime"`
	Endtime          any            `json:"endtime"`
	EstimatedRuntime string         `json:"estimated_runtime"`
	Parameters       map[string]any `json:"parameters"`
	ScriptID         int            `json:"script_id"`
	ScriptRevisionID *int           `json:"script_revision_id"`
	HardwareType     int            `json:"hardware_type"`
	Suppressed       bool           `json:"suppressed"`
	Output           *string        `json:"output,omitempty"`
	Stdout           *string        `json:"stdout,omitempty"`
	Stderr           *string        `json:"stderr,omitempty"`
	Result           *string        `json:"result,omitempty"`
}

type scriptSetJSON struct {
	ID          int                `json:"id"`
	SystemID    string             `json:"system_id"`
	Type        int                `json:"type"`
	TypeName    string             `json:"type_name"`
	Status      int                `json:"status"`
	StatusName  string             `json:"status_name"`
	LastPing    *string            `json:"last_ping"`
	Started     *string            `json:"started"`
	Ended       *string            `json:"ended"`
	Runtime     string             `json:"runtime"`
	Results     []scriptResultJSON `json:"results"`
	ResourceURI string             `json:"resource_uri"`
}

func fmtResultTime(t *time.Time, skew time.Duration) *string {
	if t == nil {
		return nil
	}
	v := t.Add(skew).UTC().Format(resultTimeFormat)
	return &v
}

// runtime renders H:MM:SS, or "" when the span is not known (maas-behaviour §14.12).
func runtime(start, end *time.Time) string {
	if start == nil || end == nil {
		return ""
	}
	d := end.Sub(*start).Round(time.Second)
	h := int(d.Hours())
	mnt := int(d.Minutes()) % 60
	sec := int(d.Seconds()) % 60
	return fmt.Sprintf("%d:%02d:%02d", h, mnt, sec)
}

func epochOrEmpty(t *time.Time, skew time.Duration) any {
	if t == nil {
		return ""
	}
	return float64(t.Add(skew).UnixNano()) / 1e9
}

func b64(b []byte) *string {
	v := base64.StdEncoding.EncodeToString(b)
	return &v
}

func renderResult(r *scriptResult, withOutput bool, skew time.Duration) scriptResultJSON {
	j := scriptResultJSON{
		ID: r.id, Name: r.name, Created: r.created.Add(skew).UTC().Format(resultTimeFormat),
		Updated: r.updated.Add(skew).UTC().Format(resultTimeFormat), Status: r.status, StatusName: scriptStatusNames[r.status],
		ExitStatus: r.exitStatus, Started: fmtResultTime(r.started, skew), Ended: fmtResultTime(r.ended, skew),
		Runtime: runtime(r.started, r.ended), Starttime: epochOrEmpty(r.started, skew), Endtime: epochOrEmpty(r.ended, skew),
		EstimatedRuntime: r.estimated, Parameters: map[string]any{}, ScriptID: r.scriptID,
		HardwareType: r.hardwareType,
	}
	if r.scriptID != 0 {
		rev := r.scriptID
		j.ScriptRevisionID = &rev
	}
	if withOutput {
		j.Output = b64(r.output())
		j.Stdout = b64(r.stdout)
		j.Stderr = b64(r.stderr)
		j.Result = b64(r.result)
	}
	return j
}

func renderSet(ss *scriptSet, withOutput bool, names map[string]bool, skew time.Duration) scriptSetJSON {
	results := make([]scriptResultJSON, 0, len(ss.results))
	var started, ended *time.Time
	allEnded := len(ss.results) > 0
	for _, r := range ss.results {
		if r.started != nil && (started == nil || r.started.Before(*started)) {
			started = r.started
		}
		if r.ended == nil {
			allEnded = false
		} else if ended == nil || r.ended.After(*ended) {
			ended = r.ended
		}
		if names != nil && !names[r.name] {
			continue
		}
		results = append(results, renderResult(r, withOutput, skew))
	}
	if !allEnded {
		ended = nil
	}
	st := ss.status()
	var lastPing *string
	if started != nil {
		lastPing = fmtResultTime(started, skew)
		if ended != nil {
			lastPing = fmtResultTime(ended, skew)
		}
	}
	return scriptSetJSON{
		ID: ss.id, SystemID: ss.m.systemID, Type: ss.typ, TypeName: resultTypeNames[ss.typ],
		Status: st, StatusName: scriptStatusNames[st], LastPing: lastPing,
		Started: fmtResultTime(started, skew), Ended: fmtResultTime(ended, skew), Runtime: runtime(started, ended),
		Results: results, ResourceURI: fmt.Sprintf("%snodes/%s/results/%d/", apiPrefix, ss.m.systemID, ss.id),
	}
}
