// Package allocation is maasflow's side of Provisioning.Allocation (requirements API boundary
// §3): before a node is reimaged, cleaned or removed, its tenants'
// allocations are listed and force-released. The HTTP adapter speaks to the
// allocation service on AWS (contract: openapi.yaml in this directory);
// Local is the simulated service `maasflow local` serves, with its control
// API for tests and demos.
package allocation
