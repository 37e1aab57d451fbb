package enroll

import (
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/maasflow/maasflow/shared/domain"
)

// BundleVersion is the node bootstrap bundle format version. The node-side
// bootstrap refuses any other value, so a format change bumps it.
const BundleVersion = "node-bootstrap/v1"

// Where the node bootstrap puts trust material and the node identity. The
// bundle always carries them, so the node agent never reconstructs them
// (requirements runbook "use the bootstrap bundle as the source of truth").
const (
	DefaultCABundlePath         = "/etc/gpuaas/ca-bundle.pem"
	DefaultNodeCertCABundlePath = "/etc/gpuaas/node-cert-ca-bundle.pem"
	DefaultCertPath             = "/etc/gpuaas/node.crt"
	DefaultKeyPath              = "/etc/gpuaas/node.key"
)

// Pull delivery modes of the node-agent package.
const (
	// PullAnonymous: the node pulls oci_ref@digest from the internal
	// registry without a credential; the digest pins the content.
	PullAnonymous = "anonymous"
	// PullPreloaded: the site bootstrap already placed the package under
	// install_root; the node bootstrap only runs it.
	PullPreloaded = "preloaded"
)

// Package defaults applied by NewBundle to empty fields.
const (
	DefaultInstallRoot     = "/opt/gpuaas/node-agent"
	DefaultEnvFilePath     = "/etc/gpuaas/node-agent.env"
	DefaultSystemdUnitName = "gpuaas-node-agent.service"
)

// Package names the node-agent bootstrap package (requirements runbook "package.*").
type Package struct {
	OCIRef           string `json:"oci_ref"`
	Digest           string `json:"digest"`
	PullDeliveryMode string `json:"pull_delivery_mode"`
	InstallRoot      string `json:"install_root"`
	EnvFilePath      string `json:"env_file_path"`
	SystemdUnitName  string `json:"systemd_unit_name"`
}

// Bundle is the node bootstrap bundle of requirements runbook, one per node and attempt.
// Its json keys are exactly those of the first-boot contract. The token is a
// domain.Secret, so json.Marshal, fmt and slog of a Bundle print
// "[redacted]" in its place; only RenderUserData writes the real value.
type Bundle struct {
	BundleVersion   string        `json:"bundle_version"`
	NodeID          string        `json:"GPUAAS_NODE_ID"`
	EnrollmentToken domain.Secret `json:"GPUAAS_ENROLLMENT_TOKEN"`
	APIURL          string        `json:"GPUAAS_API_URL"`
	// TaskSigningPubKeys are single-line public keys (no whitespace or
	// commas), so the node bootstrap can join them with "," into the
	// GPUAAS_TASK_SIGNING_PUBKEYS environment variable.
	TaskSigningPubKeys []string `json:"GPUAAS_TASK_SIGNING_PUBKEYS"`
	CABundlePEM        string   `json:"ca_bundle_pem"`
	// CAFingerprint is the SHA-256 of the DER of the first certificate in
	// CABundlePEM, upper-case hex bytes joined by colons: the value part of
	// `openssl x509 -noout -fingerprint -sha256`, so an operator can compare
	// it on the node by eye.
	CAFingerprint        string  `json:"ca_fingerprint"`
	CABundlePath         string  `json:"GPUAAS_CA_BUNDLE_PATH"`
	NodeCertCABundlePath string  `json:"GPUAAS_NODE_CERT_CA_BUNDLE_PATH"`
	CertPath             string  `json:"GPUAAS_CERT_PATH"`
	KeyPath              string  `json:"GPUAAS_KEY_PATH"`
	Package              Package `json:"package"`
}

// BundleInput is what the caller knows; NewBundle fills in the rest.
type BundleInput struct {
	NodeID             string
	APIURL             string
	Token              domain.Secret
	TaskSigningPubKeys []string
	CABundlePEM        string
	Package            Package
}

// BundleError says which bundle or user_data field is wrong and why. Field is
// the json key ("GPUAAS_API_URL", "package.digest", "site_bootstrap.url",
// "user_data"). The message never holds the field's value: values may be a
// token, a CA bundle or a URL with credentials.
type BundleError struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

func (e *BundleError) Error() string {
	return fmt.Sprintf("bootstrap bundle %s: %s", e.Field, e.Reason)
}

func bundleErr(field, reason string) *BundleError {
	return &BundleError{Field: field, Reason: reason}
}

