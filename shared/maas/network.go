package maas

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// wireInterfaces is GET nodes/{id}/interfaces/ as MAAS answers it.
func (c *Client) wireInterfaces(ctx context.Context, systemID string) ([]wireInterface, error) {
	const op = "list interfaces"
	if err := requireArg(op, systemID, "system_id", systemID); err != nil {
		return nil, err
	}
	var ws []wireInterface
	if err := c.doJSON(ctx, request{
		op: op, systemID: systemID, method: http.MethodGet, path: nodePath(systemID) + "interfaces/",
	}, &ws); err != nil {
		return nil, err
	}
	return ws, nil
}

// Interfaces lists the machine's interfaces with their links (GET
// nodes/{id}/interfaces/, maas-behaviour §9). A read.
func (c *Client) Interfaces(ctx context.Context, systemID string) ([]Interface, error) {
	ws, err := c.wireInterfaces(ctx, systemID)
	if err != nil {
		return nil, err
	}
	out := make([]Interface, len(ws))
	for i, w := range ws {
		out[i] = w.iface()
	}
	return out, nil
}

// LinkSubnet links an interface to a subnet (POST
// nodes/{id}/interfaces/{iface}/?op=link_subnet, maas-behaviour §9). Mode is AUTO,
// DHCP, STATIC (with IPAddress, or MAAS picks one) or LINK_UP; subnet is
// sent when set. Not idempotent: linking AUTO twice makes two links, so
// callers check Links and unlink first. MAASConflictError outside
// New/Ready/Allocated/Broken/Failed testing.
func (c *Client) LinkSubnet(ctx context.Context, systemID string, interfaceID int, p LinkSubnetParams) (Interface, error) {
	const op = "link_subnet"
	if err := requireArg(op, systemID, "mode", p.Mode); err != nil {
		return Interface{}, err
	}
	form := url.Values{"mode": {strings.ToUpper(p.Mode)}}
	if p.SubnetID > 0 {
		form.Set("subnet", strconv.Itoa(p.SubnetID))
	}
	setIf(form, "ip_address", p.IPAddress)
	if p.DefaultGateway {
		form.Set("default_gateway", "true")
	}
	if p.Force {
		form.Set("force", "true")
	}
	return c.interfaceOp(ctx, op, systemID, interfaceID, form)
}

// UnlinkSubnet removes link linkID from an interface (POST
// op=unlink_subnet id=<link id>; the URL id is the interface, maas-behaviour §9).
// A link already gone is a MAASBadRequestError ("'<v>' is not a valid id"),
// which a repeating caller reads from Links rather than retries.
func (c *Client) UnlinkSubnet(ctx context.Context, systemID string, interfaceID, linkID int) (Interface, error) {
	return c.interfaceOp(ctx, "unlink_subnet", systemID, interfaceID, url.Values{"id": {strconv.Itoa(linkID)}})
}

func (c *Client) interfaceOp(ctx context.Context, maasOp, systemID string, interfaceID int, form url.Values) (Interface, error) {
	if err := requireArg(maasOp, systemID, "system_id", systemID); err != nil {
		return Interface{}, err
	}
	var w wireInterface
	if err := c.doJSON(ctx, request{
		op: maasOp, systemID: systemID, method: http.MethodPost,
		path:   nodePath(systemID) + "interfaces/" + strconv.Itoa(interfaceID) + "/",
		maasOp: maasOp, form: form,
	}, &w); err != nil {
		return Interface{}, err
	}
	return w.iface(), nil
}

// SetStorageLayout applies a storage layout (POST op=set_storage_layout,
// maas-behaviour §8): storage_layout plus boot_size/root_size when set. Repeating
// it re-applies the same layout. MAASConflictError unless the machine is Ready.
func (c *Client) SetStorageLayout(ctx context.Context, systemID string, p StorageLayoutParams) error {
	const op = "set_storage_layout"
	if err := requireArg(op, systemID, "system_id", systemID); err != nil {
		return err
	}
	if err := requireArg(op, systemID, "storage_layout", p.Layout); err != nil {
		return err
	}
	form := url.Values{"storage_layout": {p.Layout}}
	setIf(form, "boot_size", p.BootSize)
	setIf(form, "root_size", p.RootSize)
	_, err := c.do(ctx, request{
		op: op, systemID: systemID, method: http.MethodPost,
		path: machinePath(systemID), maasOp: op, form: form,
	})
	return err
}

// Subnets lists the region's subnets (GET subnets/, maas-behaviour §10), ordered
// by id as MAAS returns them, each with its VLAN. A read: repeating it is
// free.
func (c *Client) Subnets(ctx context.Context) ([]Subnet, error) {
	var ws []*wireSubnet
	if err := c.doJSON(ctx, request{op: "list subnets", method: http.MethodGet, path: "subnets/"}, &ws); err != nil {
		return nil, err
	}
	out := make([]Subnet, 0, len(ws))
	for _, w := range ws {
		if s := w.subnet(); s != nil {
			out = append(out, *s)
		}
	}
	return out, nil
}
