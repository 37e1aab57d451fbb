package enroll

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/maasflow/maasflow/shared/domain"
)

// Where the first-boot payload puts the two bundles on the node.
const (
	SiteBootstrapPath = "/etc/maasflow/site-bootstrap.json"
	NodeBundlePath    = "/etc/gpuaas/bootstrap-bundle.json"
)

// filePermissions keeps both files root-only: the node bundle holds the
// enrollment token.
const filePermissions = "0600"

// siteOKMarker is written by the site launcher on success. cloud-init runs
// every runcmd entry even when an earlier one failed, so the node bootstrap
// checks the marker to keep "site bootstrap first" a real dependency and to
// say plainly which part failed.
const siteOKMarker = "/run/maasflow/site-bootstrap.ok"

// The two runcmd entries are real shell files, shellchecked by `make lint`
// and executed by firstboot_test.go. Each reads every value it needs from the
// file cloud-init wrote before it (SiteBootstrapPath, NodeBundlePath), so
// nothing from policy or the bundle is ever interpolated into shell; the
// scripts' header comments say what each does and reports.
var (
	//go:embed scripts/site-launcher.sh
	siteLauncherFile string
	//go:embed scripts/node-bootstrap.sh
	nodeBootstrapFile string

	siteLauncher  = payloadScript(siteLauncherFile)
	nodeBootstrap = payloadScript(nodeBootstrapFile)
)

// payloadScript is a script file as it travels in user_data: without its
// leading comment block (the shellcheck directive and the documentation,
// which a node does not need and which would only grow the payload) and
// without the final newline.
func payloadScript(file string) string {
	rest := file
	for strings.HasPrefix(rest, "#") || strings.HasPrefix(rest, "\n") {
		_, after, found := strings.Cut(rest, "\n")
		if !found {
			return ""
		}
		rest = after
	}
	return strings.TrimRight(rest, "\n")
}

// siteWire is the site bootstrap reference as written to SiteBootstrapPath.
// Every key is always present so the launcher reads it without guessing.
type siteWire struct {
	URL       string `json:"url"`
	Version   string `json:"version"`
	SHA256    string `json:"sha256"`
	OCIRef    string `json:"oci_ref"`
	OCIDigest string `json:"oci_digest"`
}

// wireBundle is Bundle with the token revealed: the one type that puts the
// real token into JSON, used only to render and parse user_data.
type wireBundle struct {
	BundleVersion        string   `json:"bundle_version"`
	NodeID               string   `json:"GPUAAS_NODE_ID"`
	EnrollmentToken      string   `json:"GPUAAS_ENROLLMENT_TOKEN"`
	APIURL               string   `json:"GPUAAS_API_URL"`
	TaskSigningPubKeys   []string `json:"GPUAAS_TASK_SIGNING_PUBKEYS"`
	CABundlePEM          string   `json:"ca_bundle_pem"`
	CAFingerprint        string   `json:"ca_fingerprint"`
	CABundlePath         string   `json:"GPUAAS_CA_BUNDLE_PATH"`
	NodeCertCABundlePath string   `json:"GPUAAS_NODE_CERT_CA_BUNDLE_PATH"`
	CertPath             string   `json:"GPUAAS_CERT_PATH"`
	KeyPath              string   `json:"GPUAAS_KEY_PATH"`
	Package              Package  `json:"package"`
}

func toWire(b Bundle) wireBundle {
	return wireBundle{
		BundleVersion:        b.BundleVersion,
		NodeID:               b.NodeID,
		EnrollmentToken:      b.EnrollmentToken.Reveal(),
		APIURL:               b.APIURL,
		TaskSigningPubKeys:   b.TaskSigningPubKeys,
		CABundlePEM:          b.CABundlePEM,
		CAFingerprint:        b.CAFingerprint,
		CABundlePath:         b.CABundlePath,
		NodeCertCABundlePath: b.NodeCertCABundlePath,
		CertPath:             b.CertPath,
		KeyPath:              b.KeyPath,
		Package:              b.Package,
	}
}

func fromWire(w wireBundle) Bundle {
	return Bundle{
		BundleVersion:        w.BundleVersion,
		NodeID:               w.NodeID,
		EnrollmentToken:      domain.Secret(w.EnrollmentToken),
		APIURL:               w.APIURL,
		TaskSigningPubKeys:   w.TaskSigningPubKeys,
		CABundlePEM:          w.CABundlePEM,
		CAFingerprint:        w.CAFingerprint,
		CABundlePath:         w.CABundlePath,
		NodeCertCABundlePath: w.NodeCertCABundlePath,
		CertPath:             w.CertPath,
		KeyPath:              w.KeyPath,
		Package:              w.Package,
	}
}

