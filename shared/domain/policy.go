package domain

import "time"

// Policy holds the execution decisions requirements readiness §3.2 says come from site and
// profile policy, never from the onboarding request. Every field is optional:
// nil means "inherit" (profile → site → built-in default).
type Policy struct {
	// AutoClaimNew lets discovery adopt a sole New machine that matched by
	// PXE MAC or power address (requirements readiness §4.1 step 6).
	AutoClaimNew *bool `json:"auto_claim_new,omitempty" dynamodbav:"auto_claim_new,omitempty"`
	// StrictPXEPreflight fails before deploy when the boot interface cannot
	// be linked AUTO to a subnet with a gateway and MAAS DHCP (requirements readiness §4.3).
	StrictPXEPreflight *bool `json:"strict_pxe_preflight,omitempty" dynamodbav:"strict_pxe_preflight,omitempty"`
	// DeployRetries is how many times a datasource/cloud-init-like deploy
	// failure is released and retried (requirements readiness §4.4; one by default).
	DeployRetries *int `json:"deploy_retries,omitempty" dynamodbav:"deploy_retries,omitempty"`
	// RequireHardwareSync asks MAAS for hardware sync on deploy.
	RequireHardwareSync *bool `json:"require_hardware_sync,omitempty" dynamodbav:"require_hardware_sync,omitempty"`
	// RoCEPhase2 applies the site's RoCE assignment records before deploy.
	RoCEPhase2 *bool `json:"roce_phase2,omitempty" dynamodbav:"roce_phase2,omitempty"`
	// EnableSSH and SkipBMCConfig are the commissioning flags the prototype
	// used (requirements readiness §4.2): both true by default.
	EnableSSH     *bool `json:"enable_ssh,omitempty" dynamodbav:"enable_ssh,omitempty"`
	SkipBMCConfig *bool `json:"skip_bmc_config,omitempty" dynamodbav:"skip_bmc_config,omitempty"`
	// StorageLayout is MAAS's set_storage_layout value (flat, lvm, …).
	StorageLayout *string `json:"storage_layout,omitempty" dynamodbav:"storage_layout,omitempty"`
	// EnrollmentTimeoutSeconds bounds the wait for the node agent's first
	// enrollment after Deployed; past it the onboarding needs an operator.
	EnrollmentTimeoutSeconds *int `json:"enrollment_timeout_seconds,omitempty" dynamodbav:"enrollment_timeout_seconds,omitempty"`
	// TokenTTLSeconds is the enrollment token's lifetime.
	TokenTTLSeconds *int `json:"token_ttl_seconds,omitempty" dynamodbav:"token_ttl_seconds,omitempty"`
	// Bootstrap is the site bootstrap bundle reference (requirements readiness §3.4): the
	// infra-owned first-boot launcher that runs before the node agent.
	Bootstrap *BootstrapRef `json:"bootstrap,omitempty" dynamodbav:"bootstrap,omitempty"`
	// EnrollmentURL is the node-facing API base the node agent calls.
	EnrollmentURL *string `json:"enrollment_url,omitempty" dynamodbav:"enrollment_url,omitempty"`
	// MaxConcurrentOnboardings is the site's throttle: at most this many
	// onboardings of the site hold a slot (past stage queued) at once; 0
	// or unset is no limit. A site field only: profiles cannot set it.
	MaxConcurrentOnboardings *int `json:"max_concurrent_onboardings,omitempty" dynamodbav:"max_concurrent_onboardings,omitempty"`
	// The decommission paths' policy (docs/decommission.md).
	DecommissionPolicy
}

// BootstrapRef names a versioned site bootstrap bundle. It is a controlled
// reference, never a free-form script (requirements API boundary §5.2).
type BootstrapRef struct {
	URL       string `json:"url" dynamodbav:"url"`
	Version   string `json:"version" dynamodbav:"version"`
	SHA256    string `json:"sha256,omitempty" dynamodbav:"sha256,omitempty"`
	CABundle  string `json:"ca_bundle_pem,omitempty" dynamodbav:"ca_bundle_pem,omitempty"`
	OCIRef    string `json:"oci_ref,omitempty" dynamodbav:"oci_ref,omitempty"`
	OCIDigest string `json:"oci_digest,omitempty" dynamodbav:"oci_digest,omitempty"`
}

