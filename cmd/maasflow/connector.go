package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/maasflow/maasflow/shared/connector"
	"github.com/maasflow/maasflow/shared/connector/sqsrelay"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// envConnectorToken carries the local transport's site token, so it stays
// out of the process list.
const envConnectorToken = "MAASFLOW_CONNECTOR_TOKEN"

// connectorVersion is set at build time (-ldflags "-X main.connectorVersion=v1.2.3");
// otherwise the module version or VCS revision the binary was built from.
var connectorVersion = ""

// connectorOptions are `maasflow connector`'s flags.
type connectorOptions struct {
	site, maasURL, keyFile, stateDir string
	endpoint, queueURL, table        string
	credentialsDir                   string
	renewAPIURL                      string
	workers                          int
	logLevel                         string
}

func (o *connectorOptions) flags(fs *pflag.FlagSet) {
	fs.StringVar(&o.site, "site", "", "ID of the site this connector serves (required)")
	fs.StringVar(&o.maasURL, "maas-url", "", "the site's MAAS region as seen from here, e.g. http://localhost:5240/MAAS (required)")
	fs.StringVar(&o.keyFile, "maas-api-key-file", "", "file holding the MAAS API key; the connector then signs requests and maasflow never holds the key")
	fs.StringVar(&o.stateDir, "state-dir", "", "directory for the journal of mutations run (default $XDG_STATE_HOME/maasflow/connector-<site>)")
	fs.StringVar(&o.endpoint, "endpoint", "", "local transport: the API URL of maasflow local; the site token is read from $"+envConnectorToken)
	fs.StringVar(&o.queueURL, "queue-url", "", "AWS transport: the site's request queue URL (stack output Connector<Site>QueueUrl); credentials from the AWS SDK chain")
	fs.StringVar(&o.table, "table", "", "AWS transport: the connector table (maasflow-<stage>-connector)")
	fs.StringVar(&o.credentialsDir, "credentials-dir", "", "AWS transport: the directory `maasflow connector enroll` wrote; the connector takes IAM Roles Anywhere sessions with its certificate (no AWS key) and its queue and table from connector.json")
	fs.StringVar(&o.renewAPIURL, "renew-api-url", "", "with --credentials-dir: the API's base URL, through which the connector renews its certificate "+renewBefore.String()+" before it expires, with no admin token (`maasflow connector renew`)")
	fs.IntVar(&o.workers, "workers", 16, "requests run in parallel")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
}

