package domain

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
)

// Policy field paths the bootstrap input check names, as an operator
// writes them in a site or profile policy.
const (
	FieldBootstrapURL     = "policy.bootstrap.url"
	FieldBootstrapVersion = "policy.bootstrap.version"
	FieldBootstrapCA      = "policy.bootstrap.ca_bundle_pem"
	FieldEnrollmentURL    = "policy.enrollment_url"
)

// BootstrapInputError is a static bootstrap input the effective policy
// cannot resolve: Field is the policy field to set.
type BootstrapInputError struct {
	Field  string
	Reason string
}

func (e *BootstrapInputError) Error() string { return e.Field + ": " + e.Reason }

// CheckBootstrapInputs checks what a deploy's first boot needs and can be
// known without the network: a site bootstrap bundle URL and version, a
// CA bundle of real PEM certificates (the policy's, else
// deploymentCABundle), and an enrollment URL (the policy's, else
// deploymentAPIURL). It is pure, so the API can refuse an onboarding
// before anything happens in MAAS and the hardening stage checks the same
// rules again before deploy; the reachability checks stay in hardening.
func CheckBootstrapInputs(p EffectivePolicy, deploymentAPIURL, deploymentCABundle string) *BootstrapInputError {
	fail := func(field, reason string) *BootstrapInputError {
		return &BootstrapInputError{Field: field, Reason: reason}
	}
	switch {
	case strings.TrimSpace(p.Bootstrap.URL) == "":
		return fail(FieldBootstrapURL, "the policy names no site bootstrap bundle url")
	case strings.TrimSpace(p.Bootstrap.Version) == "":
		return fail(FieldBootstrapVersion, "the site bootstrap bundle has no version")
	case strings.TrimSpace(p.EnrollmentURL) == "" && strings.TrimSpace(deploymentAPIURL) == "":
		return fail(FieldEnrollmentURL, "no enrollment API URL (policy enrollment_url or the deployment's API URL)")
	}
	switch {
	case p.Bootstrap.CABundle != "":
		if _, err := ParseCABundle(p.Bootstrap.CABundle); err != nil {
			return fail(FieldBootstrapCA, err.Error())
		}
	case strings.TrimSpace(deploymentCABundle) == "":
		return fail(FieldBootstrapCA, "no CA bundle for the enrollment API (policy bootstrap.ca_bundle_pem or the deployment's)")
	default:
		// Checked when the deployment started; checked again so a caller
		// that skipped that check cannot hand nodes a bad bundle.
		if _, err := ParseCABundle(deploymentCABundle); err != nil {
			return fail(FieldBootstrapCA, "the deployment's CA bundle "+err.Error())
		}
	}
	return nil
}

// ParseCABundle reads pemText as one or more PEM certificates and nothing
// else. Text before the first BEGIN line fails too: pem.Decode would skip
// it, and a template placeholder in front of a real certificate must not
// pass.
func ParseCABundle(pemText string) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	rest := []byte(pemText)
	for {
		trimmed := strings.TrimSpace(string(rest))
		if trimmed == "" {
			break
		}
		if !strings.HasPrefix(trimmed, "-----BEGIN ") {
			if len(certs) == 0 {
				return nil, fmt.Errorf("is not PEM: a template placeholder or other text where certificates belong")
			}
			return nil, fmt.Errorf("has text after certificate %d", len(certs))
		}
		block, next := pem.Decode([]byte(trimmed))
		if block == nil {
			return nil, fmt.Errorf("PEM block %d is truncated or malformed", len(certs)+1)
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %d is %q, want CERTIFICATE", len(certs)+1, block.Type)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d does not parse", len(certs)+1)
		}
		certs = append(certs, cert)
		rest = next
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("holds no certificate")
	}
	return certs, nil
}