// NewBundle builds and validates the node bootstrap bundle: node id, token
// and API URL must be set, the CA bundle must be real PEM certificates
// (CheckCABundle), the package must name an OCI reference pinned by a sha256
// digest. It computes ca_fingerprint and applies the default paths and
// package settings. Every failure is a *BundleError.
func NewBundle(in BundleInput) (Bundle, error) {
	pkg := in.Package
	setDefault(&pkg.PullDeliveryMode, PullAnonymous)
	setDefault(&pkg.InstallRoot, DefaultInstallRoot)
	setDefault(&pkg.EnvFilePath, DefaultEnvFilePath)
	setDefault(&pkg.SystemdUnitName, DefaultSystemdUnitName)

	keys := make([]string, len(in.TaskSigningPubKeys))
	copy(keys, in.TaskSigningPubKeys)

	fp, err := Fingerprint(in.CABundlePEM)
	if err != nil {
		return Bundle{}, err
	}
	b := Bundle{
		BundleVersion:        BundleVersion,
		NodeID:               in.NodeID,
		EnrollmentToken:      in.Token,
		APIURL:               in.APIURL,
		TaskSigningPubKeys:   keys,
		CABundlePEM:          in.CABundlePEM,
		CAFingerprint:        fp,
		CABundlePath:         DefaultCABundlePath,
		NodeCertCABundlePath: DefaultNodeCertCABundlePath,
		CertPath:             DefaultCertPath,
		KeyPath:              DefaultKeyPath,
		Package:              pkg,
	}
	if err := b.Validate(); err != nil {
		return Bundle{}, err
	}
	return b, nil
}

func setDefault(dst *string, v string) {
	if *dst == "" {
		*dst = v
	}
}

var (
	// nodeIDPattern keeps the node id safe in a URL path segment and a file.
	nodeIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
	// tokenPattern is the base64url alphabet NewToken uses: the check keeps
	// the value safe in JSON, an env file and a shell; strength comes from
	// NewToken, not from here.
	tokenPattern  = boundedPattern{regexp.MustCompile(`^[A-Za-z0-9_-]+$`), 512}
	pubKeyPattern = boundedPattern{regexp.MustCompile(`^[A-Za-z0-9+/=:._-]+$`), 1000}
	digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	// ociRefPattern is registry/repository[:tag] without a digest: the digest
	// is its own field and the bootstrap pins it.
	ociRefPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*(:[0-9]+)?(/[a-z0-9._-]+)+(:[A-Za-z0-9_][A-Za-z0-9._-]{0,127})?$`)
	// unitPattern is a unit name without its ".service" (isServiceUnit).
	unitPattern   = regexp.MustCompile(`^[A-Za-z0-9:_.@-]+$`)
	sha256Pattern = regexp.MustCompile(`^[0-9a-f]{64}$`)
	// versionPattern keeps a site bootstrap version printable in one
	// comment line and in node-side error messages.
	versionPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+/-]{0,63}$`)
)

// boundedPattern is a pattern whose length bound is checked apart from
// it. Written as a counted repetition ({1,512}), the bound compiles to
// hundreds of instructions, and every match then needs a matcher as
// large, built again after each garbage collection: tens of kilobytes per
// bundle validated.
type boundedPattern struct {
	re     *regexp.Regexp
	maxLen int // in bytes; the patterns' classes are ASCII
}

func (p boundedPattern) MatchString(s string) bool {
	return len(s) <= p.maxLen && p.re.MatchString(s)
}

// isServiceUnit is `^[A-Za-z0-9:_.@-]+\.service$` without the backtracking
// that pattern needs ('.' is in the class), which costs a matcher of tens
// of kilobytes per call.
func isServiceUnit(s string) bool {
	name, ok := strings.CutSuffix(s, ".service")
	return ok && unitPattern.MatchString(name)
}

