package maas

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// Probe checks a region: GET version/ for the version and capabilities,
// then GET users/?op=whoami for the key's user and whether it is an admin
// (maas-behaviour §13). whoami is the call that proves the key: version/ answers
// anonymous callers too. Read-only; a MAASUnauthorizedError means a bad key.
//
// A key that works but whose user is not a MAAS administrator cannot
// onboard anything: commissioning, relinking interfaces, setting the storage
// layout and finding machines by BMC address all need an admin
// (maas-behaviour §13), and its new machines would stay New. Probe then
// reports it through ProbeResult.Problem, so a caller that reports health
// says "unhealthy" with the reason instead of letting the first onboarding
// fail in discovery. Not being an admin is what the key is, not a failed
// call, so it is not an error.
func (c *Client) Probe(ctx context.Context) (ProbeResult, error) {
	var v wireVersion
	if err := c.doJSON(ctx, request{op: "version", method: http.MethodGet, path: "version/"}, &v); err != nil {
		return ProbeResult{}, err
	}
	var who wireWhoami
	if err := c.doJSON(ctx, request{op: "whoami", method: http.MethodGet, path: "users/", maasOp: "whoami"}, &who); err != nil {
		return ProbeResult{}, err
	}
	res := ProbeResult{
		Version:      v.Version,
		Subversion:   string(v.Subversion),
		Capabilities: v.Capabilities,
		Username:     who.Username,
		IsAdmin:      who.IsSuperuser,
	}
	return res, nil
}

// Problem says why a region that answered cannot be used to onboard, or ""
// when it can: the key's user must be a MAAS administrator (is_superuser),
// because creating, commissioning, relinking interfaces, setting the storage
// layout and finding machines by BMC address all need one (maas-behaviour
// §13). Roles granted through MAAS RBAC are not looked at: such a key is
// refused too, failing closed. A region lacking a script the site's
// profiles name (MissingScripts) cannot commission their machines either.
func (r ProbeResult) Problem() string {
	if r.IsAdmin && len(r.MissingScripts) > 0 {
		return fmt.Sprintf("maas scripts: the region lacks %d script(s) the site's profiles name: %s",
			len(r.MissingScripts), strings.Join(r.MissingScripts, ", "))
	}
	if r.IsAdmin {
		return ""
	}
	return fmt.Sprintf("maas whoami: user %q is not a MAAS administrator (is_superuser false): "+
		"onboarding needs an admin key to create, commission and deploy machines", r.Username)
}
