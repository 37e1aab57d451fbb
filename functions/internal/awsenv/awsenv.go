// Package awsenv builds the Lambda functions' dependencies from the
// environment: one loader for every function, so each main.go only picks
// its handler. It is the AWS column of the blueprint's table; local mode
// builds the same shared/ pieces over minidyn, files and the embedded
// runtime (internal/localstack).
package awsenv

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/uuid"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/api"
	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/shared/connector"
	"github.com/maasflow/maasflow/shared/connector/sqsrelay"
	"github.com/maasflow/maasflow/shared/console"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll"
	"github.com/maasflow/maasflow/shared/events"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/nodeid"
	"github.com/maasflow/maasflow/shared/secrets"
	"github.com/maasflow/maasflow/shared/store"
	"github.com/maasflow/maasflow/shared/workflow"
)

// Env is the configuration every function reads.
type Env struct {
	Table           string
	EventBus        string
	OnboardingSM    string
	BatchSM         string
	NodeAPIURL      string
	AdminGroup      string
	PackageOCIRef   string
	PackageDigest   string
	TaskSigningKeys string
	// The AWS deployment's settings (infra sets them; shared/config/aws.go).
	SecretPrefix    string
	SiteSecretsRole string
	SecretsKMSKey   string
	RequireHTTPS    string
	ConnectorQueues string
	ConnectorTable  string
	GroupsClaim     string
	// CABundle is the enrollment API's PEM CA bundle, checked at start-up:
	// the bootstrap bundles' default when a site's policy sets none.
	CABundle string
}

// LoadEnv reads the environment through lookup (os.LookupEnv when nil) and
// reports every missing variable at once.
func LoadEnv(lookup func(string) (string, bool)) (Env, error) {
	var e Env
	err := config.Load(lookup,
		config.Var{Name: config.EnvTable, Default: store.DefaultTable, Target: &e.Table},
		config.Var{Name: config.EnvEventBus, Default: config.DefaultEventBus, Target: &e.EventBus},
		config.Var{Name: config.EnvOnboardingStateMachine, Required: true, Target: &e.OnboardingSM},
		config.Var{Name: config.EnvBatchStateMachine, Target: &e.BatchSM},
		config.Var{Name: config.EnvNodeAPIURL, Required: true, Target: &e.NodeAPIURL},
		config.Var{Name: config.EnvAdminGroup, Default: config.DefaultAdminGroup, Target: &e.AdminGroup},
		config.Var{Name: config.EnvPackageOCIRef, Target: &e.PackageOCIRef},
		config.Var{Name: config.EnvPackageDigest, Target: &e.PackageDigest},
		config.Var{Name: config.EnvTaskSigningKeys, Target: &e.TaskSigningKeys},
		config.Var{Name: config.EnvSecretPrefix, Target: &e.SecretPrefix},
		config.Var{Name: config.EnvSiteSecretsRole, Target: &e.SiteSecretsRole},
		config.Var{Name: config.EnvSecretsKMSKey, Target: &e.SecretsKMSKey},
		config.Var{Name: config.EnvRequireHTTPS, Target: &e.RequireHTTPS},
		config.Var{Name: config.EnvConnectorQueuePrefix, Target: &e.ConnectorQueues},
		config.Var{Name: config.EnvConnectorTable, Target: &e.ConnectorTable},
		config.Var{Name: config.EnvAdminGroupsClaim, Target: &e.GroupsClaim},
		config.Var{Name: config.EnvCABundle, Target: &e.CABundle},
	)
	if err != nil {
		return e, err
	}
	// A bad bundle fails the cold start, naming the variable, rather than
	// every onboarding's payload or reissue later.
	if e.CABundle != "" {
		if _, perr := domain.ParseCABundle(e.CABundle); perr != nil {
			return e, fmt.Errorf("%s: %w", config.EnvCABundle, perr)
		}
	}
	return e, nil
}

// clients are the AWS SDK clients, built once per cold start.
type clients struct {
	env   Env
	store *store.Store
	// secrets reads site credentials (through the site-scoped role when
	// one is configured) and writes them under the stage's prefix.
	secrets secrets.Split
	// ownSecrets reads, with the function's own role, the secrets that
	// are not a site's (the allocation service's token).
	ownSecrets *secrets.SecretsManager
	bus        *events.EventBridge
	flow       *workflow.StepFunctions
	sfn        workflow.SFNAPI
	logger     *slog.Logger
	// paths reaches each site over its network path (VPC rules, site
	// connectors).
	paths *connector.Paths
	// awsCfg makes the clients only some functions need (the node CA's KMS).
	awsCfg aws.Config
}

