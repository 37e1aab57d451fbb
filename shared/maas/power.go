package maas

import (
	"context"
	"net/http"
)

// PowerOn powers the machine on (POST op=power_on, maas-behaviour §5). MAAS needs
// the machine to have an owner (MAASConflictError "Can't start node: it hasn't
// been allocated."); on an Allocated machine MAAS treats it as a deploy.
// Repeating it on a machine already on asks the BMC again, harmlessly.
func (c *Client) PowerOn(ctx context.Context, systemID string) error {
	return c.powerOp(ctx, "power_on", systemID)
}

// PowerOff powers the machine off (POST op=power_off, hard stop, maas-behaviour
// §8). Repeating it on a machine already off is harmless. MAAS answers null
// instead of the machine when it cannot power it off; that is not an error
// here, and PowerState tells what happened.
func (c *Client) PowerOff(ctx context.Context, systemID string) error {
	return c.powerOp(ctx, "power_off", systemID)
}

func (c *Client) powerOp(ctx context.Context, maasOp, systemID string) error {
	if err := requireArg(maasOp, systemID, "system_id", systemID); err != nil {
		return err
	}
	_, err := c.do(ctx, request{
		op: maasOp, systemID: systemID, method: http.MethodPost,
		path: machinePath(systemID), maasOp: maasOp,
	})
	return err
}

// PowerState queries the BMC live (GET op=query_power_state): "on", "off",
// "unknown" or "error". It can block for about a minute while MAAS asks the
// BMC (maas-behaviour §8), so give it a context deadline that allows for that. A
// read; a BMC MAAS cannot reach is an MAASUnavailableError (503).
func (c *Client) PowerState(ctx context.Context, systemID string) (string, error) {
	const op = "query_power_state"
	if err := requireArg(op, systemID, "system_id", systemID); err != nil {
		return "", err
	}
	var w wirePowerState
	err := c.doJSON(ctx, request{
		op: op, systemID: systemID, method: http.MethodGet,
		path: machinePath(systemID), maasOp: op,
	}, &w)
	if err != nil {
		return "", err
	}
	return w.State, nil
}
