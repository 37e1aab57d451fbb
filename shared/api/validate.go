package api

import (
	"encoding/hex"
	"encoding/json"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/maasflow/maasflow/shared/domain"
)

var hostnameLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// normalizeHostname checks an RFC 1123 host name (one or more labels) and
// returns it in lower case: DNS names are case-insensitive, and the host lock
// (one open onboarding per site and hostname) must not be dodged by case.
func normalizeHostname(field, h string) (string, error) {
	if h == "" {
		return "", fieldError(field, "is required")
	}
	if len(h) > 253 {
		return "", fieldError(field, "must be at most 253 characters")
	}
	// A trailing dot (an absolute DNS name) would be a second spelling of
	// the same host in MAAS and in the host lock: refused, not trimmed.
	if strings.HasSuffix(h, ".") {
		return "", fieldError(field, "must not end with a dot")
	}
	h = strings.ToLower(h)
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if !hostnameLabel.MatchString(l) {
			return "", fieldError(field, "must be an RFC 1123 host name: labels of 1-63 letters, digits and inner hyphens, separated by dots")
		}
	}
	// An address is not a host name (RFC 1123 §2.1: the top-level label is
	// never all digits, so a name cannot be mistaken for a dotted quad).
	if _, err := netip.ParseAddr(h); err == nil || allDigits(labels[len(labels)-1]) {
		return "", fieldError(field, "must be a host name, not an IP address (its last label must not be all digits)")
	}
	return h, nil
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// checkIPv4 accepts a dotted-quad IPv4 address a BMC can have on a
// management network: not unspecified (0.0.0.0/8), loopback (127.0.0.0/8),
// link-local (169.254.0.0/16, which a BMC self-assigns when DHCP failed and
// no rack controller routes to), multicast or the limited broadcast address.
func checkIPv4(field, s string) error {
	if s == "" {
		return fieldError(field, "is required")
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return fieldError(field, "must be an IPv4 address such as 10.0.0.21")
	}
	if why := notBMCAddress(a); why != "" {
		return fieldError(field, "must be a unicast IPv4 address on a management network, not %s", why)
	}
	return nil
}

// notBMCAddress names the class of an address no BMC is reached at, or "".
func notBMCAddress(a netip.Addr) string {
	switch {
	case a.IsUnspecified() || a.As4()[0] == 0:
		return "an unspecified address (0.0.0.0/8)"
	case a.IsLoopback():
		return "a loopback address (127.0.0.0/8)"
	case a.IsLinkLocalUnicast():
		return "a link-local address (169.254.0.0/16)"
	case a.IsMulticast():
		return "a multicast address (224.0.0.0/4)"
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "the broadcast address"
	}
	return ""
}

// checkIPv4CIDR accepts a RoCE interface address: a host address with the
// prefix of a point-to-point link, /31 (RFC 3021, both addresses usable) or
// /32, e.g. 172.30.9.61/31. Each RoCE rail is a routed link from the node to
// its leaf, so a wider prefix is a mistake (a network address, or an address
// that would claim a whole subnet on the node); see docs/decisions.md.
func checkIPv4CIDR(field, s string) error {
	if s == "" {
		return fieldError(field, "is required")
	}
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() {
		return fieldError(field, "must be an IPv4 address with prefix length such as 172.30.9.61/31")
	}
	a := p.Addr()
	if a.IsUnspecified() || a.IsMulticast() || a.IsLoopback() || a.IsLinkLocalUnicast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return fieldError(field, "must be a unicast IPv4 address")
	}
	if p.Bits() < 31 {
		return fieldError(field, "must be a point-to-point host address, /31 or /32 (such as 172.30.9.61/31), not a /%d", p.Bits())
	}
	return nil
}

var interfaceName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,14}$`)

// checkInterfaceName accepts a Linux interface name (at most 15 bytes).
func checkInterfaceName(field, s string) error {
	if s == "" {
		return fieldError(field, "is required")
	}
	if !interfaceName.MatchString(s) {
		return fieldError(field, "must be a network interface name of 1-15 letters, digits and _.:@-")
	}
	return nil
}

// checkText accepts printable text up to max characters; required says
// whether empty is an error.
func checkText(field, s string, required bool, max int) error {
	if s == "" {
		if required {
			return fieldError(field, "is required")
		}
		return nil
	}
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > max {
		return fieldError(field, "must be at most %d characters of text", max)
	}
	for _, r := range s {
		if unprintable(r) {
			return fieldError(field, "must not contain control or format characters (such as U+%04X)", r)
		}
	}
	return nil
}

// unprintable reports the characters no text field may hold: controls (C0,
// DEL and C1, which holds U+0085 NEL, a line break to many log readers),
// format characters (zero-width and bidirectional overrides, U+FEFF, which
// make a record read otherwise than it is), the line and paragraph
// separators, and the replacement character an invalid byte decodes to.
func unprintable(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) || r == utf8.RuneError
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 ._-]{0,62}$`)

func checkName(field, s string) error {
	if s == "" {
		return fieldError(field, "is required")
	}
	if !namePattern.MatchString(s) {
		return fieldError(field, "must be 1-63 letters, digits, spaces and ._- starting with a letter or digit")
	}
	return nil
}

