package enroll

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/maasflow/maasflow/shared/domain"
)

// seedToken is recognisable in any output it leaks into.
const seedToken = "SEEDTOKENxq7Zr2VwLk9PmN4tB8yHc3dFgJ5sA1eU6"

func testCA(t testing.TB) string {
	t.Helper()
	ca, err := DevCA()
	require.NoError(t, err)
	return ca
}

func validInput(t testing.TB) BundleInput {
	t.Helper()
	return BundleInput{
		NodeID:             "node-7f3a",
		APIURL:             "https://api.internal:8443",
		Token:              seedToken,
		TaskSigningPubKeys: []string{"ed25519:AAAAC3NzaC1lZDI1NTE5AAAAIK0", "ed25519:AAAAC3NzaC1lZDI1NTE5AAAAIK1"},
		CABundlePEM:        testCA(t),
		Package:            DevPackage(),
	}
}

func validSite() domain.BootstrapRef {
	return domain.BootstrapRef{
		URL:       "https://bootstrap.internal/site/launcher.sh",
		Version:   "site-2024.06.1",
		SHA256:    strings.Repeat("ab", 32),
		OCIRef:    "registry.internal/infra/site-bootstrap:2024.06.1",
		OCIDigest: "sha256:" + strings.Repeat("cd", 32),
	}
}

func TestNewToken(t *testing.T) {
	a, err := NewToken()
	require.NoError(t, err)
	b, err := NewToken()
	require.NoError(t, err)

	raw, err := base64.RawURLEncoding.DecodeString(a.Reveal())
	require.NoError(t, err)
	assert.Len(t, raw, 32)
	assert.Len(t, a.Reveal(), 43)
	assert.NotEqual(t, a.Reveal(), b.Reveal())
	assert.Equal(t, "[redacted]", fmt.Sprint(a))
}

func TestHashToken(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			assert.Equal(t, tt.want, HashToken(tt.in))
		})
	}
}

func TestTokenMatches(t *testing.T) {
	tok, err := NewToken()
	require.NoError(t, err)
	other, err := NewToken()
	require.NoError(t, err)
	h := HashToken(tok.Reveal())
	assert.True(t, TokenMatches(tok, h))
	assert.False(t, TokenMatches(other, h))
	assert.False(t, TokenMatches(tok, ""))
	assert.False(t, TokenMatches(tok, strings.ToUpper(h)), "hashes are lower-case hex")
}

func TestCheckCABundle(t *testing.T) {
	ca := testCA(t)
	other := selfSigned(t)
	block, _ := pem.Decode([]byte(ca))
	require.NotNil(t, block)
	corrupt := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: block.Bytes[:len(block.Bytes)/2]})
	key := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("not really a key")})

	tests := []struct {
		name    string
		pem     string
		wantErr string
	}{
		{name: "dev CA", pem: ca},
		{name: "two certificates with surrounding blank lines", pem: "\n" + ca + "\n" + other + "\n"},
		{name: "template placeholder", pem: "<BOOTSTRAP_BUNDLE_CA_PEM>", wantErr: "template placeholder"},
		{name: "placeholder in a heredoc", pem: "cat <<'EOF'\n<BOOTSTRAP_BUNDLE_CA_PEM>\nEOF\n", wantErr: "template placeholder"},
		{name: "empty", pem: "", wantErr: "holds no certificate"},
		{name: "whitespace", pem: " \n\t", wantErr: "holds no certificate"},
		{name: "garbage", pem: "hello world", wantErr: "not PEM"},
		{name: "placeholder before a real certificate", pem: "<CA>\n" + ca, wantErr: "template placeholder"},
		{name: "text after the certificate", pem: ca + "<BOOTSTRAP_BUNDLE_CA_PEM>\n", wantErr: "text after certificate 1"},
		{name: "private key", pem: string(key), wantErr: `"PRIVATE KEY", want CERTIFICATE`},
		{name: "truncated block", pem: ca[:len(ca)-30], wantErr: "truncated or malformed"},
		{name: "certificate bytes that do not parse", pem: string(corrupt), wantErr: "does not parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckCABundle(tt.pem)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			var be *BundleError
			require.ErrorAs(t, err, &be)
			assert.Equal(t, "ca_bundle_pem", be.Field)
			assert.Contains(t, be.Error(), tt.wantErr)
			if len(tt.pem) > 8 {
				assert.NotContains(t, be.Error(), strings.TrimSpace(tt.pem))
			}
		})
	}
}