// bundleKeys and packageKeys are the exact key sets of the first-boot
// contract; a test pins them against the struct tags.
var (
	bundleKeys = []string{
		"bundle_version", "GPUAAS_NODE_ID", "GPUAAS_ENROLLMENT_TOKEN", "GPUAAS_API_URL",
		"GPUAAS_TASK_SIGNING_PUBKEYS", "ca_bundle_pem", "ca_fingerprint", "GPUAAS_CA_BUNDLE_PATH",
		"GPUAAS_NODE_CERT_CA_BUNDLE_PATH", "GPUAAS_CERT_PATH", "GPUAAS_KEY_PATH", "package",
	}
	packageKeys = []string{
		"oci_ref", "digest", "pull_delivery_mode", "install_root", "env_file_path", "systemd_unit_name",
	}
	siteKeys = []string{"url", "version", "sha256", "oci_ref", "oci_digest"}
)

var siteOCIRefPattern = boundedPattern{regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9./:@_-]*$`), 512}

// checkSite validates the site bootstrap reference before it reaches a
// node: a fetchable URL and a version are required (the version is how a
// node-side failure is attributed), the optional digests must be well
// formed. Errors are *BundleError on "site_bootstrap.<key>".
func checkSite(site domain.BootstrapRef) error {
	if err := checkHTTPURL(site.URL); err != nil {
		return bundleErr("site_bootstrap.url", err.Error())
	}
	if !versionPattern.MatchString(site.Version) {
		return bundleErr("site_bootstrap.version", "must be 1-64 letters, digits or ._+/- starting with a letter or digit")
	}
	if site.SHA256 != "" && !sha256Pattern.MatchString(site.SHA256) {
		return bundleErr("site_bootstrap.sha256", "must be 64 lower-case hex digits")
	}
	if site.OCIRef != "" && !siteOCIRefPattern.MatchString(site.OCIRef) {
		return bundleErr("site_bootstrap.oci_ref", "must be an OCI reference without spaces or quotes")
	}
	if site.OCIDigest != "" && !digestPattern.MatchString(site.OCIDigest) {
		return bundleErr("site_bootstrap.oci_digest", "must be sha256: followed by 64 lower-case hex digits")
	}
	return nil
}

// RenderUserData renders the decoded cloud-init user_data of the first-boot
// contract (MAAS receives it base64-encoded):
//
//	#cloud-config
//	# maasflow first-boot payload
//	# site-bootstrap <site version>; node-bootstrap <BundleVersion>
//	write_files:
//	  - SiteBootstrapPath, 0600, b64 of {"url","version","sha256","oci_ref","oci_digest"}
//	  - NodeBundlePath,    0600, b64 of the node bootstrap bundle JSON (real token)
//	runcmd:
//	  - [/bin/sh, -c, <site launcher>]
//	  - [/bin/sh, -c, <node-agent bootstrap>]
//
// The site bootstrap comes first in both lists. Its CA bundle field is not
// rendered: the node trusts what the node bundle's ca_bundle_pem carries.
// Both the site reference and the bundle are validated first, so a
// placeholder CA or a missing version fails here, before deploy, as a
// *BundleError. The result holds the token: never log it.
func RenderUserData(site domain.BootstrapRef, b Bundle) ([]byte, error) {
	if err := checkSite(site); err != nil {
		return nil, err
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	siteJSON, err := json.Marshal(siteWire{
		URL: site.URL, Version: site.Version, SHA256: site.SHA256,
		OCIRef: site.OCIRef, OCIDigest: site.OCIDigest,
	})
	if err != nil {
		return nil, fmt.Errorf("render user_data: marshal site bootstrap: %w", err)
	}
	nodeJSON, err := json.Marshal(toWire(b))
	if err != nil {
		// json.Marshal of these plain types cannot fail; the message stays
		// generic because the value holds the token.
		return nil, bundleErr("user_data", "node bootstrap bundle does not marshal")
	}

	var buf bytes.Buffer
	buf.WriteString("#cloud-config\n# maasflow first-boot payload\n")
	fmt.Fprintf(&buf, "# site-bootstrap %s; node-bootstrap %s\n", site.Version, b.BundleVersion)
	buf.WriteString("write_files:\n")
	writeFile(&buf, SiteBootstrapPath, siteJSON)
	writeFile(&buf, NodeBundlePath, nodeJSON)
	buf.WriteString("runcmd:\n")
	for _, script := range []string{siteLauncher, nodeBootstrap} {
		if err := writeCommand(&buf, script); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

func writeFile(buf *bytes.Buffer, path string, content []byte) {
	fmt.Fprintf(buf, "  - path: %s\n    permissions: '%s'\n    encoding: b64\n    content: %s\n",
		path, filePermissions, base64.StdEncoding.EncodeToString(content))
}

// writeCommand writes one runcmd entry as a YAML flow sequence. The script is
// quoted as a JSON string, which is a valid YAML double-quoted scalar.
func writeCommand(buf *bytes.Buffer, script string) error {
	var q bytes.Buffer
	enc := json.NewEncoder(&q)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(script); err != nil {
		return fmt.Errorf("render user_data: quote runcmd: %w", err)
	}
	fmt.Fprintf(buf, "  - [/bin/sh, -c, %s]\n", bytes.TrimRight(q.Bytes(), "\n"))
	return nil
}

type cloudConfig struct {
	WriteFiles []struct {
		Path        string `yaml:"path"`
		Permissions string `yaml:"permissions"`
		Encoding    string `yaml:"encoding"`
		Content     string `yaml:"content"`
	} `yaml:"write_files"`
	RunCmd [][]string `yaml:"runcmd"`
}

// ParseUserData is the inverse of RenderUserData: it reads the decoded
// user_data, checks the contract's shape (the #cloud-config line, both files
// in order, 0600 and b64, both commands in order, the exact key sets) and
// validates both parts as RenderUserData does. The MAAS simulator calls it
// when it plays the node, so a payload a real node would choke on fails
// here. The returned BootstrapRef has no CABundle (it is not rendered).
// Errors are *BundleError and never quote the payload.
func ParseUserData(userData []byte) (domain.BootstrapRef, Bundle, error) {
	var none domain.BootstrapRef
	firstLine, _, _ := bytes.Cut(userData, []byte("\n"))
	if string(bytes.TrimRight(firstLine, "\r")) != "#cloud-config" {
		return none, Bundle{}, bundleErr("user_data", "first line is not #cloud-config")
	}
	var cc cloudConfig
	if err := yaml.Unmarshal(userData, &cc); err != nil {
		return none, Bundle{}, bundleErr("user_data", "is not a valid cloud-config document")
	}
	if len(cc.WriteFiles) != 2 || cc.WriteFiles[0].Path != SiteBootstrapPath || cc.WriteFiles[1].Path != NodeBundlePath {
		return none, Bundle{}, bundleErr("user_data", "write_files must be "+SiteBootstrapPath+" then "+NodeBundlePath)
	}
	contents := make([][]byte, len(cc.WriteFiles))
	for i, f := range cc.WriteFiles {
		if f.Permissions != filePermissions || f.Encoding != "b64" {
			return none, Bundle{}, bundleErr("user_data", f.Path+" must be written 0600 with b64 encoding")
		}
		raw, err := base64.StdEncoding.DecodeString(f.Content)
		if err != nil {
			return none, Bundle{}, bundleErr("user_data", f.Path+" content is not base64")
		}
		contents[i] = raw
	}
	if len(cc.RunCmd) != 2 || !isShellCommand(cc.RunCmd[0], SiteBootstrapPath) || !isShellCommand(cc.RunCmd[1], NodeBundlePath) {
		return none, Bundle{}, bundleErr("user_data", "runcmd must run the site bootstrap, then the node bootstrap")
	}

	var sw siteWire
	if err := decodeExact(contents[0], &sw, siteKeys, nil); err != nil {
		return none, Bundle{}, bundleErr("site_bootstrap", err.Error())
	}
	site := domain.BootstrapRef{URL: sw.URL, Version: sw.Version, SHA256: sw.SHA256, OCIRef: sw.OCIRef, OCIDigest: sw.OCIDigest}
	if err := checkSite(site); err != nil {
		return none, Bundle{}, err
	}

	var wb wireBundle
	if err := decodeExact(contents[1], &wb, bundleKeys, map[string][]string{"package": packageKeys}); err != nil {
		return none, Bundle{}, bundleErr("node_bootstrap", err.Error())
	}
	b := fromWire(wb)
	if err := b.Validate(); err != nil {
		return none, Bundle{}, err
	}
	return site, b, nil
}

func isShellCommand(cmd []string, reads string) bool {
	return len(cmd) == 3 && cmd[0] == "/bin/sh" && cmd[1] == "-c" && strings.Contains(cmd[2], reads)
}

// decodeExact decodes a JSON object whose keys must be exactly keys (and,
// for the nested objects named in nested, exactly those). Reasons name keys,
// never values.
func decodeExact(data []byte, dst any, keys []string, nested map[string][]string) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return reasonError("is not a JSON object")
	}
	if err := sameKeys(obj, keys); err != nil {
		return err
	}
	for name, want := range nested {
		var inner map[string]json.RawMessage
		if err := json.Unmarshal(obj[name], &inner); err != nil {
			return reasonError(name + " is not a JSON object")
		}
		if err := sameKeys(inner, want); err != nil {
			return reasonError(name + ": " + err.Error())
		}
	}
	if err := json.Unmarshal(data, dst); err != nil {
		return reasonError("has a value of the wrong JSON type")
	}
	return nil
}

func sameKeys(obj map[string]json.RawMessage, want []string) error {
	var missing, extra []string
	wanted := make(map[string]bool, len(want))
	for _, k := range want {
		wanted[k] = true
		if _, ok := obj[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k := range obj {
		if !wanted[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	switch {
	case len(missing) > 0:
		return reasonError("missing keys " + strings.Join(missing, ", "))
	case len(extra) > 0:
		return reasonError(fmt.Sprintf("unknown keys %q", extra))
	}
	return nil
}
