package main

import (
	"context"
	"errors"
	"flag"
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

// runConnector runs `maasflow connector`: next to a site's MAAS, it
// relays the MAAS calls and pre-deploy fetches of that site, making only
// outbound connections (docs/deploy.md, "Site connector").
func runConnector(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("maasflow connector", flag.ContinueOnError)
	fs.SetOutput(stderr)
	site := fs.String("site", "", "ID of the site this connector serves (required)")
	maasURL := fs.String("maas-url", "", "the site's MAAS region as seen from here, e.g. http://localhost:5240/MAAS (required)")
	keyFile := fs.String("maas-api-key-file", "", "file holding the MAAS API key; the connector then signs requests and maasflow never holds the key")
	stateDir := fs.String("state-dir", "", "directory for the journal of mutations run (default $XDG_STATE_HOME/maasflow/connector-<site>)")
	endpoint := fs.String("endpoint", "", "local transport: the API URL of maasflow local; the site token is read from $"+envConnectorToken)
	queueURL := fs.String("queue-url", "", "AWS transport: the site's request queue URL (stack output Connector<Site>QueueUrl); credentials from the AWS SDK chain")
	table := fs.String("table", "", "AWS transport: the connector table (maasflow-<stage>-connector)")
	workers := fs.Int("workers", 16, "requests run in parallel")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "maasflow connector: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "maasflow connector: --log-level: %v\n", err)
		return 2
	}
	var problems []string
	if *site == "" {
		problems = append(problems, "--site is required")
	}
	if *maasURL == "" {
		problems = append(problems, "--maas-url is required")
	}
	local, aws := *endpoint != "", *queueURL != "" || *table != ""
	switch {
	case local && aws:
		problems = append(problems, "--endpoint (local) and --queue-url/--table (AWS) exclude each other")
	case !local && !aws:
		problems = append(problems, "name a transport: --endpoint (local) or --queue-url and --table (AWS)")
	case aws && (*queueURL == "" || *table == ""):
		problems = append(problems, "the AWS transport needs both --queue-url and --table")
	case local && os.Getenv(envConnectorToken) == "":
		problems = append(problems, "the local transport needs the site token in $"+envConnectorToken)
	}
	if *workers < 1 {
		problems = append(problems, "--workers must be at least 1")
	}
	if len(problems) > 0 {
		fmt.Fprintf(stderr, "maasflow connector: %s\n", strings.Join(problems, "; "))
		return 2
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})).With("site", *site)

	var sign connector.Signer
	if *keyFile != "" {
		raw, err := os.ReadFile(*keyFile)
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
	if *stateDir == "" {
		*stateDir = filepath.Join(defaultDataDir(os.Getenv), "connector-"+*site)
	}
	journal, err := connector.OpenJournal(*stateDir, nil)
	if err != nil {
		fmt.Fprintf(stderr, "maasflow connector: %v\n", err)
		return 1
	}
	defer func() { _ = journal.Close() }()

	var link connector.Link
	if local {
		link = &connector.HTTPLink{Endpoint: *endpoint, Token: os.Getenv(envConnectorToken), Site: *site, HTTP: &http.Client{Timeout: 30 * time.Second}}
	} else {
		cfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "maasflow connector: AWS configuration: %v\n", err)
			return 1
		}
		link = sqsrelay.NewLink(sqs.NewFromConfig(cfg), dynamodb.NewFromConfig(cfg), *queueURL, *table, *site)
	}
	r := &connector.Runner{
		Link: link, Site: *site, MAASURL: *maasURL, Sign: sign, Journal: journal,
		Version: versionOfConnector(), Workers: *workers, Logger: logger,
	}
	fmt.Fprintf(stdout, "maasflow connector %s: site %s, MAAS %s, journal %s\n", r.Version, *site, *maasURL, *stateDir)
	logger.Info("connector started", "version", r.Version, "key_at_site", sign != nil)
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

// connectorCommand is `maasflow connector`. It parses its own flags
// (runConnector), so its help is the flag set's.
func (c *cli) connectorCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "connector [flags]",
		Short: "relay a site's MAAS calls from next to its MAAS (outbound connections only)",
		Long: `Run next to a site's MAAS: relay the MAAS calls and pre-deploy fetches of that
site's onboardings, making only outbound connections, signing with a MAAS API key
kept at the site (--maas-api-key-file). --help lists the flags (docs/deploy.md).`,
		DisableFlagParsing: true,
		RunE:               c.selfParsed(runConnector),
	}
}
