package api

import (
	"net/http"
	"net/netip"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/secrets"
)

// powerOverrideRequest holds a BMC password only until it is wrapped in
// domain.Secret; it is never logged or returned.
type powerOverrideRequest struct {
	Hostname    string `json:"hostname"`
	BMCAddress  string `json:"bmc_address"`
	BMCUsername string `json:"bmc_username"`
	BMCPassword string `json:"bmc_password"`
}

// powerOverrideView is what the API says of a written override: which host
// it is for, never the credentials.
type powerOverrideView struct {
	SiteID     string `json:"site_id"`
	Hostname   string `json:"hostname,omitempty"`
	BMCAddress string `json:"bmc_address,omitempty"`
	Set        bool   `json:"set"`
}

// putPowerOverride is POST /maas-sites/{id}/power-overrides: the BMC user
// and password of one host (by hostname or BMC address) that differ from
// the site's. Write-only like the site's credentials; used wherever the
// site's would be (the machine create's power parameters).
func (s *server) putPowerOverride(rq *request) (int, any, error) {
	var in powerOverrideRequest
	if err := decodeBody(rq, &in); err != nil {
		return 0, nil, err
	}
	view := powerOverrideView{SiteID: rq.r.PathValue("id"), Set: true}
	var key string
	switch {
	case in.Hostname != "" && in.BMCAddress != "":
		return 0, nil, fieldError("bmc_address", "give hostname or bmc_address, not both")
	case in.Hostname != "":
		h, err := normalizeHostname("hostname", in.Hostname)
		if err != nil {
			return 0, nil, err
		}
		view.Hostname, key = h, domain.PowerOverrideKeyHost(h)
	case in.BMCAddress != "":
		addr, err := netip.ParseAddr(in.BMCAddress)
		if err != nil || !addr.Is4() {
			return 0, nil, fieldError("bmc_address", "must be an IPv4 address")
		}
		view.BMCAddress, key = addr.String(), domain.PowerOverrideKeyBMC(addr.String())
	default:
		return 0, nil, fieldError("hostname", "is required (or bmc_address): the host the override is for")
	}
	if err := checkText("bmc_username", in.BMCUsername, true, 64); err != nil {
		return 0, nil, err
	}
	if in.BMCPassword == "" {
		return 0, nil, fieldError("bmc_password", "is required")
	}
	if len(in.BMCPassword) > 256 {
		return 0, nil, fieldError("bmc_password", "must be at most 256 bytes")
	}
	if _, err := s.store.GetSite(rq.ctx(), view.SiteID); err != nil {
		return 0, nil, err
	}
	creds := domain.PowerCredentials{Username: in.BMCUsername, Password: domain.Secret(in.BMCPassword)}
	if err := secrets.PutPowerOverride(rq.ctx(), s.secrets, view.SiteID, key, creds); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, view, nil
}
