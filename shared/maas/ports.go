package maas

import "context"

// The ports below are what activities call. Each method's doc says what a
// repeated call does, because Step Functions and Lambda both retry. Every
// method returns one of the typed errors in errors.go (or nil), unwrapped,
// so errors.As and the ASL error names both see the type directly.

// MachineFinder looks machines up. Lookups are reads: repeating one is free.
type MachineFinder interface {
	// FindByHostname lists machines whose hostname equals name (GET
	// machines/?hostname=). More than one is possible: MAAS does not enforce
	// unique hostnames across domains.
	FindByHostname(ctx context.Context, hostname string) ([]Machine, error)
	// FindByPowerAddress lists machines whose BMC power_address equals addr
	// and sets their PowerAddress. MAAS has no such filter: the HTTP client
	// reads machines/?op=power_parameters, which needs an admin key
	// (MAASForbiddenError otherwise).
	FindByPowerAddress(ctx context.Context, addr string) ([]Machine, error)
	// FindByMAC lists machines with an interface of that MAC.
	FindByMAC(ctx context.Context, mac string) ([]Machine, error)
	// Get reads one machine; MAASNotFoundError when MAAS has no such system id.
	Get(ctx context.Context, systemID string) (Machine, error)
}

// MachineLifecycle drives a machine through MAAS's lifecycle (maas-behaviour §5).
type MachineLifecycle interface {
	// Create adds a machine. Not idempotent in MAAS: callers look the
	// machine up by hostname and power address before creating, and a
	// repeat with the same MAC fails with MAASBadRequestError.
	Create(ctx context.Context, p MachineCreateParams) (Machine, error)
	// Commission starts commissioning. From a state MAAS refuses (e.g.
	// already Commissioning) it returns MAASBadRequestError; callers read the
	// status first.
	Commission(ctx context.Context, systemID string, p CommissionParams) (Machine, error)
	// Allocate claims a Ready machine by system id; MAASConflictError (409) when
	// it is not Ready. Already Allocated to the caller: callers skip it.
	Allocate(ctx context.Context, systemID string) (Machine, error)
	// Deploy starts deployment from Ready or Allocated; MAASConflictError from
	// any other state, including Deploying and Deployed.
	Deploy(ctx context.Context, systemID string, p MachineDeployParams) (Machine, error)
	// Abort cancels Commissioning, Deploying, Disk erasing or Testing;
	// MAASConflictError elsewhere. Asynchronous: the reply shows the old status.
	Abort(ctx context.Context, systemID, comment string) (Machine, error)
	// Release releases a machine; from Ready or Releasing it is a no-op.
	Release(ctx context.Context, systemID string, p MachineReleaseParams) (Machine, error)
	// MarkBroken sets Broken; MAASForbiddenError unless the caller owns it.
	MarkBroken(ctx context.Context, systemID, comment string) (Machine, error)
	// MarkFixed moves Broken to Ready (or Deployed); MAASConflictError otherwise.
	MarkFixed(ctx context.Context, systemID, comment string) (Machine, error)
	// Delete removes the machine; MAASNotFoundError when it is already gone.
	Delete(ctx context.Context, systemID string) error
}

// InterfaceManager reads and relinks interfaces (maas-behaviour §9).
type InterfaceManager interface {
	// Interfaces lists the machine's interfaces with their links.
	Interfaces(ctx context.Context, systemID string) ([]Interface, error)
	// LinkSubnet adds a link. Linking AUTO twice makes two links: callers
	// unlink first. MAASConflictError outside New/Ready/Allocated/Broken.
	LinkSubnet(ctx context.Context, systemID string, interfaceID int, p LinkSubnetParams) (Interface, error)
	// UnlinkSubnet removes a link; MAASBadRequestError for an unknown link id,
	// so a repeat after success is a MAASBadRequestError: read Links first.
	UnlinkSubnet(ctx context.Context, systemID string, interfaceID, linkID int) (Interface, error)
}

// SubnetLister lists the region's subnets (maas-behaviour §10), so that a caller
// can find the subnet of an interface that has no link yet.
type SubnetLister interface {
	// Subnets lists every subnet the region knows, ordered by id. A read:
	// repeating it is free.
	Subnets(ctx context.Context) ([]Subnet, error)
}

// StorageManager sets a machine's storage layout.
type StorageManager interface {
	// SetStorageLayout applies a layout; repeating it re-applies the same
	// layout. MAASConflictError unless the machine is Ready.
	SetStorageLayout(ctx context.Context, systemID string, p StorageLayoutParams) error
}

// PowerController drives the BMC through MAAS.
type PowerController interface {
	// PowerOn is a no-op on a machine already on; MAASConflictError when the
	// machine has no owner.
	PowerOn(ctx context.Context, systemID string) error
	// PowerOff is a no-op on a machine already off.
	PowerOff(ctx context.Context, systemID string) error
	// PowerState queries the BMC live ("on", "off", "unknown", "error"); it
	// can take about a minute. A read.
	PowerState(ctx context.Context, systemID string) (string, error)
}

// Diagnostics reads what MAAS recorded about a machine (maas-behaviour §11, §12).
type Diagnostics interface {
	// Events lists a machine's events newest first, by system id and/or
	// hostname (one is required). A read.
	Events(ctx context.Context, q EventQuery) ([]Event, error)
	// ScriptResults reads the current set of one type with decoded output;
	// MAASNotFoundError when the machine has no current set of that type. A read.
	ScriptResults(ctx context.Context, systemID string, t ScriptType) (ScriptSet, error)
}

// Prober checks a region's reachability, version and the key's identity.
type Prober interface {
	// Probe calls version/ and users/?op=whoami. Read-only.
	Probe(ctx context.Context) (ProbeResult, error)
}
