package main

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/maasflow/maasflow/client"
	"github.com/maasflow/maasflow/shared/connector/rolesanywhere"
)

// The running connector's own renewal (--renew-api-url): it checks every
// hour and renews when less than three days are left, so a connector up
// for the certificate's 7 days renews on day 4, and a failed attempt is
// tried again every hour for three days before the certificate lapses.
const (
	renewBefore     = 72 * time.Hour
	renewCheckEvery = time.Hour
)

// renewOptions are `maasflow connector renew`'s flags.
type renewOptions struct {
	dir, apiURL string
	// within: renew only when the certificate ends sooner than this.
	within time.Duration
}

// renewCommand is `maasflow connector renew`: the connector's own renewal,
// with no admin token (docs/decisions.md, "A connector renews its
// certificate with its key").
func (c *cli) renewCommand() *cobra.Command {
	o := &renewOptions{}
	cmd := &cobra.Command{
		Use:   "renew --dir DIR",
		Short: "renew the connector's certificate with the current one: no admin token",
		Long: `Send the current certificate in --dir and a CSR over its key to
POST /api/v1/connectors/{site}/certificate and write the new certificate where
` + "`maasflow connector --credentials-dir`" + ` reads it (from its next session).
The certificate must still be valid and the site active and on the connector
path; otherwise run ` + "`maasflow connector enroll`" + ` with an admin token. Run it from
a timer: with --within it does nothing while the certificate has longer left.`,
		Args: noPositional,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if code := o.run(cmd.Context(), os.Getenv, time.Now, c.env.stdout, c.env.stderr); code != 0 {
				c.err = &adminExitCodeError{Code: code}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.dir, "dir", "", "the directory `maasflow connector enroll` wrote (required)")
	cmd.Flags().StringVar(&o.apiURL, "api-url", "", "the API's base URL (default $MAASFLOW_API_URL)")
	cmd.Flags().DurationVar(&o.within, "within", 0, "renew only when the certificate expires within this (e.g. 72h); 0 renews now")
	return cmd
}

func (o *renewOptions) run(ctx context.Context, getenv func(string) string, now func() time.Time, stdout, stderr io.Writer) int {
	apiURL := o.apiURL
	if apiURL == "" {
		apiURL = getenv("MAASFLOW_API_URL")
	}
	switch {
	case o.dir == "":
		fmt.Fprintln(stderr, "maasflow connector renew: --dir is required")
		return 2
	case apiURL == "":
		fmt.Fprintln(stderr, "maasflow connector renew: --api-url or $MAASFLOW_API_URL is required")
		return 2
	}
	if _, err := o.renew(ctx, apiURL, now(), stdout); err != nil {
		fmt.Fprintf(stderr, "maasflow connector renew: %v\n", err)
		return 1
	}
	return 0
}

// loop renews the certificate in o.dir at once if it is due and then every
// `every`, until ctx ends; a failure is logged and tried again.
func (o *renewOptions) loop(ctx context.Context, logger *slog.Logger, every time.Duration, now func() time.Time) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		var out strings.Builder
		renewed, err := o.renew(ctx, o.apiURL, now(), &out)
		switch {
		case err != nil:
			logger.Warn("connector certificate not renewed: tried again in "+every.String(), "error", err.Error())
		case renewed:
			logger.Info(strings.TrimSpace(out.String()))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// renew renews the certificate unless more than o.within is left; renewed
// says whether it did.
func (o *renewOptions) renew(ctx context.Context, apiURL string, now time.Time, stdout io.Writer) (renewed bool, err error) {
	names, err := readConnectorNames(o.dir)
	if err != nil {
		return false, err
	}
	certFile := filepath.Join(o.dir, enrollCertFile)
	id, err := rolesanywhere.LoadIdentity(certFile, filepath.Join(o.dir, enrollKeyFile))
	if err != nil {
		return false, err
	}
	if left := id.Cert.NotAfter.Sub(now); o.within > 0 && left > o.within {
		fmt.Fprintf(stdout, "connector certificate of site %s valid until %s: not renewed (more than %s left)\n",
			names.SiteID, id.Cert.NotAfter.Format(time.RFC3339), o.within)
		return false, nil
	}
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return false, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: names.SiteID}}, id.Key)
	if err != nil {
		return false, err
	}
	api, err := client.New(apiURL, client.WithHTTPClient(&http.Client{Timeout: 30 * time.Second}), client.WithUserAgent("maasflow-connector"))
	if err != nil {
		return false, err
	}
	got, err := api.RenewConnectorCertificate(ctx, names.SiteID, string(certPEM),
		string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})))
	if err != nil {
		return false, err
	}
	// Written, a certificate over another key would leave the connector
	// with one it can neither use nor renew.
	if err := overKey(got.CertificatePEM, id.Key.Public()); err != nil {
		return false, err
	}
	if err := writeCertificate(o.dir, got); err != nil {
		return false, err
	}
	fmt.Fprintf(stdout, "connector certificate for site %s renewed (serial %s) valid until %s\n",
		got.SiteID, got.Serial, got.NotAfter.Format(time.RFC3339))
	return true, nil
}

// overKey checks that certPEM is a certificate over key.
func overKey(certPEM string, key crypto.PublicKey) error {
	block, _ := pem.Decode([]byte(certPEM))
	if block == nil || block.Type != "CERTIFICATE" {
		return fmt.Errorf("the renewed certificate is not a PEM CERTIFICATE: nothing written")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return fmt.Errorf("the renewed certificate does not parse: nothing written")
	}
	if k, ok := cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); !ok || !k.Equal(key) {
		return fmt.Errorf("the renewed certificate is not over the connector's key: nothing written")
	}
	return nil
}