func selfSigned(t testing.TB) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), strings.NewReader(strings.Repeat("deterministic entropy ", 20)))
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: bigOne(), BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(bytes.NewReader(bytes.Repeat([]byte{7}, 512)), tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func TestFingerprint(t *testing.T) {
	ca := testCA(t)
	other := selfSigned(t)
	block, _ := pem.Decode([]byte(ca))
	require.NotNil(t, block)
	sum := sha256.Sum256(block.Bytes)

	fp, err := Fingerprint(ca + other)
	require.NoError(t, err)
	assert.Len(t, fp, 32*3-1)
	assert.Equal(t, strings.ToUpper(fmt.Sprintf("%x", sum[:])), strings.ReplaceAll(fp, ":", ""), "the first certificate decides")
	assert.Regexp(t, `^([0-9A-F]{2}:){31}[0-9A-F]{2}$`, fp)
}

func TestNewBundle(t *testing.T) {
	tests := []struct {
		name      string
		mutate    func(*BundleInput)
		wantField string
	}{
		{name: "valid", mutate: func(*BundleInput) {}},
		{name: "no signing keys is an empty list", mutate: func(in *BundleInput) { in.TaskSigningPubKeys = nil }},
		{name: "package defaults", mutate: func(in *BundleInput) {
			in.Package = Package{OCIRef: "registry.internal/gpuaas/node-agent:1.4.2", Digest: "sha256:" + strings.Repeat("0f", 32)}
		}},
		{name: "missing node id", mutate: func(in *BundleInput) { in.NodeID = "" }, wantField: "GPUAAS_NODE_ID"},
		{name: "node id with a slash", mutate: func(in *BundleInput) { in.NodeID = "a/b" }, wantField: "GPUAAS_NODE_ID"},
		{name: "missing token", mutate: func(in *BundleInput) { in.Token = "" }, wantField: "GPUAAS_ENROLLMENT_TOKEN"},
		{name: "token with a quote", mutate: func(in *BundleInput) { in.Token = seedToken + `"` }, wantField: "GPUAAS_ENROLLMENT_TOKEN"},
		{name: "missing API URL", mutate: func(in *BundleInput) { in.APIURL = "" }, wantField: "GPUAAS_API_URL"},
		{name: "relative API URL", mutate: func(in *BundleInput) { in.APIURL = "api.internal/v1" }, wantField: "GPUAAS_API_URL"},
		{name: "API URL with credentials", mutate: func(in *BundleInput) { in.APIURL = "https://u:p@api.internal" }, wantField: "GPUAAS_API_URL"},
		{name: "API URL placeholder", mutate: func(in *BundleInput) { in.APIURL = "<BOOTSTRAP_BUNDLE_API_URL>" }, wantField: "GPUAAS_API_URL"},
		{name: "placeholder CA", mutate: func(in *BundleInput) { in.CABundlePEM = "<BOOTSTRAP_BUNDLE_CA_PEM>" }, wantField: "ca_bundle_pem"},
		{name: "garbage CA", mutate: func(in *BundleInput) {
			in.CABundlePEM = "-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n"
		}, wantField: "ca_bundle_pem"},
		{name: "multi-line signing key", mutate: func(in *BundleInput) { in.TaskSigningPubKeys = []string{"a\nb"} }, wantField: "GPUAAS_TASK_SIGNING_PUBKEYS"},
		{name: "signing key with a comma", mutate: func(in *BundleInput) { in.TaskSigningPubKeys = []string{"a,b"} }, wantField: "GPUAAS_TASK_SIGNING_PUBKEYS"},
		{name: "missing OCI ref", mutate: func(in *BundleInput) { in.Package.OCIRef = "" }, wantField: "package.oci_ref"},
		{name: "OCI ref with a digest", mutate: func(in *BundleInput) { in.Package.OCIRef += "@sha256:" + strings.Repeat("a", 64) }, wantField: "package.oci_ref"},
		{name: "missing digest", mutate: func(in *BundleInput) { in.Package.Digest = "" }, wantField: "package.digest"},
		{name: "short digest", mutate: func(in *BundleInput) { in.Package.Digest = "sha256:abc" }, wantField: "package.digest"},
		{name: "unknown pull mode", mutate: func(in *BundleInput) { in.Package.PullDeliveryMode = "scp" }, wantField: "package.pull_delivery_mode"},
		{name: "relative install root", mutate: func(in *BundleInput) { in.Package.InstallRoot = "opt/agent" }, wantField: "package.install_root"},
		{name: "env file path with a space", mutate: func(in *BundleInput) { in.Package.EnvFilePath = "/etc/a b" }, wantField: "package.env_file_path"},
		{name: "unit without .service", mutate: func(in *BundleInput) { in.Package.SystemdUnitName = "agent" }, wantField: "package.systemd_unit_name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := validInput(t)
			tt.mutate(&in)
			b, err := NewBundle(in)
			if tt.wantField != "" {
				var be *BundleError
				require.ErrorAs(t, err, &be)
				assert.Equal(t, tt.wantField, be.Field)
				assert.NotContains(t, err.Error(), seedToken)
				assert.Equal(t, Bundle{}, b)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, BundleVersion, b.BundleVersion)
			assert.Equal(t, in.NodeID, b.NodeID)
			assert.Equal(t, in.Token.Reveal(), b.EnrollmentToken.Reveal())
			assert.NotNil(t, b.TaskSigningPubKeys)
			assert.Equal(t, DefaultCABundlePath, b.CABundlePath)
			assert.Equal(t, DefaultNodeCertCABundlePath, b.NodeCertCABundlePath)
			assert.Equal(t, DefaultCertPath, b.CertPath)
			assert.Equal(t, DefaultKeyPath, b.KeyPath)
			assert.Equal(t, PullAnonymous, b.Package.PullDeliveryMode)
			assert.Equal(t, DefaultInstallRoot, b.Package.InstallRoot)
			assert.Equal(t, DefaultEnvFilePath, b.Package.EnvFilePath)
			assert.Equal(t, DefaultSystemdUnitName, b.Package.SystemdUnitName)
			fp, err := Fingerprint(in.CABundlePEM)
			require.NoError(t, err)
			assert.Equal(t, fp, b.CAFingerprint)
		})
	}
}

