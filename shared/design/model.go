// Package design holds the fleet's design as data: host profiles that
// inherit from a parent, hardware profiles (device aliases by PCI address and
// a boot-disk selector), networks, network links (bonds) and node
// assignments. It composes several documents into one design, validates the
// whole design before anything acts on it, resolves every node's effective
// (inherited) values with where each came from, and plans the change from a
// stored design to a new one. It is pure: no I/O.
package design

// Document is one source of design objects, e.g. a site-wide base or one
// rack's file. Name identifies it in errors and provenance; the caller sets
// it (the file name, or "documents[i]").
type Document struct {
	Name             string            `json:"name"`
	HostProfiles     []HostProfile     `json:"host_profiles,omitempty"`
	HardwareProfiles []HardwareProfile `json:"hardware_profiles,omitempty"`
	Networks         []Network         `json:"networks,omitempty"`
	NetworkLinks     []NetworkLink     `json:"network_links,omitempty"`
	Nodes            []NodeAssignment  `json:"nodes,omitempty"`
}

// HostProfile is the general description of a kind of host. A profile with
// a Parent inherits every value it does not set (merge.go states the rules).
type HostProfile struct {
	Name   string `json:"name"`
	Parent string `json:"parent,omitempty"`
	// Override lets this definition replace one of the same name in a
	// document of lower precedence (compose.go).
	Override        bool   `json:"override,omitempty"`
	HardwareProfile string `json:"hardware_profile,omitempty"`
	Architecture    string `json:"architecture,omitempty"`
	DistroSeries    string `json:"distro_series,omitempty"`
	// RootSizeGB is the root filesystem's size on the boot disk; 0 inherits.
	RootSizeGB int `json:"root_size_gb,omitempty"`
	// Interfaces is a keyed list (by name): a child's entry merges into the
	// parent's entry of the same name, it is never appended beside it.
	Interfaces []InterfaceSpec `json:"interfaces,omitempty"`
	// Labels merge by key; a child's value wins.
	Labels map[string]string `json:"labels,omitempty"`
}

// InterfaceSpec is one of a host's interfaces: a network link (a bond or a
// single NIC) attached to networks.
type InterfaceSpec struct {
	Name string `json:"name"`
	// Link names a NetworkLink; "" inherits the parent's.
	Link string `json:"link,omitempty"`
	// Networks is a plain list: a child that sets it replaces the parent's.
	Networks []string `json:"networks,omitempty"`
}

// HardwareProfile names a machine's devices by PCI address, which does not
// change across kernels and boots as interface names do, and says which
// disk is the boot disk.
type HardwareProfile struct {
	Name          string        `json:"name"`
	Override      bool          `json:"override,omitempty"`
	DeviceAliases []DeviceAlias `json:"device_aliases,omitempty"`
	BootDisk      *BootDisk     `json:"boot_disk,omitempty"`
}

// DeviceAlias is a stable name for the device at a PCI address, e.g.
// rail0 = 0000:1a:00.0.
type DeviceAlias struct {
	Alias      string `json:"alias"`
	PCIAddress string `json:"pci_address"`
}

// BootDisk selects the boot disk among MAAS's block devices; every field
// set must match. SizeGB is the smallest size accepted.
type BootDisk struct {
	Model  string `json:"model,omitempty"`
	Serial string `json:"serial,omitempty"`
	SizeGB int    `json:"size_gb,omitempty"`
	Path   string `json:"path,omitempty"`
}

// Network is an L3 network (a MAAS subnet) and its VLAN.
type Network struct {
	Name       string   `json:"name"`
	Override   bool     `json:"override,omitempty"`
	CIDR       string   `json:"cidr"`
	VLAN       int      `json:"vlan,omitempty"`
	MTU        int      `json:"mtu,omitempty"`
	Gateway    string   `json:"gateway,omitempty"`
	DNSServers []string `json:"dns_servers,omitempty"`
	Routes     []Route  `json:"routes,omitempty"`
}

// Route is a static route on a network.
type Route struct {
	Destination string `json:"destination"`
	Gateway     string `json:"gateway"`
}

// NetworkLink is a single NIC or a bond of NICs, its members named by
// device alias.
type NetworkLink struct {
	Name     string `json:"name"`
	Override bool   `json:"override,omitempty"`
	// BondMode is a MAAS bond mode (balance-rr, active-backup, balance-xor,
	// broadcast, 802.3ad, balance-tlb, balance-alb); "" for a single NIC.
	BondMode string   `json:"bond_mode,omitempty"`
	Members  []string `json:"members"`
	MTU      int      `json:"mtu,omitempty"`
}

// NodeAssignment ties the design to one host: its name, BMC, profile and
// addresses.
type NodeAssignment struct {
	Hostname    string            `json:"hostname"`
	Override    bool              `json:"override,omitempty"`
	BMCAddress  string            `json:"bmc_address"`
	HostProfile string            `json:"host_profile"`
	Rack        string            `json:"rack,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Addresses   []Address         `json:"addresses,omitempty"`
	RoCERails   []RoCERail        `json:"roce_rails,omitempty"`
}

// Address is a static address on one of the host's interfaces (by its
// name or a device alias) in one network.
type Address struct {
	Interface string `json:"interface"`
	Network   string `json:"network"`
	Address   string `json:"address"`
}

// RoCERail is a RoCE rail's address on a NIC named by device alias or
// interface name.
type RoCERail struct {
	Interface string `json:"interface"`
	IPv4CIDR  string `json:"ipv4_cidr"`
}
