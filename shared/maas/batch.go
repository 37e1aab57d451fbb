package maas

import (
	"context"
	"net/url"
)

// ListByIDs lists the machines of the given system ids in one call (GET
// machines/?id=…&id=…, maas-behaviour §6); ids MAAS does not know are
// simply absent from the answer. Callers keep batches to about a hundred
// ids so the query string stays short. An empty list asks nothing. A read.
func (c *Client) ListByIDs(ctx context.Context, systemIDs []string) ([]Machine, error) {
	if len(systemIDs) == 0 {
		return []Machine{}, nil
	}
	return c.listMachines(ctx, "list machines by system id", url.Values{"id": systemIDs})
}

// ListByHostnames lists the machines carrying any of the hostnames in one
// call (GET machines/?hostname=…&hostname=…); MAAS does not enforce unique
// hostnames across domains, so a name can match several. An empty list
// asks nothing. A read.
func (c *Client) ListByHostnames(ctx context.Context, hostnames []string) ([]Machine, error) {
	if len(hostnames) == 0 {
		return []Machine{}, nil
	}
	return c.listMachines(ctx, "list machines by hostname", url.Values{"hostname": hostnames})
}