func TestNewBundleCopiesKeys(t *testing.T) {
	in := validInput(t)
	b, err := NewBundle(in)
	require.NoError(t, err)
	in.TaskSigningPubKeys[0] = "changed"
	assert.NotEqual(t, "changed", b.TaskSigningPubKeys[0], "the bundle must not alias the caller's slice")
}

func TestRenderParseRoundTrip(t *testing.T) {
	b, err := NewBundle(validInput(t))
	require.NoError(t, err)
	site := validSite()

	ud, err := RenderUserData(site, b)
	require.NoError(t, err)
	gotSite, gotBundle, err := ParseUserData(ud)
	require.NoError(t, err)

	assert.Equal(t, site, gotSite)
	assert.Equal(t, b, gotBundle)
	assert.Equal(t, seedToken, gotBundle.EnrollmentToken.Reveal(), "the real token travels in user_data")

	// Every field survives: a field forgotten in toWire/fromWire would come
	// back zero and differ above; this pins that each one was set at all.
	w := toWire(gotBundle)
	raw, err := json.Marshal(w)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	for k, v := range m {
		assert.NotEmpty(t, v, k)
	}
}

func TestRenderUserDataShape(t *testing.T) {
	b, err := NewBundle(validInput(t))
	require.NoError(t, err)
	site := validSite()
	ud, err := RenderUserData(site, b)
	require.NoError(t, err)
	text := string(ud)

	lines := strings.Split(text, "\n")
	require.GreaterOrEqual(t, len(lines), 3)
	assert.Equal(t, "#cloud-config", lines[0])
	assert.Equal(t, "# maasflow first-boot payload", lines[1])
	assert.Equal(t, "# site-bootstrap site-2024.06.1; node-bootstrap node-bootstrap/v1", lines[2])

	var doc struct {
		WriteFiles []map[string]string `yaml:"write_files"`
		RunCmd     [][]string          `yaml:"runcmd"`
	}
	require.NoError(t, yaml.Unmarshal(ud, &doc), "user_data must be valid YAML")
	var generic map[string]any
	require.NoError(t, yaml.Unmarshal(ud, &generic))
	assert.ElementsMatch(t, []string{"write_files", "runcmd"}, keysOf(generic))

	require.Len(t, doc.WriteFiles, 2)
	assert.Equal(t, SiteBootstrapPath, doc.WriteFiles[0]["path"], "site part first")
	assert.Equal(t, NodeBundlePath, doc.WriteFiles[1]["path"])
	for _, f := range doc.WriteFiles {
		assert.Equal(t, "0600", f["permissions"])
		assert.Equal(t, "b64", f["encoding"])
	}
	require.Len(t, doc.RunCmd, 2)
	for i, reads := range []string{SiteBootstrapPath, NodeBundlePath} {
		require.Len(t, doc.RunCmd[i], 3)
		assert.Equal(t, []string{"/bin/sh", "-c"}, doc.RunCmd[i][:2])
		assert.Contains(t, doc.RunCmd[i][2], reads)
	}
	assert.Equal(t, siteLauncher, doc.RunCmd[0][2])
	assert.Equal(t, nodeBootstrap, doc.RunCmd[1][2])
	assert.Contains(t, doc.RunCmd[1][2], siteOKMarker, "node bootstrap waits on the site bootstrap")
	assert.Less(t, strings.Index(text, SiteBootstrapPath), strings.Index(text, NodeBundlePath))

	siteJSON := decodeContent(t, doc.WriteFiles[0]["content"])
	assert.JSONEq(t, `{"url":"https://bootstrap.internal/site/launcher.sh","version":"site-2024.06.1",
		"sha256":"`+site.SHA256+`","oci_ref":"`+site.OCIRef+`","oci_digest":"`+site.OCIDigest+`"}`, string(siteJSON))

	// Every key requirements runbook "Bootstrap Procedure" lists, and nothing else.
	var bundle map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(decodeContent(t, doc.WriteFiles[1]["content"]), &bundle))
	assert.ElementsMatch(t, []string{
		"bundle_version", "GPUAAS_NODE_ID", "GPUAAS_ENROLLMENT_TOKEN", "GPUAAS_API_URL",
		"GPUAAS_TASK_SIGNING_PUBKEYS", "ca_bundle_pem", "ca_fingerprint", "GPUAAS_CA_BUNDLE_PATH",
		"GPUAAS_NODE_CERT_CA_BUNDLE_PATH", "GPUAAS_CERT_PATH", "GPUAAS_KEY_PATH", "package",
	}, keysOfRaw(bundle))
	var pkg map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(bundle["package"], &pkg))
	assert.ElementsMatch(t, []string{
		"oci_ref", "digest", "pull_delivery_mode", "install_root", "env_file_path", "systemd_unit_name",
	}, keysOfRaw(pkg))
	assert.JSONEq(t, `"`+seedToken+`"`, string(bundle["GPUAAS_ENROLLMENT_TOKEN"]))
	assert.JSONEq(t, `"node-bootstrap/v1"`, string(bundle["bundle_version"]))
	assert.JSONEq(t, `["ed25519:AAAAC3NzaC1lZDI1NTE5AAAAIK0","ed25519:AAAAC3NzaC1lZDI1NTE5AAAAIK1"]`, string(bundle["GPUAAS_TASK_SIGNING_PUBKEYS"]))

	// The scripts are constants: nothing from the bundle or policy is in them.
	for _, cmd := range doc.RunCmd {
		assert.NotContains(t, cmd[2], seedToken)
		assert.NotContains(t, cmd[2], site.URL)
	}
}