// EffectivePolicy is a Policy with every field resolved.
type EffectivePolicy struct {
	AutoClaimNew             bool         `json:"auto_claim_new"`
	StrictPXEPreflight       bool         `json:"strict_pxe_preflight"`
	DeployRetries            int          `json:"deploy_retries"`
	RequireHardwareSync      bool         `json:"require_hardware_sync"`
	RoCEPhase2               bool         `json:"roce_phase2"`
	EnableSSH                bool         `json:"enable_ssh"`
	SkipBMCConfig            bool         `json:"skip_bmc_config"`
	StorageLayout            string       `json:"storage_layout"`
	EnrollmentTimeoutSeconds int          `json:"enrollment_timeout_seconds"`
	TokenTTLSeconds          int          `json:"token_ttl_seconds"`
	Bootstrap                BootstrapRef `json:"bootstrap"`
	EnrollmentURL            string       `json:"enrollment_url"`
	EffectiveDecommissionPolicy
}

// CABundleOr is the CA bundle a node trusts the enrollment API with: the
// policy's bootstrap bundle's, else the deployment's.
func (p EffectivePolicy) CABundleOr(deployment string) string {
	if p.Bootstrap.CABundle != "" {
		return p.Bootstrap.CABundle
	}
	return deployment
}

// DefaultPolicy is what a site with no policy gets. The defaults follow the
// prototype (requirements readiness §4): strict PXE preflight, one datasource retry,
// commissioning with enable_ssh and skip_bmc_config, and no auto-claim.
func DefaultPolicy() EffectivePolicy {
	return EffectivePolicy{
		AutoClaimNew:                false,
		StrictPXEPreflight:          true,
		DeployRetries:               1,
		EnableSSH:                   true,
		SkipBMCConfig:               true,
		StorageLayout:               "flat",
		EnrollmentTimeoutSeconds:    int((30 * time.Minute).Seconds()),
		TokenTTLSeconds:             int((2 * time.Hour).Seconds()),
		EffectiveDecommissionPolicy: defaultDecommission(),
	}
}

// ResolvePolicy applies the layers in order, later ones winning: built-in
// defaults, then the site's policy, then the profile's.
func ResolvePolicy(site, profile Policy) EffectivePolicy {
	p := DefaultPolicy()
	for _, layer := range []Policy{site, profile} {
		setBool(&p.AutoClaimNew, layer.AutoClaimNew)
		setBool(&p.StrictPXEPreflight, layer.StrictPXEPreflight)
		setInt(&p.DeployRetries, layer.DeployRetries)
		setBool(&p.RequireHardwareSync, layer.RequireHardwareSync)
		setBool(&p.RoCEPhase2, layer.RoCEPhase2)
		setBool(&p.EnableSSH, layer.EnableSSH)
		setBool(&p.SkipBMCConfig, layer.SkipBMCConfig)
		setString(&p.StorageLayout, layer.StorageLayout)
		setInt(&p.EnrollmentTimeoutSeconds, layer.EnrollmentTimeoutSeconds)
		setInt(&p.TokenTTLSeconds, layer.TokenTTLSeconds)
		setString(&p.EnrollmentURL, layer.EnrollmentURL)
		if layer.Bootstrap != nil {
			p.Bootstrap = *layer.Bootstrap
		}
		p.apply(layer.DecommissionPolicy)
	}
	return p
}

func setBool(dst *bool, v *bool) {
	if v != nil {
		*dst = *v
	}
}

func setInt(dst *int, v *int) {
	if v != nil {
		*dst = *v
	}
}

func setString(dst *string, v *string) {
	if v != nil {
		*dst = *v
	}
}