func load(ctx context.Context) (*clients, error) {
	env, err := LoadEnv(nil)
	if err != nil {
		return nil, err
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	sfnClient := sfn.NewFromConfig(cfg)
	return &clients{
		env:        env,
		store:      store.New(dynamodb.NewFromConfig(cfg), env.Table, time.Now),
		secrets:    siteSecrets(cfg, env),
		ownSecrets: secrets.NewSecretsManager(secretsmanager.NewFromConfig(cfg)),
		bus:        events.NewEventBridge(eventbridge.NewFromConfig(cfg), env.EventBus, config.EventSource),
		flow:       workflow.NewStepFunctions(sfnClient, env.OnboardingSM).WithBatch(env.BatchSM),
		sfn:        sfnClient,
		logger:     slog.New(lambdacontext.NewLogHandler()),
		paths:      sitePaths(cfg, env),
		awsCfg:     cfg,
	}, nil
}

// Activities returns the activities' dependencies on AWS.
func Activities(ctx context.Context) (activities.Deps, error) {
	c, err := load(ctx)
	if err != nil {
		return activities.Deps{}, err
	}
	pkg := enroll.DevPackage()
	if c.env.PackageOCIRef != "" {
		pkg.OCIRef, pkg.Digest = c.env.PackageOCIRef, c.env.PackageDigest
	}
	return withLifecycle(activities.Deps{
		Store:     c.store,
		MAAS:      activities.NewSiteConnector(c.store, c.secrets, activities.NewMAASClient).WithPaths(c.paths),
		Secrets:   c.secrets,
		Events:    c.outcomes(),
		Completer: c.flow,
		Clock:     clock.Real(),
		NewID:     uuid.NewString,
		Logger:    c.logger,
		HTTP:      &http.Client{Timeout: 15 * time.Second},
		Config: activities.Config{
			APIURL:             c.env.NodeAPIURL,
			TaskSigningPubKeys: splitKeys(c.env.TaskSigningKeys),
			Package:            pkg,
			CABundle:           c.env.CABundle,
		},
	}, c)
}

// API returns the admin API handler on AWS: API Gateway's JWT authorizer
// authenticates, the handler authorises by group.
func API(ctx context.Context) (http.Handler, error) {
	c, err := load(ctx)
	if err != nil {
		return nil, err
	}
	pkg := enroll.DevPackage()
	if c.env.PackageOCIRef != "" {
		pkg.OCIRef, pkg.Digest = c.env.PackageOCIRef, c.env.PackageDigest
	}
	deps, err := withAPILifecycle(api.Deps{
		Store:     c.store,
		Secrets:   c.secrets,
		Starter:   c.flow,
		Stopper:   c.flow,
		Completer: c.flow,
		Prober:    maas.SiteProber{},
		Paths:     c.paths,
		Auth:      api.NewAPIGatewayJWT(c.env.GroupsClaim, c.env.AdminGroup),
		Clock:     clock.Real(),
		NewID:     uuid.NewString,
		Logger:    c.logger,
		Bundles: api.BundleConfig{APIURL: c.env.NodeAPIURL, TaskSigningPubKeys: splitKeys(c.env.TaskSigningKeys), Package: pkg,
			CABundle: c.env.CABundle},
		Machines: activities.NewSiteConnector(c.store, c.secrets, activities.NewMAASClient).WithPaths(c.paths),
	}, c, c.sfn)
	if err != nil {
		return nil, err
	}
	if deps.NodeCA, deps.NodeAPIURL, err = nodeCA(ctx, os.LookupEnv, func() nodeid.KMSAPI { return kms.NewFromConfig(c.awsCfg) }); err != nil {
		return nil, err
	}
	if deps.Connectors, err = connectorDeps(ctx, os.LookupEnv, func() nodeid.KMSAPI { return kms.NewFromConfig(c.awsCfg) },
		func() sqsrelay.QueueAdminAPI { return sqs.NewFromConfig(c.awsCfg) },
		func() sqsrelay.AlarmAPI { return cloudwatch.NewFromConfig(c.awsCfg) }); err != nil {
		return nil, err
	}
	rc, ok, err := c.reconcilerForAPI(ctx)
	if err != nil {
		return nil, err
	}
	if ok {
		deps.Reconciler = rc
	}
	// API Gateway's HTTP API buffers a Lambda's whole answer: no streams.
	handler := api.New(api.Config{NoStreams: true}, deps)
	// The operator console: its static files, signed in through the
	// stack's identity provider (infra/console.go).
	signIn, err := console.SignInFromEnv(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	// Chosen by prefix, not a ServeMux: the API answers unclean paths
	// itself (a mux would redirect them).
	pages := console.HandlerWith(signIn)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == strings.TrimSuffix(console.Prefix, "/") || strings.HasPrefix(r.URL.Path, console.Prefix) {
			pages.ServeHTTP(w, r)
			return
		}
		handler.ServeHTTP(w, r)
	}), nil
}

// sitePaths requires https on the VPC path and relays connector sites
// through their SQS queues when the deployment has connector sites.
func sitePaths(cfg aws.Config, env Env) *connector.Paths {
	p := &connector.Paths{RequireHTTPS: env.RequireHTTPS == "true", APIURL: env.NodeAPIURL}
	if env.ConnectorQueues != "" && env.ConnectorTable != "" {
		r := sqsrelay.New(sqs.NewFromConfig(cfg), dynamodb.NewFromConfig(cfg), env.ConnectorQueues, env.ConnectorTable)
		p.Relay, p.Status = r, r
	}
	return p
}

// siteSecrets reads each site's credentials with a session scoped to that
// site when the deployment names the site-secrets role, and writes them
// with the function's own role; both under the stage's prefix.
func siteSecrets(cfg aws.Config, env Env) secrets.Split {
	var opts []secrets.Option
	if env.SecretsKMSKey != "" {
		opts = append(opts, secrets.WithKMSKeyID(env.SecretsKMSKey))
	}
	own := secrets.Prefixed{Prefix: env.SecretPrefix, Store: secrets.NewSecretsManager(secretsmanager.NewFromConfig(cfg), opts...)}
	split := secrets.Split{Getter: own, Putter: own}
	if env.SiteSecretsRole != "" {
		split.Getter = secrets.NewSiteScoped(cfg, env.SiteSecretsRole, config.SiteTagKey, env.SecretPrefix)
	}
	return split
}

func splitKeys(s string) []string {
	var keys []string
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}