func TestRenderUserDataRejects(t *testing.T) {
	good, err := NewBundle(validInput(t))
	require.NoError(t, err)
	tests := []struct {
		name      string
		site      func(*domain.BootstrapRef)
		bundle    func(*Bundle)
		wantField string
	}{
		{name: "site without URL", site: func(s *domain.BootstrapRef) { s.URL = "" }, wantField: "site_bootstrap.url"},
		{name: "site URL with a quote", site: func(s *domain.BootstrapRef) { s.URL = "https://x/'; rm -rf /" }, wantField: "site_bootstrap.url"},
		{name: "site without version", site: func(s *domain.BootstrapRef) { s.Version = "" }, wantField: "site_bootstrap.version"},
		{name: "site version with a newline", site: func(s *domain.BootstrapRef) { s.Version = "v1\nruncmd: []" }, wantField: "site_bootstrap.version"},
		{name: "site sha256 malformed", site: func(s *domain.BootstrapRef) { s.SHA256 = "abc" }, wantField: "site_bootstrap.sha256"},
		{name: "site oci digest malformed", site: func(s *domain.BootstrapRef) { s.OCIDigest = "sha256:zz" }, wantField: "site_bootstrap.oci_digest"},
		{name: "site oci ref with a space", site: func(s *domain.BootstrapRef) { s.OCIRef = "a b" }, wantField: "site_bootstrap.oci_ref"},
		{name: "zero bundle", bundle: func(b *Bundle) { *b = Bundle{} }, wantField: "bundle_version"},
		{name: "placeholder CA", bundle: func(b *Bundle) { b.CABundlePEM = "<BOOTSTRAP_BUNDLE_CA_PEM>" }, wantField: "ca_bundle_pem"},
		{name: "fingerprint of another CA", bundle: func(b *Bundle) { b.CAFingerprint = strings.Repeat("00:", 31) + "00" }, wantField: "ca_fingerprint"},
		{name: "nil signing keys", bundle: func(b *Bundle) { b.TaskSigningPubKeys = nil }, wantField: "GPUAAS_TASK_SIGNING_PUBKEYS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			site, b := validSite(), good
			b.TaskSigningPubKeys = append([]string{}, good.TaskSigningPubKeys...)
			if tt.site != nil {
				tt.site(&site)
			}
			if tt.bundle != nil {
				tt.bundle(&b)
			}
			ud, err := RenderUserData(site, b)
			var be *BundleError
			require.ErrorAs(t, err, &be)
			assert.Equal(t, tt.wantField, be.Field)
			assert.Nil(t, ud)
			assert.NotContains(t, err.Error(), seedToken)
		})
	}
}

