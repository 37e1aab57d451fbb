package stack

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// cdkOut is the cloud assembly TestMain synthesizes; templatePath its
// template.
var (
	cdkOut       string
	templatePath string
	assetPaths   map[string]string // asset hash → directory
	// allocations is the allocation service the template is synthesized
	// with (its URL is fixed at synth, so it outlives every lane).
	allocations *httptest.Server
	// connectorCAKey is the connector CA's key, which the lane's KMS holds
	// under connectorCAKeyARN; the template is synthesized with the CA
	// certificate it self-signed.
	connectorCAKey *ecdsa.PrivateKey
	// laneIssuer is the operators' OpenID issuer every lane's stack is
	// deployed with (its JwtIssuer parameter).
	laneIssuer *oidcIssuer
)

// issuerPath is where the allocation service's server serves the issuer.
const issuerPath = "/oidc"

// connectorCAKeyARN is the KMS key the template names for the connector CA.
const connectorCAKeyARN = "arn:aws:kms:" + laneRegion + ":" + laneAccount + ":key/c0ffee00-1a2b-4c3d-8e9f-0123456789ab"

// The allocation service's token and the secret the template names for it.
const (
	allocationToken  = "lane-allocation-token"
	allocationSecret = "dev/maasflow/allocation-service/token"
)

// TestMain builds every function for the host's architecture once (two
// compiles at a time), then synthesizes the dev stage from those
// bootstraps as make synth does, into a temporary cloud assembly.
func TestMain(m *testing.M) {
	code, err := setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "stack lane:", err)
		os.Exit(1)
	}
	if code == 0 {
		code = m.Run()
	}
	_ = os.RemoveAll(filepath.Dir(cdkOut))
	if allocations != nil {
		allocations.Close()
	}
	os.Exit(code)
}

func setup() (int, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return 1, fmt.Errorf("node is required to synthesize the CDK app (the CDK's Go bindings run on it): %w", err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		return 1, err
	}
	tmp, err := os.MkdirTemp("", "maasflow-stack-lane-")
	if err != nil {
		return 1, err
	}
	bin := filepath.Join(tmp, "bin")
	build := exec.CommandContext(context.Background(), "go", "build", "-p", "2", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", bin+"/", "./functions/...") //nolint:gosec // G204: the go toolchain on the project's own functions
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := build.CombinedOutput(); err != nil {
		return 1, fmt.Errorf("build the functions: %w\n%s", err, out)
	}
	assets := filepath.Join(tmp, "assets")
	entries, err := os.ReadDir(bin)
	if err != nil {
		return 1, err
	}
	for _, e := range entries {
		if err := os.MkdirAll(filepath.Join(assets, e.Name()), 0o750); err != nil {
			return 1, err
		}
		if err := os.Rename(filepath.Join(bin, e.Name()), filepath.Join(assets, e.Name(), "bootstrap")); err != nil {
			return 1, err
		}
	}
	cdkOut = filepath.Join(tmp, "cdk.out")
	var cdk struct {
		Context map[string]any `json:"context"`
	}
	b, err := os.ReadFile(filepath.Join(root, "cdk.json"))
	if err != nil {
		return 1, err
	}
	if err := json.Unmarshal(b, &cdk); err != nil {
		return 1, err
	}
	cdk.Context["maasflow:stage"] = "dev"
	// Declared for the instruction set the bootstraps are built for, as
	// make localstack-deploy does (TestFunctionsRunTheirDeclaredArchitecture).
	cdk.Context["maasflow:architecture"] = runtime.GOARCH
	// An allocation service with no allocations: every drain finds the node
	// free (the drain's refusals are the e2e suite's).
	// The same https server is the operators' OpenID issuer (the stack's
	// JwtIssuer), which the stream function verifies tokens against: the
	// functions trust its certificate.
	issuerMux := http.NewServeMux()
	allocations = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, issuerPath+"/") {
			issuerMux.ServeHTTP(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+allocationToken {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"items":[]}`))
	}))
	if laneIssuer, err = newOIDCIssuer("https://" + allocations.Listener.Addr().String() + issuerPath); err != nil {
		return 1, err
	}
	issuerMux.Handle(issuerPath+"/", http.StripPrefix(issuerPath, laneIssuer.handler()))
	allocations.StartTLS()
	cdk.Context["maasflow:allocationServiceUrl"] = allocations.URL
	cdk.Context["maasflow:allocationSecretName"] = allocationSecret
	// The connector CA: the stack then has the connector role, its Roles
	// Anywhere trust anchor and profile, the reply table, and the api's
	// signing and queue grants (infra/connector_access.go).
	caFile, err := writeConnectorCA(tmp)
	if err != nil {
		return 1, err
	}
	cdk.Context["maasflow:connectorCaKeyArn"] = connectorCAKeyARN
	cdk.Context["maasflow:connectorCaCertFile"] = caFile
	ctx, _ := json.Marshal(cdk.Context)
	synth := exec.CommandContext(context.Background(), "go", "run", "./infra")
	synth.Dir = root
	synth.Env = append(os.Environ(), "CDK_OUTDIR="+cdkOut, "MAASFLOW_ASSET_DIR="+assets, "CDK_CONTEXT_JSON="+string(ctx),
		"JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20")
	if out, err := synth.CombinedOutput(); err != nil {
		return 1, fmt.Errorf("synthesize: %w\n%s", err, out)
	}
	// The synthesized copies are the functions the lane runs; the build
	// output is not needed again.
	_ = os.RemoveAll(assets)
	templatePath = filepath.Join(cdkOut, "maasflow-dev.template.json")
	var manifest struct {
		Files map[string]struct {
			Source struct{ Path string } `json:"source"`
		} `json:"files"`
	}
	b, err = os.ReadFile(filepath.Join(cdkOut, "maasflow-dev.assets.json"))
	if err != nil {
		return 1, err
	}
	if err := json.Unmarshal(b, &manifest); err != nil {
		return 1, err
	}
	assetPaths = map[string]string{}
	for hash, f := range manifest.Files {
		assetPaths[hash] = filepath.Join(cdkOut, f.Source.Path)
	}
	return 0, nil
}

// writeConnectorCA makes the connector CA's key and the certificate it
// self-signed, as infra/nodeca does with the KMS key, into dir.
func writeConnectorCA(dir string) (string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "maasflow connector CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "connector-ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return "", err
	}
	connectorCAKey = key
	return path, nil
}

// assetBinary is the bootstrap of the asset with this hash.
func assetBinary(hash string) (string, bool) {
	dir, ok := assetPaths[hash]
	if !ok {
		return "", false
	}
	p := filepath.Join(dir, "bootstrap")
	_, err := os.Stat(p)
	return p, err == nil
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
