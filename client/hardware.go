package client

// HardwareMismatch is one line of a failed hardware verification's
// designed-vs-built diff: the SKU constraint, what it asks for and what
// MAAS commissioned.
type HardwareMismatch struct {
	Field string `json:"field"`
	Want  string `json:"want"`
	Got   string `json:"got"`
}

// AsBuilt is what a node's last passed hardware verification found in MAAS.
type AsBuilt struct {
	Region    string      `json:"region"`
	MemoryMiB int         `json:"memory_mib"`
	CPUCores  int         `json:"cpu_cores"`
	GPUs      []BuiltGPU  `json:"gpus"`
	NICs      []BuiltNIC  `json:"nics"`
	Disks     []BuiltDisk `json:"disks"`
}

// BuiltGPU is one GPU by PCI address and NUMA node.
type BuiltGPU struct {
	PCIAddress  string `json:"pci_address"`
	NUMANode    int    `json:"numa_node"`
	VendorID    string `json:"vendor_id"`
	ProductID   string `json:"product_id"`
	ProductName string `json:"product_name"`
}

// BuiltNIC is one NIC: PCI address → MAC → interface name.
type BuiltNIC struct {
	PCIAddress    string `json:"pci_address"`
	Name          string `json:"name"`
	MACAddress    string `json:"mac_address"`
	LinkSpeedMbps int    `json:"link_speed_mbps"`
}

// BuiltDisk is one physical disk.
type BuiltDisk struct {
	PCIAddress string `json:"pci_address,omitempty"`
	Name       string `json:"name"`
	Model      string `json:"model"`
	Serial     string `json:"serial"`
	SizeBytes  int64  `json:"size_bytes"`
}
