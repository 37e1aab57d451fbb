package domain

import "strings"

// PowerCredentials are a BMC's IPMI user and password: a per-node override
// of the site's (SiteCredentials' BMC pair) for a host whose BMC differs.
type PowerCredentials struct {
	Username string `json:"bmc_username"`
	Password Secret `json:"bmc_password"`
}

// PowerOverrideKeyHost and PowerOverrideKeyBMC name the override of a host
// by its hostname or by its BMC address (an override by hostname wins).
func PowerOverrideKeyHost(hostname string) string { return "host-" + strings.ToLower(hostname) }

// PowerOverrideKeyBMC names the override of the BMC at addr.
func PowerOverrideKeyBMC(addr string) string { return "bmc-" + addr }

// PowerOverrideSecretName is where a site's power override of key lives,
// under the site's secret path (the deployment's grants on
// maasflow/sites/ cover it).
func PowerOverrideSecretName(siteID, key string) string {
	return "maasflow/sites/" + siteID + "/power/" + key
}