func TestParseUserDataRejects(t *testing.T) {
	b, err := NewBundle(validInput(t))
	require.NoError(t, err)
	good, err := RenderUserData(validSite(), b)
	require.NoError(t, err)

	// rewrite edits the decoded node bundle JSON and re-renders the file.
	rewrite := func(edit func(m map[string]any)) []byte {
		var doc struct {
			WriteFiles []map[string]string `yaml:"write_files"`
		}
		require.NoError(t, yaml.Unmarshal(good, &doc))
		var m map[string]any
		require.NoError(t, json.Unmarshal(decodeContent(t, doc.WriteFiles[1]["content"]), &m))
		edit(m)
		raw, err := json.Marshal(m)
		require.NoError(t, err)
		return bytes.Replace(good, []byte(doc.WriteFiles[1]["content"]), []byte(base64.StdEncoding.EncodeToString(raw)), 1)
	}
	swapped := bytes.ReplaceAll(bytes.ReplaceAll(good, []byte(SiteBootstrapPath), []byte("@@SITE@@")), []byte(NodeBundlePath), []byte(SiteBootstrapPath))
	swapped = bytes.ReplaceAll(swapped, []byte("@@SITE@@"), []byte(NodeBundlePath))

	tests := []struct {
		name      string
		userData  []byte
		wantField string
		wantText  string
	}{
		{name: "no cloud-config line", userData: bytes.TrimPrefix(good, []byte("#cloud-config\n")), wantField: "user_data", wantText: "#cloud-config"},
		{name: "not YAML", userData: []byte("#cloud-config\nwrite_files: [\n"), wantField: "user_data", wantText: "not a valid cloud-config"},
		{name: "empty document", userData: []byte("#cloud-config\n"), wantField: "user_data", wantText: "write_files"},
		{name: "files swapped", userData: swapped, wantField: "user_data", wantText: "write_files must be"},
		{name: "content not base64", userData: bytes.Replace(good, []byte("content: "), []byte("content: -_"), 1), wantField: "user_data", wantText: "not base64"},
		{name: "missing key", userData: rewrite(func(m map[string]any) { delete(m, "GPUAAS_KEY_PATH") }), wantField: "node_bootstrap", wantText: "missing keys GPUAAS_KEY_PATH"},
		{name: "extra key", userData: rewrite(func(m map[string]any) { m["debug"] = true }), wantField: "node_bootstrap", wantText: `unknown keys ["debug"]`},
		{name: "missing package key", userData: rewrite(func(m map[string]any) { delete(m["package"].(map[string]any), "digest") }), wantField: "node_bootstrap", wantText: "package: missing keys digest"},
		{name: "wrong version", userData: rewrite(func(m map[string]any) { m["bundle_version"] = "node-bootstrap/v0" }), wantField: "bundle_version"},
		{name: "tampered fingerprint", userData: rewrite(func(m map[string]any) { m["ca_fingerprint"] = "AB" }), wantField: "ca_fingerprint"},
		{name: "wrong JSON type", userData: rewrite(func(m map[string]any) { m["GPUAAS_NODE_ID"] = 7 }), wantField: "node_bootstrap", wantText: "wrong JSON type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseUserData(tt.userData)
			var be *BundleError
			require.ErrorAs(t, err, &be)
			assert.Equal(t, tt.wantField, be.Field)
			assert.Contains(t, be.Error(), tt.wantText)
			assert.NotContains(t, err.Error(), seedToken)
		})
	}
}

