package maas

import (
	"context"
	"fmt"
	"net/http"
)

// Probe checks a region: GET version/ for the version and capabilities,
// then GET users/?op=whoami for the key's user and whether it is an admin
// (maas-behaviour §13). whoami is the call that proves the key: version/ answers
// anonymous callers too. Read-only; an MAASUnauthorizedError means a bad key.
//
// A key that works but whose user is not a MAAS administrator cannot
// onboard anything: commissioning, relinking interfaces, setting the storage
// layout and finding machines by BMC address all need an admin
// (maas-behaviour §13), and its new machines would stay New. Probe then
// returns the ProbeResult it read together with a *MAASForbiddenError (Op
// "whoami") whose message names the user and why, so a caller that reports
// health says "unhealthy" with the reason instead of letting the first
// onboarding fail in discovery. Roles granted through MAAS RBAC are not
// looked at: such a key is refused too.
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
	if !res.IsAdmin {
		return res, notAdminError(who.Username)
	}
	return res, nil
}

// notAdminError is the refusal of a key whose user is not a MAAS
// administrator: the 403 MAAS would send to the first admin operation,
// said up front.
func notAdminError(username string) *MAASForbiddenError {
	return &MAASForbiddenError{Op: "whoami", Message: fmt.Sprintf(
		"user %q is not a MAAS administrator (is_superuser false); onboarding needs an admin key "+
			"to create, commission and deploy machines", username)}
}