// checkHTTPURL accepts an absolute http or https URL without credentials.
func checkHTTPURL(field, s string, required bool) error {
	if s == "" {
		if required {
			return fieldError(field, "is required")
		}
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fieldError(field, "must be an absolute http or https URL")
	}
	if u.User != nil {
		// Credentials in a URL end up in logs and records.
		return fieldError(field, "must not carry user credentials; use the credentials endpoint")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fieldError(field, "must have a port between 1 and 65535")
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return fieldError(field, "must have a port between 1 and 65535 after its colon")
	}
	if u.Hostname() == "" {
		return fieldError(field, "must name a host")
	}
	if len(s) > 2048 {
		return fieldError(field, "must be at most 2048 characters")
	}
	return nil
}

var (
	architecturePattern = regexp.MustCompile(`^[a-z0-9_]{1,32}(/[a-z0-9_.-]{1,32})?$`)
	seriesPattern       = regexp.MustCompile(`^[a-z0-9][a-z0-9._/-]{0,63}$`)
	versionPattern      = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$`)
	ociDigestPattern    = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// storageLayouts are the values MAAS's set_storage_layout accepts.
var storageLayouts = map[string]bool{
	"flat": true, "lvm": true, "bcache": true, "vmfs6": true, "vmfs7": true, "custom": true, "blank": true,
}

// Bounds for the policy's numbers.
const (
	maxDeployRetries = 5
	minWaitSeconds   = 60
	maxWaitSeconds   = 7 * 24 * 3600
)

// validatePolicy checks every set field of a site or profile policy; field
// names are prefixed with prefix ("policy.").
func validatePolicy(p domain.Policy, prefix string) error {
	if err := validateDecommissionPolicy(p.DecommissionPolicy, prefix); err != nil {
		return err
	}
	if err := checkThrottle(p, prefix); err != nil {
		return err
	}
	if p.DeployRetries != nil && (*p.DeployRetries < 0 || *p.DeployRetries > maxDeployRetries) {
		return fieldError(prefix+"deploy_retries", "must be between 0 and %d", maxDeployRetries)
	}
	if p.EnrollmentTimeoutSeconds != nil && (*p.EnrollmentTimeoutSeconds < minWaitSeconds || *p.EnrollmentTimeoutSeconds > maxWaitSeconds) {
		return fieldError(prefix+"enrollment_timeout_seconds", "must be between %d and %d", minWaitSeconds, maxWaitSeconds)
	}
	if p.TokenTTLSeconds != nil && (*p.TokenTTLSeconds < minWaitSeconds || *p.TokenTTLSeconds > maxWaitSeconds) {
		return fieldError(prefix+"token_ttl_seconds", "must be between %d and %d", minWaitSeconds, maxWaitSeconds)
	}
	if p.StorageLayout != nil && !storageLayouts[*p.StorageLayout] {
		return fieldError(prefix+"storage_layout", "must be one of flat, lvm, bcache, vmfs6, vmfs7, custom, blank")
	}
	if p.EnrollmentURL != nil {
		if err := checkHTTPURL(prefix+"enrollment_url", *p.EnrollmentURL, true); err != nil {
			return err
		}
	}
	if b := p.Bootstrap; b != nil {
		bp := prefix + "bootstrap."
		if err := checkHTTPURL(bp+"url", b.URL, true); err != nil {
			return err
		}
		if !versionPattern.MatchString(b.Version) {
			return fieldError(bp+"version", "is required: 1-64 letters, digits and ._+-")
		}
		if b.SHA256 != "" {
			if _, err := hex.DecodeString(b.SHA256); err != nil || len(b.SHA256) != 64 {
				return fieldError(bp+"sha256", "must be 64 hex digits")
			}
		}
		if b.CABundle != "" && (!strings.Contains(b.CABundle, "-----BEGIN CERTIFICATE-----") || len(b.CABundle) > 64<<10) {
			return fieldError(bp+"ca_bundle_pem", "must be PEM certificates (at most 64 KiB)")
		}
		if err := checkText(bp+"oci_ref", b.OCIRef, false, 512); err != nil {
			return err
		}
		if b.OCIDigest != "" && !ociDigestPattern.MatchString(b.OCIDigest) {
			return fieldError(bp+"oci_digest", "must be sha256:<64 hex digits>")
		}
	}
	return nil
}

// decodePolicy decodes and validates a policy object given whole.
func decodePolicy(raw json.RawMessage, prefix string) (domain.Policy, error) {
	var p domain.Policy
	if len(raw) == 0 || isNull(raw) {
		return p, nil
	}
	if err := decodeStrict(raw, &p, prefix); err != nil {
		return p, err
	}
	return p, validatePolicy(p, prefix)
}

// mergePolicy applies a JSON merge patch (RFC 7386) to a policy: members set
// a field, null members clear it back to "inherit", absent members keep it.
// A null patch clears the whole policy.
func mergePolicy(cur domain.Policy, patch json.RawMessage, prefix string) (domain.Policy, error) {
	if isNull(patch) {
		return domain.Policy{}, nil
	}
	field := strings.TrimSuffix(prefix, ".")
	members, err := rawObject(patch, field)
	if err != nil {
		return cur, err
	}
	b, err := json.Marshal(cur)
	if err != nil {
		return cur, err
	}
	merged, err := rawObject(b, field)
	if err != nil {
		return cur, err
	}
	for k, v := range members {
		if isNull(v) {
			delete(merged, k)
			continue
		}
		merged[k] = v
	}
	b, err = json.Marshal(merged)
	if err != nil {
		return cur, err
	}
	return decodePolicy(b, prefix)
}