// runConnector runs `maasflow connector` with args on its own (the tests'
// entry): a flag error is exit 2.
func runConnector(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o := &connectorOptions{}
	fs := pflag.NewFlagSet("maasflow connector", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	o.flags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "maasflow connector: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	return o.run(ctx, stdout, stderr)
}

// run relays the site's MAAS calls and pre-deploy fetches from next to
// its MAAS, making only outbound connections (docs/deploy.md, "Site
// connector").
func (o *connectorOptions) run(ctx context.Context, stdout, stderr io.Writer) int {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		fmt.Fprintf(stderr, "maasflow connector: --log-level: %v\n", err)
		return 2
	}
	var problems []string
	if o.site == "" {
		problems = append(problems, "--site is required")
	}
	if o.maasURL == "" {
		problems = append(problems, "--maas-url is required")
	}
	var names *connectorNames
	if o.credentialsDir != "" {
		n, err := readConnectorNames(o.credentialsDir)
		if err != nil {
			fmt.Fprintf(stderr, "maasflow connector: --credentials-dir: %v\n", err)
			return 2
		}
		names = &n
		if o.queueURL == "" {
			o.queueURL = n.QueueURL
		}
		if o.table == "" {
			o.table = n.Table
		}
		if o.site != "" && o.site != n.SiteID {
			fmt.Fprintf(stderr, "maasflow connector: --site %s, but the certificate in --credentials-dir names site %s\n", o.site, n.SiteID)
			return 2
		}
		o.site = n.SiteID
	}
	local, aws := o.endpoint != "", o.queueURL != "" || o.table != ""
	switch {
	case local && aws:
		problems = append(problems, "--endpoint (local) and --queue-url/--table (AWS) exclude each other")
	case !local && !aws:
		problems = append(problems, "name a transport: --endpoint (local) or --queue-url and --table (AWS)")
	case aws && (o.queueURL == "" || o.table == ""):
		problems = append(problems, "the AWS transport needs both --queue-url and --table")
	case local && os.Getenv(envConnectorToken) == "":
		problems = append(problems, "the local transport needs the site token in $"+envConnectorToken)
	}
	if o.workers < 1 {
		problems = append(problems, "--workers must be at least 1")
	}
	if o.renewAPIURL != "" && o.credentialsDir == "" {
		problems = append(problems, "--renew-api-url renews the certificate in --credentials-dir: name that too")
	}
	if len(problems) > 0 {
		fmt.Fprintf(stderr, "maasflow connector: %s\n", strings.Join(problems, "; "))
		return 2
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})).With("site", o.site)

	var sign connector.Signer
	if o.keyFile != "" {
		raw, err := os.ReadFile(o.keyFile)
		if err != nil {
			fmt.Fprintf(stderr, "maasflow connector: --maas-api-key-file: %v\n", err)
			return 2
		}
		signer, err := maas.Signer(domain.Secret(strings.TrimSpace(string(raw))))
		if err != nil {
			// The MAAS client's errors never repeat the key.
			fmt.Fprintf(stderr, "maasflow connector: --maas-api-key-file: %v\n", err)
			return 2
		}
		sign = signer
	}
	if o.stateDir == "" {
		o.stateDir = filepath.Join(defaultDataDir(os.Getenv), "connector-"+o.site)
	}
	journal, err := connector.OpenJournal(o.stateDir, nil)
	if err != nil {
		fmt.Fprintf(stderr, "maasflow connector: %v\n", err)
		return 1
	}
	defer func() { _ = journal.Close() }()

	var link connector.Link
	if local {
		link = &connector.HTTPLink{Endpoint: o.endpoint, Token: os.Getenv(envConnectorToken), Site: o.site, HTTP: &http.Client{Timeout: 30 * time.Second}}
	} else {
		cfg, err := awsconfig.LoadDefaultConfig(ctx, connectorAWSOptions(o.credentialsDir, names)...)
		if err != nil {
			fmt.Fprintf(stderr, "maasflow connector: AWS configuration: %v\n", err)
			return 1
		}
		link = sqsrelay.NewLink(sqs.NewFromConfig(cfg), dynamodb.NewFromConfig(cfg), o.queueURL, o.table, o.site)
	}
	r := &connector.Runner{
		Link: link, Site: o.site, MAASURL: o.maasURL, Sign: sign, Journal: journal,
		Version: versionOfConnector(), Workers: o.workers, Logger: logger,
	}
	fmt.Fprintf(stdout, "maasflow connector %s: site %s, MAAS %s, journal %s\n", r.Version, o.site, o.maasURL, o.stateDir)
	logger.Info("connector started", "version", r.Version, "key_at_site", sign != nil)
	if o.renewAPIURL != "" {
		rn := &renewOptions{dir: o.credentialsDir, apiURL: o.renewAPIURL, within: renewBefore}
		go rn.loop(ctx, logger, renewCheckEvery, time.Now)
	}
	if err := r.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "maasflow connector: %v\n", err)
		return 1
	}
	logger.Info("connector stopped")
	return 0
}

// versionOfConnector is the version the heartbeat reports.
func versionOfConnector() string {
	if connectorVersion != "" {
		return connectorVersion
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return "devel-" + s.Value[:12]
		}
	}
	return "devel"
}

// connectorCommand is `maasflow connector`.
func (c *cli) connectorCommand() *cobra.Command {
	o := &connectorOptions{}
	cmd := &cobra.Command{
		Use:   "connector [flags]",
		Short: "relay a site's MAAS calls from next to its MAAS (outbound connections only)",
		Long: `Run next to a site's MAAS: relay the MAAS calls and pre-deploy fetches of that
site's onboardings, making only outbound connections, signing with a MAAS API key
kept at the site (--maas-api-key-file). docs/deploy.md, "Site connector".`,
		Args: noPositional,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if code := o.run(cmd.Context(), c.env.stdout, c.env.stderr); code != 0 {
				c.err = &adminExitCodeError{Code: code}
			}
			return nil
		},
	}
	o.flags(cmd.Flags())
	cmd.AddCommand(c.enrollCommand())
	cmd.AddCommand(c.renewCommand())
	return cmd
}