func TestBundleNeverShowsToken(t *testing.T) {
	b, err := NewBundle(validInput(t))
	require.NoError(t, err)

	js, err := json.Marshal(b)
	require.NoError(t, err)
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	logger.Info("bundle", "bundle", b, "ptr", &b)
	slog.New(slog.NewTextHandler(&logs, nil)).Info("bundle", "bundle", b)

	outputs := map[string]string{
		"%v":   fmt.Sprintf("%v", b),
		"%+v":  fmt.Sprintf("%+v", b),
		"%#v":  fmt.Sprintf("%#v", b),
		"%+v*": fmt.Sprintf("%+v", &b),
		"%s":   fmt.Sprintf("%s", b.EnrollmentToken), //nolint:staticcheck // S1025: the case checks fmt's %s verb, not String
		"json": string(js),
		"slog": logs.String(),
	}
	for name, out := range outputs {
		assert.NotContains(t, out, seedToken, name)
	}
	assert.Contains(t, string(js), `"GPUAAS_ENROLLMENT_TOKEN":"[redacted]"`)
	assert.Equal(t, seedToken, b.EnrollmentToken.Reveal())
}

func TestBundleKeysMatchStructs(t *testing.T) {
	b, err := NewBundle(validInput(t))
	require.NoError(t, err)
	for name, v := range map[string]any{"Bundle": b, "wireBundle": toWire(b)} {
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(raw, &m))
		assert.ElementsMatch(t, bundleKeys, keysOfRaw(m), name)
		var pkg map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(m["package"], &pkg))
		assert.ElementsMatch(t, packageKeys, keysOfRaw(pkg), name)
	}
	raw, err := json.Marshal(siteWire{})
	require.NoError(t, err)
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	assert.ElementsMatch(t, siteKeys, keysOfRaw(m))
}

func TestDevCA(t *testing.T) {
	a := testCA(t)
	b := testCA(t)
	assert.Equal(t, a, b, "one CA per process")
	require.NoError(t, CheckCABundle(a))

	block, _ := pem.Decode([]byte(a))
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	assert.True(t, cert.IsCA)
	assert.Equal(t, x509.ECDSA, cert.PublicKeyAlgorithm)
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	require.True(t, ok)
	assert.Equal(t, elliptic.P256(), pub.Curve)
	require.NoError(t, cert.CheckSignatureFrom(cert), "self-signed")
}

// NewSelfSignedCA makes a new CA on every call, named as asked.
func TestNewSelfSignedCA(t *testing.T) {
	a, err := NewSelfSignedCA("deployment CA")
	require.NoError(t, err)
	b, err := NewSelfSignedCA("deployment CA")
	require.NoError(t, err)
	assert.NotEqual(t, a, b, "a fresh key each time")
	require.NoError(t, CheckCABundle(a))
	block, _ := pem.Decode([]byte(a))
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	assert.Equal(t, "deployment CA", cert.Subject.CommonName)
	assert.True(t, cert.IsCA)
	dev, err := DevCA()
	require.NoError(t, err)
	assert.NotEqual(t, dev, a)
}

func TestDevPackageIsValid(t *testing.T) {
	in := validInput(t)
	in.Package = DevPackage()
	b, err := NewBundle(in)
	require.NoError(t, err)
	assert.Equal(t, DevPackage(), b.Package)
}

func BenchmarkRenderUserData(b *testing.B) {
	bundle, err := NewBundle(validInput(b))
	require.NoError(b, err)
	site := validSite()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := RenderUserData(site, bundle); err != nil {
			b.Fatal(err)
		}
	}
}

func decodeContent(t *testing.T, content string) []byte {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(content)
	require.NoError(t, err)
	return raw
}

func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func keysOfRaw(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func bigOne() *big.Int { return big.NewInt(1) }
