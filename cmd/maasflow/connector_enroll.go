package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/spf13/cobra"

	"github.com/maasflow/maasflow/client"
	"github.com/maasflow/maasflow/shared/connector/rolesanywhere"
)

// Files `maasflow connector enroll` writes in its directory; the key is
// made there and never leaves the host.
const (
	enrollKeyFile   = "connector.key"
	enrollCertFile  = "connector.crt"
	enrollCAFile    = "connector-ca.pem"
	enrollNamesFile = "connector.json"
)

// connectorNames is connector.json: what `maasflow connector
// --credentials-dir` takes its session and transport from.
type connectorNames struct {
	SiteID         string    `json:"site_id"`
	TrustAnchorARN string    `json:"trust_anchor_arn"`
	ProfileARN     string    `json:"profile_arn"`
	RoleARN        string    `json:"role_arn"`
	QueueURL       string    `json:"queue_url"`
	Table          string    `json:"table"`
	NotAfter       time.Time `json:"certificate_not_after"`
}

// enrollOptions are `maasflow connector enroll`'s flags.
type enrollOptions struct{ site, dir, apiURL string }

// enrollCommand is `maasflow connector enroll`.
func (c *cli) enrollCommand() *cobra.Command {
	o := &enrollOptions{}
	cmd := &cobra.Command{
		Use:   "enroll --site ID --dir DIR",
		Short: "get the connector's certificate: key and CSR made here, certificate signed by the connector CA",
		Long: `Make the connector's private key in --dir (kept across runs: run enroll again
to renew the certificate with the same key), send a CSR to the admin API
(POST /api/v1/admin/maas-sites/{id}/connector/certificate, with $MAASFLOW_ADMIN_TOKEN),
and write the certificate, the CA and connector.json, which
` + "`maasflow connector --credentials-dir`" + ` reads. docs/deploy.md, "Sites behind a site connector".`,
		Args: noPositional,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if code := o.run(cmd.Context(), os.Getenv, c.env.stdout, c.env.stderr); code != 0 {
				c.err = &adminExitCodeError{Code: code}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.site, "site", "", "ID of the connector site (required)")
	cmd.Flags().StringVar(&o.dir, "dir", "", "directory for the key, certificate and connector.json (required; mode 0700)")
	cmd.Flags().StringVar(&o.apiURL, "api-url", "", "the admin API's base URL (default $MAASFLOW_API_URL)")
	return cmd
}

func (o *enrollOptions) run(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer) int {
	apiURL := o.apiURL
	if apiURL == "" {
		apiURL = getenv("MAASFLOW_API_URL")
	}
	token := strings.TrimSpace(getenv("MAASFLOW_ADMIN_TOKEN"))
	var problems []string
	for _, p := range []struct {
		ok  bool
		msg string
	}{
		{o.site != "", "--site is required"}, {o.dir != "", "--dir is required"},
		{apiURL != "", "--api-url or $MAASFLOW_API_URL is required"}, {token != "", "$MAASFLOW_ADMIN_TOKEN is required (an admin's token)"},
	} {
		if !p.ok {
			problems = append(problems, p.msg)
		}
	}
	if len(problems) > 0 {
		fmt.Fprintf(stderr, "maasflow connector enroll: %s\n", strings.Join(problems, "; "))
		return 2
	}
	if err := o.enroll(ctx, apiURL, token, stdout); err != nil {
		fmt.Fprintf(stderr, "maasflow connector enroll: %v\n", err)
		return 1
	}
	return 0
}

func (o *enrollOptions) enroll(ctx context.Context, apiURL, token string, stdout io.Writer) error {
	if err := os.MkdirAll(o.dir, 0o700); err != nil {
		return err
	}
	key, err := loadOrMakeKey(filepath.Join(o.dir, enrollKeyFile))
	if err != nil {
		return err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: o.site}}, key)
	if err != nil {
		return err
	}
	api, err := client.New(apiURL, client.WithToken(token), client.WithHTTPClient(&http.Client{Timeout: 30 * time.Second}), client.WithUserAgent("maasflow-connector"))
	if err != nil {
		return err
	}
	got, err := api.IssueConnectorCertificate(ctx, o.site, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})))
	if err != nil {
		return err
	}
	if err := writeCertificate(o.dir, got); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "connector certificate for site %s (serial %s) valid until %s: run `maasflow connector renew` before then\n",
		got.SiteID, got.Serial, got.NotAfter.Format(time.RFC3339))
	return nil
}

// writeCertificate writes what the connector reads from dir: the CA,
// connector.json and, last, the certificate, each replaced at once.
func writeCertificate(dir string, got client.ConnectorCertificate) error {
	names, err := json.MarshalIndent(connectorNames{SiteID: got.SiteID, TrustAnchorARN: got.TrustAnchorARN, ProfileARN: got.ProfileARN,
		RoleARN: got.RoleARN, QueueURL: got.QueueURL, Table: got.Table, NotAfter: got.NotAfter}, "", "  ")
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{enrollCAFile, []byte(got.CAPEM)}, {enrollNamesFile, append(names, '\n')}, {enrollCertFile, []byte(got.CertificatePEM)}} {
		if err := writeAtomic(filepath.Join(dir, f.name), f.data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// loadOrMakeKey reads the connector's key, or makes a P-256 one (0600).
func loadOrMakeKey(path string) (*ecdsa.PrivateKey, error) {
	raw, err := os.ReadFile(path)
	switch {
	case err == nil:
		key, perr := rolesanywhere.ParseKey(raw)
		if perr != nil {
			return nil, fmt.Errorf("%s: %w (move it away to make a new key)", path, perr)
		}
		return key, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return key, writeAtomic(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

// writeAtomic replaces path with data, so a running connector never reads
// half a certificate.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// readConnectorNames reads connector.json from dir.
func readConnectorNames(dir string) (connectorNames, error) {
	raw, err := os.ReadFile(filepath.Join(dir, enrollNamesFile))
	if err != nil {
		return connectorNames{}, fmt.Errorf("%w (run `maasflow connector enroll` first)", err)
	}
	var n connectorNames
	if err := json.Unmarshal(raw, &n); err != nil || n.SiteID == "" || n.TrustAnchorARN == "" || n.ProfileARN == "" || n.RoleARN == "" {
		return connectorNames{}, fmt.Errorf("%s is not what `maasflow connector enroll` writes", enrollNamesFile)
	}
	return n, nil
}

// connectorAWSOptions make the AWS configuration take Roles Anywhere
// sessions with the enrolled certificate, renewed five minutes before
// they expire, in the trust anchor's region; none without a directory
// (the SDK's default chain).
func connectorAWSOptions(dir string, n *connectorNames) []func(*awsconfig.LoadOptions) error {
	if dir == "" || n == nil {
		return nil
	}
	p := &rolesanywhere.Provider{CertFile: filepath.Join(dir, enrollCertFile), KeyFile: filepath.Join(dir, enrollKeyFile),
		TrustAnchorARN: n.TrustAnchorARN, ProfileARN: n.ProfileARN, RoleARN: n.RoleARN}
	opts := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithCredentialsProvider(aws.NewCredentialsCache(p, func(o *aws.CredentialsCacheOptions) { o.ExpiryWindow = 5 * time.Minute })),
	}
	if a, err := arn.Parse(n.TrustAnchorARN); err == nil {
		opts = append(opts, awsconfig.WithRegion(a.Region))
	}
	return opts
}
