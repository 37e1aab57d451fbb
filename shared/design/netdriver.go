package design

import "context"

// NetworkDriver configures what lies outside the machine for its design:
// switch ports, their VLANs, LACP for bonds. It is the port where switch
// configuration plugs in; MAAS configures the machine's side. Configure
// must be safe to repeat.
type NetworkDriver interface {
	Configure(ctx context.Context, e Effective) error
}

// NoopNetworkDriver configures nothing: sites whose switches are set up
// by other means.
type NoopNetworkDriver struct{}

// Configure does nothing and succeeds.
func (NoopNetworkDriver) Configure(context.Context, Effective) error { return nil }

var _ NetworkDriver = NoopNetworkDriver{}