// Validate checks a bundle built by NewBundle or read by ParseUserData:
// every key present and well formed, the CA real, and ca_fingerprint
// matching it.
func (b Bundle) Validate() error {
	if b.BundleVersion != BundleVersion {
		return bundleErr("bundle_version", "unsupported version, want "+BundleVersion)
	}
	if !nodeIDPattern.MatchString(b.NodeID) {
		return bundleErr("GPUAAS_NODE_ID", "must be 1-128 letters, digits or ._:- starting with a letter or digit")
	}
	if !tokenPattern.MatchString(b.EnrollmentToken.Reveal()) {
		return bundleErr("GPUAAS_ENROLLMENT_TOKEN", "must be 1 to 512 base64url characters")
	}
	if err := checkHTTPURL(b.APIURL); err != nil {
		return bundleErr("GPUAAS_API_URL", err.Error())
	}
	if b.TaskSigningPubKeys == nil {
		return bundleErr("GPUAAS_TASK_SIGNING_PUBKEYS", "must be a list (empty is allowed)")
	}
	for i, k := range b.TaskSigningPubKeys {
		if !pubKeyPattern.MatchString(k) {
			return bundleErr("GPUAAS_TASK_SIGNING_PUBKEYS", fmt.Sprintf("key %d must be one line without spaces or commas", i))
		}
	}
	fp, err := Fingerprint(b.CABundlePEM)
	if err != nil {
		return err
	}
	if b.CAFingerprint != fp {
		return bundleErr("ca_fingerprint", "does not match the first certificate of ca_bundle_pem")
	}
	for _, p := range []struct{ field, value string }{
		{"GPUAAS_CA_BUNDLE_PATH", b.CABundlePath},
		{"GPUAAS_NODE_CERT_CA_BUNDLE_PATH", b.NodeCertCABundlePath},
		{"GPUAAS_CERT_PATH", b.CertPath},
		{"GPUAAS_KEY_PATH", b.KeyPath},
		{"package.install_root", b.Package.InstallRoot},
		{"package.env_file_path", b.Package.EnvFilePath},
	} {
		if err := checkAbsPath(p.value); err != nil {
			return bundleErr(p.field, err.Error())
		}
	}
	return b.Package.validate()
}

func (p Package) validate() error {
	if !ociRefPattern.MatchString(p.OCIRef) {
		return bundleErr("package.oci_ref", "must be registry/repository[:tag] in lower case, without a digest")
	}
	if !digestPattern.MatchString(p.Digest) {
		return bundleErr("package.digest", "must be sha256: followed by 64 lower-case hex digits")
	}
	switch p.PullDeliveryMode {
	case PullAnonymous, PullPreloaded:
	default:
		return bundleErr("package.pull_delivery_mode", "must be "+PullAnonymous+" or "+PullPreloaded)
	}
	if !isServiceUnit(p.SystemdUnitName) {
		return bundleErr("package.systemd_unit_name", "must be a systemd unit name ending in .service")
	}
	return nil
}

func checkHTTPURL(raw string) error {
	if raw == "" {
		return reasonError("is required")
	}
	if strings.ContainsAny(raw, " \t\r\n'\"\\`$") {
		return reasonError("must not contain spaces, quotes, backslashes or $")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return reasonError("must be an absolute http or https URL")
	}
	if u.User != nil {
		return reasonError("must not carry credentials")
	}
	return nil
}

func checkAbsPath(p string) error {
	if p == "" {
		return reasonError("is required")
	}
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p || strings.ContainsAny(p, " \t\r\n'\"\\`$") {
		return reasonError("must be a clean absolute path without spaces or quotes")
	}
	return nil
}

// reasonError is a plain error for the reasons above; it never leaves the
// package unwrapped (callers turn it into a *BundleError).
type reasonError string

func (e reasonError) Error() string { return string(e) }

// CheckCABundle fails unless pemText is one or more PEM CERTIFICATE blocks
// that x509 parses, with nothing but whitespace around them. It rejects
// template placeholders such as "<BOOTSTRAP_BUNDLE_CA_PEM>" (requirements readiness §8.1),
// private keys, truncated blocks and trailing text. The error is a
// *BundleError on field ca_bundle_pem and never quotes the input.
func CheckCABundle(pemText string) error {
	_, err := parseCABundle(pemText)
	return err
}

// Fingerprint checks pemText like CheckCABundle and returns the SHA-256 of
// the first certificate's DER as upper-case hex bytes joined by colons.
func Fingerprint(pemText string) (string, error) {
	certs, err := parseCABundle(pemText)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(certs[0].Raw)
	parts := make([]string, len(sum))
	for i, c := range sum {
		parts[i] = fmt.Sprintf("%02X", c)
	}
	return strings.Join(parts, ":"), nil
}

func parseCABundle(pemText string) ([]*x509.Certificate, error) {
	// One set of rules with the API's and hardening's policy check.
	certs, err := domain.ParseCABundle(pemText)
	if err != nil {
		return nil, bundleErr("ca_bundle_pem", err.Error())
	}
	return certs, nil
}
