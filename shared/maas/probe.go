package maas

import (
	"context"
	"net/http"
)

// Probe checks a region: GET version/ for the version and capabilities,
// then GET users/?op=whoami for the key's user and whether it is an admin
// (maas-behaviour §13). whoami is the call that proves the key: version/ answers
// anonymous callers too. Read-only; an MAASUnauthorizedError means a bad key.
func (c *Client) Probe(ctx context.Context) (ProbeResult, error) {
	var v wireVersion
	if err := c.doJSON(ctx, request{op: "version", method: http.MethodGet, path: "version/"}, &v); err != nil {
		return ProbeResult{}, err
	}
	var who wireWhoami
	if err := c.doJSON(ctx, request{op: "whoami", method: http.MethodGet, path: "users/", maasOp: "whoami"}, &who); err != nil {
		return ProbeResult{}, err
	}
	return ProbeResult{
		Version:      v.Version,
		Subversion:   string(v.Subversion),
		Capabilities: v.Capabilities,
		Username:     who.Username,
		IsAdmin:      who.IsSuperuser,
	}, nil
}
