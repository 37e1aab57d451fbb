package main

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
)

// siteSecretsPath is where site credentials live under a stage's secret
// prefix (domain.SiteCredentialsSecretName writes maasflow/sites/<site>/credentials;
// the functions put "<stage>/" before it).
const siteSecretsPath = "maasflow/sites/" //nolint:gosec // G101: a secret name prefix for IAM, not a credential

// API routes. Admin routes need a JWT from the configured issuer; healthz is
// public and enroll is authenticated by the handler with the node's
// single-use enrollment token, which API Gateway cannot verify.
const (
	routeAdmin   = "/api/v1/admin/{proxy+}"
	routeHealthz = "/api/v1/healthz"
	routeEnroll  = "/api/v1/nodes/{id}/enroll"
)

// Output names.
const (
	outputAPIURL          = "ApiUrl"
	outputTableName       = "TableName"
	outputEventBusName    = "EventBusName"
	outputStateMachineArn = "OnboardingStateMachineArn"
)

// CloudFormation parameters used when the JWT settings are not given at synth.
const (
	paramJWTIssuer   = "JwtIssuer"
	paramJWTAudience = "JwtAudience"
)

// Lambda sizing. Activities make a handful of MAAS, DynamoDB and
// EventBridge calls with their own deadlines and never wait: waiting is a
// Wait state in the ASL. The API must answer within HTTP API's 30 s
// integration limit.
const (
	activityMemoryMB   = 256
	activityTimeoutSec = 60
	apiMemoryMB        = 512
	apiTimeoutSec      = 29
	logRetention       = awslogs.RetentionDays_ONE_MONTH
)

// devStage is the one stage that may deploy without the production
// settings (requiredSettings): it gets the development node-agent package
// and the execute-api URL as the enrollment URL.
const devStage = "dev"

// stageRE: a short lower-case name, since it prefixes resource names with
// tight length limits (an SQS queue name has 80 characters).
var stageRE = regexp.MustCompile(`^[a-z][a-z0-9]{0,11}$`)

// EC2 resource IDs: the old 8-digit or the 17-digit form.
var (
	vpcIDRE    = regexp.MustCompile(`^vpc-([0-9a-f]{8}|[0-9a-f]{17})$`)
	subnetIDRE = regexp.MustCompile(`^subnet-([0-9a-f]{8}|[0-9a-f]{17})$`)
)

// siteIDRE: a site ID as the API generates it (UUID) or an operator's slug.
var siteIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,39}$`)

// tableActions is every item action a principal may have on the table (each
// function has the part its code can reach, infra/grants.go): the item
// reads and writes the store issues (shared/store's DynamoDB interface;
// TransactWriteItems is authorised per item as Put/Update/Delete/
// ConditionCheck). No batch call (the store makes none), no Scan, which no
// request path may use, and no table administration. indexActions is all
// an index allows: writes are authorised on the table only.
var (
	tableActions = []string{
		"dynamodb:GetItem", "dynamodb:Query",
		"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem",
	}
	indexActions = []string{"dynamodb:Query"}
)

// VPCConfig is the MAAS VPC path: the MAAS-facing functions run in these
// existing private subnets, with a security group the stack creates that
// may reach only the MAAS CIDRs and HTTPS (AWS APIs through NAT or VPC
// endpoints).
type VPCConfig struct {
	VPCID     string
	SubnetIDs []string
	MAASCIDRs []string
}

// MaasflowStackProps configures the maasflow stack.
type MaasflowStackProps struct {
	awscdk.StackProps
	// Stage names the deployment; every named resource starts with
	// maasflow-<stage>. Only "dev" may leave the production settings unset.
	Stage string
	// Sources are the functions and the onboarding ASL (LoadSources).
	Sources Sources
	// AssetDir holds <function>/bootstrap for every function (make build
	// writes bin/<function>/bootstrap).
	AssetDir string
	// JWTIssuer is the admin API's token issuer URL. Empty: the stack
	// creates a Cognito user pool when Cognito is set, else takes the
	// issuer as the CloudFormation parameter JwtIssuer at deploy time.
	JWTIssuer string
	// JWTAudience lists accepted token audiences. Empty: the user pool's
	// client, or the comma-separated parameter JwtAudience.
	JWTAudience []string
	// AdminGroup is the token group that grants admin; empty means
	// config.DefaultAdminGroup.
	AdminGroup string
	// GroupsClaim is the token claim listing the caller's groups; empty
	// means cognito:groups.
	GroupsClaim string
	// Cognito creates a user pool for operators (with the admin group)
	// when no JWT issuer is given.
	Cognito bool
	// NodeAgentOCIRef and NodeAgentDigest name the node-agent package the
	// bootstrap bundles install, TaskSigningPubKeys the keys nodes verify
	// tasks with. EnrollmentAPIURL is the URL nodes enroll at and CABundle
	// the PEM bundle its certificate chains to. All four are required
	// unless Stage is dev.
	NodeAgentOCIRef    string
	NodeAgentDigest    string
	TaskSigningPubKeys []string
	EnrollmentAPIURL   string
	CABundle           string
	// ImportTable uses the table maasflow-<stage> a destroyed stack left
	// behind (the table is retained) instead of creating it.
	ImportTable bool
	// SecretsKMSKeyARN is an optional customer-managed key for the site
	// secrets.
	SecretsKMSKeyARN string
	// VPC, when set, puts the functions that reach MAAS in the VPC path.
	VPC *VPCConfig
	// ConnectorSites are sites reached through a site connector whose
	// request queues the stack makes (sites added through the API get
	// theirs from the api function); they need ConnectorCA.
	ConnectorSites []string
	// AlarmEmail, when set, is subscribed to the alarm topic.
	AlarmEmail string
	// AllocationServiceURL is Provisioning.Allocation's base URL, and
	// AllocationSecretName the Secrets Manager secret (under the stage's
	// secret prefix, e.g. prod/maasflow/allocation-service/token) with its
	// bearer token; the functions get exactly that secret. Both empty: no
	// allocation service; every drain then stops for an operator.
	AllocationServiceURL string
	AllocationSecretName string
	// ReservedConcurrency caps every background function (all but the
	// API): a flood of executions cannot take the account's concurrency
	// from the API, nor hit a MAAS region with more calls at once. 0
	// reserves nothing. The ASL retries Lambda.TooManyRequestsException.
	ReservedConcurrency int
	// Tags are cost-allocation tags put on every resource that takes tags.
	Tags map[string]string
	// CLICallbackURLs are the redirect URIs of the CLI's app client
	// (authorization code with PKCE); empty means defaultCLICallbackURL.
	CLICallbackURLs []string
	// APICertificateARN, with APIDomainName, gives the HTTP API a custom
	// domain with that ACM certificate (same region).
	APICertificateARN string
	APIDomainName     string
	// NodeTLS, when set, serves the node endpoints on a mutual TLS custom
	// domain (nodetls.go).
	NodeTLS *NodeTLSProps
	// ConnectorCA, when set, lets connectors take Roles Anywhere sessions
	// with certificates it signs (connector_access.go).
	ConnectorCA *ConnectorCAProps
}

// StackName is the CloudFormation stack name: maasflow-<stage>.
func (p *MaasflowStackProps) StackName() string { return "maasflow-" + p.Stage }

// Validate reports what would make the stack unbuildable or undeployable,
// every problem at once.
func (p *MaasflowStackProps) Validate() error {
	if p == nil {
		return errors.New("stack props are required")
	}
	var errs []error
	switch {
	case p.Stage == "":
		errs = append(errs, fmt.Errorf("no stage: set -c %s=<stage> (dev, prod, …) or $%s", ctxStage, envStage))
	case !stageRE.MatchString(p.Stage):
		errs = append(errs, fmt.Errorf("stage %q: want 1-12 lower-case letters and digits, starting with a letter", p.Stage))
	}
	if p.Stage != devStage && p.Stage != "" {
		errs = append(errs, p.productionSettings()...)
	}
	fns := p.Sources.Functions
	if !slices.Contains(fns, functionAPI) {
		errs = append(errs, fmt.Errorf("functions/%s/main.go is missing: the HTTP API needs it", functionAPI))
	}
	if err := unlistedFunctions(fns); err != nil {
		errs = append(errs, err)
	}
	if p.Sources.OnboardingASL == "" {
		errs = append(errs, errors.New("the onboarding ASL is empty"))
	}
	if strings.TrimSpace(p.CABundle) != "" {
		// The functions refuse to start with a bad bundle (it is the nodes'
		// default trust for the enrollment API): refuse it here instead.
		if _, err := domain.ParseCABundle(p.CABundle); err != nil {
			errs = append(errs, fmt.Errorf("context %s: the enrollment CA bundle: %w", ctxCABundleFile, err))
		}
	}
	errs = append(errs, p.validateDecommission()...)
	errs = append(errs, p.validateMachineWatch()...)
	if p.NodeTLS != nil {
		if err := p.NodeTLS.validate(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, ph := range slices.Sorted(maps.Keys(p.Sources.FunctionPlaceholders)) {
		fn := p.Sources.FunctionPlaceholders[ph]
		switch {
		case !slices.Contains(fns, fn):
			errs = append(errs, fmt.Errorf("placeholder ${%s} names function %s, which is not in functions/", ph, fn))
		case fn == functionAPI:
			// The api function holds the state machine's ARN, so the state
			// machine cannot also hold the api function's.
			errs = append(errs, fmt.Errorf("placeholder ${%s}: the %s function cannot be a state machine task", ph, functionAPI))
		}
	}
	if p.VPC != nil {
		errs = append(errs, p.VPC.validate()...)
	}
	errs = append(errs, p.validateProduction()...)
	errs = append(errs, p.validateConnectors()...)
	for _, site := range p.ConnectorSites {
		if !siteIDRE.MatchString(site) {
			errs = append(errs, fmt.Errorf("connector site %q: want a site ID (letters, digits, hyphens, at most 40)", site))
		}
	}
	if p.AssetDir == "" {
		errs = append(errs, errors.New("the asset directory is not set"))
	} else {
		var missing []string
		for _, fn := range fns {
			if _, err := os.Stat(filepath.Join(p.AssetDir, fn, "bootstrap")); err != nil {
				missing = append(missing, fn)
			}
		}
		if len(missing) > 0 {
			errs = append(errs, fmt.Errorf("no <function>/bootstrap under %s for %s: run make build first",
				p.AssetDir, strings.Join(missing, ", ")))
		}
	}
	return errors.Join(errs...)
}

// productionSettings lists the settings a non-dev stage lacks: without
// them the functions would hand nodes the development package, which no
// real node can pull, or an enrollment URL nobody vouches for.
func (p *MaasflowStackProps) productionSettings() []error {
	var errs []error
	need := func(ok bool, what, key string) {
		if !ok {
			errs = append(errs, fmt.Errorf("stage %s: %s is not configured (-c %s=…); only stage %q may use the development defaults",
				p.Stage, what, key, devStage))
		}
	}
	need(p.NodeAgentOCIRef != "", "the node-agent package OCI reference", ctxNodeAgentOCIRef)
	need(strings.HasPrefix(p.NodeAgentDigest, "sha256:"), "the node-agent package digest (sha256:…)", ctxNodeAgentDigest)
	need(strings.TrimSpace(p.CABundle) != "", "the enrollment CA bundle (a PEM file)", ctxCABundleFile)
	need(strings.HasPrefix(p.EnrollmentAPIURL, "https://"), "the enrollment API URL (https://…)", ctxEnrollmentAPIURL)
	return errs
}

func (v *VPCConfig) validate() []error {
	var errs []error
	if !vpcIDRE.MatchString(v.VPCID) {
		errs = append(errs, fmt.Errorf("context %s: want an existing VPC ID (vpc-…), got %q", ctxVPCID, v.VPCID))
	}
	if len(v.SubnetIDs) == 0 {
		errs = append(errs, fmt.Errorf("context %s: the VPC path needs at least one private subnet ID", ctxSubnetIDs))
	}
	for _, s := range v.SubnetIDs {
		if !subnetIDRE.MatchString(s) {
			errs = append(errs, fmt.Errorf("context %s: %q is not a subnet ID (subnet-…)", ctxSubnetIDs, s))
		}
	}
	if len(v.MAASCIDRs) == 0 {
		errs = append(errs, fmt.Errorf("context %s: the VPC path needs the CIDRs of the MAAS regions", ctxMAASCIDRs))
	}
	for _, c := range v.MAASCIDRs {
		if _, _, err := net.ParseCIDR(c); err != nil {
			errs = append(errs, fmt.Errorf("context %s: %q is not a CIDR", ctxMAASCIDRs, c))
		}
	}
	return errs
}

// NewMaasflowStack builds the whole deployment: table, bus, one Lambda per
// function, the onboarding state machine and the HTTP API. Invalid props
// (see Validate) make synthesis fail with their message.
func NewMaasflowStack(scope constructs.Construct, id string, props *MaasflowStackProps) awscdk.Stack {
	var sprops awscdk.StackProps
	if props != nil {
		sprops = props.StackProps
	}
	stack := awscdk.NewStack(scope, &id, &sprops)
	if err := props.Validate(); err != nil {
		stack.Node().AddValidation(&invalidProps{err: err})
		return stack
	}
	awscdk.Tags_Of(stack).Add(jsii.String("maasflow:stage"), jsii.String(props.Stage), nil)
	for _, k := range slices.Sorted(maps.Keys(props.Tags)) {
		awscdk.Tags_Of(stack).Add(jsii.String(k), jsii.String(props.Tags[k]), nil)
	}
	b := &builder{stack: stack, props: props, fns: map[string]awslambda.Function{}, roles: map[string]awsiam.Role{}}
	b.table()
	b.bus()
	b.httpAPI()
	b.network()
	b.connectorResources()
	b.functions()
	b.siteSecretsRole()
	b.stateMachine()
	b.batchMachine()
	b.reconcile()
	b.machineWatch()
	b.decommissionMachine()
	b.routes()
	b.nodeTLS()
	b.connectorAccess()
	b.operate()
	b.backup()
	b.outputs()
	return stack
}

// invalidProps turns a Validate error into a synthesis error.
type invalidProps struct{ err error }

func (v *invalidProps) Validate() *[]*string {
	var msgs []*string
	for line := range strings.SplitSeq(v.err.Error(), "\n") {
		msgs = append(msgs, jsii.String(line))
	}
	return &msgs
}

type builder struct {
	stack awscdk.Stack
	props *MaasflowStackProps

	tbl     awsdynamodb.ITable
	evbus   awsevents.EventBus
	api     awsapigatewayv2.HttpApi
	fns     map[string]awslambda.Function
	roles   map[string]awsiam.Role
	machine awsstepfunctions.StateMachine

	// sg is the MAAS-facing functions' security group (VPC path only).
	sg awsec2.CfnSecurityGroup
	// connector holds the site connectors' queues and reply table.
	connector connectorResources
	// secretsRole is assumed, tagged with one site, to read that site's
	// credentials.
	secretsRole awsiam.Role
	// decom is the decommission state machine (infra/decommission.go).
	decom awsstepfunctions.StateMachine
	// watch is the machine-watch state machine (infra/watch.go).
	watch awsstepfunctions.StateMachine
	// batch and recon are the batch-onboarding and reconcile state
	// machines (infra/batch.go, infra/reconcile.go).
	batch awsstepfunctions.StateMachine
	recon awsstepfunctions.StateMachine
	// consoleAuth is the console's app client of the pool the stack
	// creates (infra/console.go); nil without one.
	consoleAuth *consoleSignIn
}

// name is a physical resource name: maasflow-<stage>[-suffix].
func (b *builder) name(suffix string) string {
	n := "maasflow-" + b.props.Stage
	if suffix != "" {
		n += "-" + suffix
	}
	return n
}

func (b *builder) table() {
	name := b.name("")
	if b.props.ImportTable {
		// The table a destroyed stack of this stage retained (docs/deploy.md,
		// "Destroy and deploy again"). The stack refers to it by name and
		// no longer manages it.
		b.tbl = awsdynamodb.Table_FromTableName(b.stack, jsii.String("Table"), jsii.String(name))
		return
	}
	str := awsdynamodb.AttributeType_STRING
	tbl := awsdynamodb.NewTable(b.stack, jsii.String("Table"), &awsdynamodb.TableProps{
		TableName:    jsii.String(name),
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String(store.AttrPK), Type: str},
		SortKey:      &awsdynamodb.Attribute{Name: jsii.String(store.AttrSK), Type: str},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		DeletionProtection:  jsii.Bool(true),
		RemovalPolicy:       awscdk.RemovalPolicy_RETAIN,
		TimeToLiveAttribute: jsii.String(store.AttrTTL),
	})
	for _, ix := range store.Indexes() {
		tbl.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
			IndexName:      jsii.String(ix.Name),
			PartitionKey:   &awsdynamodb.Attribute{Name: jsii.String(ix.PartitionKey), Type: str},
			SortKey:        &awsdynamodb.Attribute{Name: jsii.String(ix.SortKey), Type: str},
			ProjectionType: awsdynamodb.ProjectionType_ALL,
		})
	}
	b.tbl = tbl
}

func (b *builder) bus() {
	b.evbus = awsevents.NewEventBus(b.stack, jsii.String("EventBus"), &awsevents.EventBusProps{
		EventBusName: jsii.String(b.name("")),
	})
}

func (b *builder) httpAPI() {
	b.api = awsapigatewayv2.NewHttpApi(b.stack, jsii.String("HttpApi"), &awsapigatewayv2.HttpApiProps{
		ApiName:     jsii.String(b.name("api")),
		Description: jsii.String("maasflow admin REST API and node enrollment"),
		// The default stage is built in operate(), with access logs and
		// throttling.
		CreateDefaultStage: jsii.Bool(false),
	})
}

// onboardingName is the state machine's physical name. Functions the state
// machine invokes must reach it by an ARN built from this name: referencing
// the resource would make it depend on itself through their policies.
func (b *builder) onboardingName() string { return b.name("onboarding") }

func (b *builder) onboardingARN() *string {
	return b.arn("states", "stateMachine", b.onboardingName())
}

// executionsARN covers every execution of the onboarding state machine:
// StopExecution and DescribeExecution are authorised on the execution, not
// on the state machine.
func (b *builder) executionsARN() *string {
	return b.arn("states", "execution", b.onboardingName()+":*")
}

func (b *builder) arn(service, resource, name string) *string {
	return b.stack.FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String(service),
		Resource:     jsii.String(resource),
		ResourceName: jsii.String(name),
		ArnFormat:    awscdk.ArnFormat_COLON_RESOURCE_NAME,
	})
}

// secretPrefix goes before every secret name of this stage.
func (b *builder) secretPrefix() string { return b.props.Stage + "/" }

// siteSecretsARN matches every site's credentials of this stage (the api
// writes them).
func (b *builder) siteSecretsARN() *string {
	return b.arn("secretsmanager", "secret", b.secretPrefix()+siteSecretsPath+"*")
}

// taggedSiteSecretARN matches only the secret of the site the session is
// tagged with; Secrets Manager appends "-" and six random characters.
func (b *builder) taggedSiteSecretARN() *string {
	return b.arn("secretsmanager", "secret",
		b.secretPrefix()+siteSecretsPath+"${aws:PrincipalTag/"+config.SiteTagKey+"}/credentials-??????")
}

// taggedSitePowerOverridesARN matches the per-node BMC credential overrides
// of the tagged site (domain.PowerOverrideSecretName), which discovery reads
// where it would read the site's credentials.
func (b *builder) taggedSitePowerOverridesARN() *string {
	return b.arn("secretsmanager", "secret",
		b.secretPrefix()+siteSecretsPath+"${aws:PrincipalTag/"+config.SiteTagKey+"}/power/*")
}

func (b *builder) functions() {
	for _, name := range b.props.Sources.Functions {
		b.fns[name] = b.function(name)
	}
}

// enrollmentURL is the URL nodes enroll at: the configured one, or on the
// dev stage the HTTP API's own endpoint.
func (b *builder) enrollmentURL() *string {
	if b.props.EnrollmentAPIURL != "" {
		return jsii.String(b.props.EnrollmentAPIURL)
	}
	return b.api.ApiEndpoint()
}

// function builds one Lambda with its own role and log group and the grants
// its access entry names.
func (b *builder) function(name string) awslambda.Function {
	id := CamelCase(name)
	acc := functionAccess[name]
	logs := awslogs.NewLogGroup(b.stack, jsii.String(id+"Logs"), &awslogs.LogGroupProps{
		Retention: logRetention,
	})
	// An own role instead of the default one: the default attaches
	// AWSLambdaBasicExecutionRole, which may write to every log group.
	role := awsiam.NewRole(b.stack, jsii.String(id+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("maasflow " + b.props.Stage + " function " + name),
	})
	b.roles[name] = role
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: jsii.Strings(*logs.LogGroupArn()),
	}))

	memory, timeout := activityMemoryMB, activityTimeoutSec
	env := map[string]*string{
		config.EnvStage:      jsii.String(b.props.Stage),
		config.EnvTable:      b.tbl.TableName(),
		config.EnvEventBus:   b.evbus.EventBusName(),
		config.EnvNodeAPIURL: b.enrollmentURL(),
	}
	optional := map[string]string{
		config.EnvPackageOCIRef:   b.props.NodeAgentOCIRef,
		config.EnvPackageDigest:   b.props.NodeAgentDigest,
		config.EnvTaskSigningKeys: strings.Join(b.props.TaskSigningPubKeys, ","),
		config.EnvCABundle:        b.props.CABundle,
	}
	for k, v := range optional {
		if v != "" {
			env[k] = jsii.String(v)
		}
	}
	if acc.reachesSite() {
		env[config.EnvRequireHTTPS] = jsii.String("true")
		if b.connector.table != nil {
			env[config.EnvConnectorTable] = b.connector.table.TableName()
			env[config.EnvConnectorQueuePrefix] = b.connectorQueueURLPrefix()
		}
	}
	if acc.maas || acc.api {
		env[config.EnvSecretPrefix] = jsii.String(b.secretPrefix())
	}
	if name == functionAPI {
		memory, timeout = apiMemoryMB, apiTimeoutSec
		adminGroup := b.props.AdminGroup
		if adminGroup == "" {
			adminGroup = config.DefaultAdminGroup
		}
		env[config.EnvAdminGroup] = jsii.String(adminGroup)
		if b.props.GroupsClaim != "" {
			env[config.EnvAdminGroupsClaim] = jsii.String(b.props.GroupsClaim)
		}
		if b.props.SecretsKMSKeyARN != "" {
			env[config.EnvSecretsKMSKey] = jsii.String(b.props.SecretsKMSKeyARN)
		}
		// The api gets the state machine's own ARN in stateMachine(), once
		// it exists; nothing the state machine refers to depends on the api.
	} else {
		// Built from the name: the state machine refers to these
		// functions, so they cannot refer to it.
		env[config.EnvOnboardingStateMachine] = b.onboardingARN()
	}

	fn := awslambda.NewFunction(b.stack, jsii.String(id+"Function"), &awslambda.FunctionProps{
		FunctionName:          jsii.String(b.name(name)),
		Description:           jsii.String("maasflow " + name + " (functions/" + name + ")"),
		Runtime:               awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:          b.lambdaArchitecture(),
		Handler:               jsii.String("bootstrap"),
		Code:                  awslambda.Code_FromAsset(jsii.String(filepath.Join(b.props.AssetDir, name)), nil),
		MemorySize:            jsii.Number(memory),
		Timeout:               awscdk.Duration_Seconds(jsii.Number(timeout)),
		Environment:           &env,
		Role:                  role,
		LogGroup:              logs,
		LoggingFormat:         awslambda.LoggingFormat_JSON,
		ApplicationLogLevelV2: awslambda.ApplicationLogLevel_INFO,
		SystemLogLevelV2:      awslambda.SystemLogLevel_WARN,
		Tracing:               awslambda.Tracing_ACTIVE,
		ReservedConcurrentExecutions: func() *float64 {
			if name == functionAPI || b.props.ReservedConcurrency == 0 {
				return nil
			}
			return jsii.Number(b.props.ReservedConcurrency)
		}(),
	})

	b.grantTable(role, acc.itemActions(), acc.indexes)
	// After the first grant: the suppression goes on the role's policy, made then.
	nagSuppress(role, "AwsSolutions-IAM5", nagNoResourceActions, "Resource::*")
	if acc.publish {
		b.evbus.GrantPutEventsTo(fn, nil)
	}
	if acc.reachesSite() {
		b.placeInVPC(fn, role)
		b.grantConnectorRelay(role)
	}
	if acc.api {
		b.grantAPI(fn, role)
	}
	if acc.completeTask {
		// SendTaskSuccess is authorised against the state machine that
		// issued the token. Built from the name for the functions the
		// state machine invokes (await-enrollment completes the wait itself
		// when the node enrolled before the wait began).
		role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("states:SendTaskSuccess"),
			Resources: jsii.Strings(*b.onboardingARN()),
		}))
	}
	return fn
}

// grantAPI adds what only the admin API does: write site credentials,
// start, stop and describe executions.
func (b *builder) grantAPI(fn awslambda.Function, role awsiam.Role) {
	// The API writes a site's credentials when they are set or rotated;
	// it reads them only through the site-scoped role, like the activities.
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("secretsmanager:CreateSecret", "secretsmanager:PutSecretValue"),
		Resources: jsii.Strings(*b.siteSecretsARN()),
	}))
	if k := b.props.SecretsKMSKeyARN; k != "" {
		role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:    jsii.Strings("kms:GenerateDataKey", "kms:Decrypt"),
			Resources:  jsii.Strings(k),
			Conditions: b.viaSecretsManager(),
		}))
	}
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("states:StopExecution", "states:DescribeExecution"),
		Resources: jsii.Strings(*b.executionsARN()),
	}))
	nagSuppress(role, "AwsSolutions-IAM5", nagExecutions, nagExecutionsARN)
	nagSuppress(role, "AwsSolutions-IAM5", "a site's credentials are a secret per site, created at run time when the site is "+
		"added: the pattern is this stage's site secrets, which the api writes and never reads", `/^Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:[a-z0-9-]+\/maasflow\/sites\/\*$/g`)
}

// viaSecretsManager limits a KMS grant to calls Secrets Manager makes for
// the principal.
func (b *builder) viaSecretsManager() *map[string]any {
	return &map[string]any{"StringEquals": map[string]any{
		"kms:ViaService": "secretsmanager." + *b.stack.Region() + ".amazonaws.com",
	}}
}

// siteSecretsRole is the only principal that may read site credentials. A
// function assumes it with the session tag maasflow-site=<site>, and the
// role's policy names only the secret of the tagged site, so a session
// opened for one site cannot read another's (attribute-based access
// control; docs/deploy.md, "Site secrets").
func (b *builder) siteSecretsRole() {
	var readers []string
	for _, name := range b.props.Sources.Functions {
		if functionAccess[name].maas {
			readers = append(readers, name)
		}
	}
	var principals []awsiam.IPrincipal
	for _, name := range readers {
		principals = append(principals, b.roles[name])
	}
	sessionTagged := &map[string]any{
		"StringLike":                map[string]any{"aws:RequestTag/" + config.SiteTagKey: "?*"},
		"ForAllValues:StringEquals": map[string]any{"aws:TagKeys": []string{config.SiteTagKey}},
	}
	b.secretsRole = awsiam.NewRole(b.stack, jsii.String("SiteSecretsRole"), &awsiam.RoleProps{
		AssumedBy:          awsiam.NewCompositePrincipal(principals...),
		Description:        jsii.String("maasflow " + b.props.Stage + ": reads one site's credentials per session, chosen by the session tag " + config.SiteTagKey),
		MaxSessionDuration: awscdk.Duration_Hours(jsii.Number(1)),
	})
	b.secretsRole.AssumeRolePolicy().AddStatements(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:    jsii.Strings("sts:TagSession"),
		Principals: &principals,
		Conditions: sessionTagged,
	}))
	b.secretsRole.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("secretsmanager:GetSecretValue"),
		Resources: jsii.Strings(*b.taggedSiteSecretARN(), *b.taggedSitePowerOverridesARN()),
	}))
	nagSuppress(b.secretsRole, "AwsSolutions-IAM5", "a site's per-node BMC credential overrides are one secret per host, "+
		"written at run time; the session tag confines the pattern to the tagged site's own overrides",
		`/^Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:[a-z0-9-]+\/maasflow\/sites\/<aws:PrincipalTag\/`+config.SiteTagKey+`>\/power\/\*$/g`)
	if k := b.props.SecretsKMSKeyARN; k != "" {
		b.secretsRole.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:    jsii.Strings("kms:Decrypt"),
			Resources:  jsii.Strings(k),
			Conditions: b.viaSecretsManager(),
		}))
	}
	for _, name := range readers {
		b.roles[name].AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:    jsii.Strings("sts:AssumeRole", "sts:TagSession"),
			Resources:  jsii.Strings(*b.secretsRole.RoleArn()),
			Conditions: sessionTagged,
		}))
		b.fns[name].AddEnvironment(jsii.String(config.EnvSiteSecretsRole), b.secretsRole.RoleArn(), nil)
	}
}

func (b *builder) stateMachine() {
	src := b.props.Sources
	subs := map[string]*string{}
	invoked := map[string]bool{}
	for ph, fn := range src.FunctionPlaceholders {
		subs[ph] = b.fns[fn].FunctionArn()
		invoked[fn] = true
	}
	for _, ph := range src.ResourcePlaceholders {
		switch ph {
		case placeholderEventBusName:
			subs[ph] = b.evbus.EventBusName()
		case placeholderEventBusArn:
			subs[ph] = b.evbus.EventBusArn()
		case placeholderTableName:
			subs[ph] = b.tbl.TableName()
		}
	}

	// The /aws/vendedlogs/ prefix keeps the log group out of the account's
	// CloudWatch Logs resource-policy size limit. The suffix from the
	// stack ID is new for every stack creation, so the log group a
	// destroyed stack retained never blocks the next deploy.
	logs := awslogs.NewLogGroup(b.stack, jsii.String("OnboardingLogs"), &awslogs.LogGroupProps{
		LogGroupName: awscdk.Fn_Join(jsii.String(""), &[]*string{
			jsii.String("/aws/vendedlogs/states/" + b.onboardingName() + "-"),
			b.stackIDSuffix(),
		}),
		Retention: logRetention,
	})
	b.machine = awsstepfunctions.NewStateMachine(b.stack, jsii.String("Onboarding"), &awsstepfunctions.StateMachineProps{
		StateMachineName:        jsii.String(b.onboardingName()),
		StateMachineType:        awsstepfunctions.StateMachineType_STANDARD,
		DefinitionBody:          awsstepfunctions.DefinitionBody_FromString(jsii.String(src.OnboardingASL)),
		DefinitionSubstitutions: &subs,
		// Execution data carries identifiers (onboarding, site, host, MAAS
		// system ID) and never secrets; it stays out of the logs anyway, as
		// the execution history already keeps it for 90 days.
		Logs: &awsstepfunctions.LogOptions{
			Destination:          logs,
			Level:                awsstepfunctions.LogLevel_ERROR,
			IncludeExecutionData: jsii.Bool(false),
		},
		TracingEnabled: jsii.Bool(true),
	})
	nagStateMachine(b.machine)
	for _, name := range src.Functions {
		if invoked[name] {
			b.fns[name].GrantInvoke(b.machine)
		}
	}
	if slices.Contains(src.ResourcePlaceholders, placeholderEventBusName) || slices.Contains(src.ResourcePlaceholders, placeholderEventBusArn) {
		b.evbus.GrantPutEventsTo(b.machine, nil)
	}
	if slices.Contains(src.ResourcePlaceholders, placeholderTableName) {
		b.grantTable(b.machine.Role(), tableActions, allIndexes())
	}

	api := b.fns[functionAPI]
	api.AddEnvironment(jsii.String(config.EnvOnboardingStateMachine), b.machine.StateMachineArn(), nil)
	api.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("states:StartExecution"),
		Resources: jsii.Strings(*b.machine.StateMachineArn()),
	}))
}

// stackIDSuffix is the last group of the stack ID's UUID: fixed for the
// life of a stack, new when the stack is created again.
func (b *builder) stackIDSuffix() *string {
	uuid := awscdk.Fn_Select(jsii.Number(2), awscdk.Fn_Split(jsii.String("/"), b.stack.StackId(), nil))
	return awscdk.Fn_Select(jsii.Number(4), awscdk.Fn_Split(jsii.String("-"), uuid, nil))
}

func (b *builder) routes() {
	issuer, audience := b.jwtSettings()
	integration := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("ApiIntegration"), b.fns[functionAPI], nil)
	authorizer := awsapigatewayv2authorizers.NewHttpJwtAuthorizer(jsii.String("AdminJwtAuthorizer"), issuer,
		&awsapigatewayv2authorizers.HttpJwtAuthorizerProps{JwtAudience: audience})

	b.api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
		Path:        jsii.String(routeAdmin),
		Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_ANY},
		Integration: integration,
		Authorizer:  authorizer,
	})
	for _, r := range *b.api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
		Path:        jsii.String(routeHealthz),
		Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_GET},
		Integration: integration,
	}) {
		nagSuppress(r, "AwsSolutions-APIG4", "the liveness probe: no data, no side effect, called by monitors without credentials")
	}
	for _, r := range *b.api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
		Path:        jsii.String(routeEnroll),
		Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_POST},
		Integration: integration,
	}) {
		nagSuppress(r, "AwsSolutions-APIG4", "a node has no operator JWT: the handler authenticates it by its single-use "+
			"enrollment token, and the stage's per-route throttle bounds the route")
	}
	b.connectorRenewRoute(integration)
	b.console(integration)
	b.streams(issuer, audience)
}

// jwtSettings returns the admin API's issuer and audiences: from the
// context, from a Cognito user pool the stack creates, or from deploy-time
// parameters.
func (b *builder) jwtSettings() (*string, *[]*string) {
	if b.props.JWTIssuer == "" && b.props.Cognito {
		return b.cognito()
	}
	var issuer *string
	var audience *[]*string
	if b.props.JWTIssuer != "" {
		issuer = jsii.String(b.props.JWTIssuer)
	} else {
		issuer = awscdk.NewCfnParameter(b.stack, jsii.String(paramJWTIssuer), &awscdk.CfnParameterProps{
			Type:        jsii.String("String"),
			Description: jsii.String("Issuer URL of the JWTs the admin API accepts (e.g. https://cognito-idp.<region>.amazonaws.com/<pool-id>)"),
			MinLength:   jsii.Number(1),
		}).ValueAsString()
	}
	if len(b.props.JWTAudience) > 0 {
		audience = jsii.Strings(b.props.JWTAudience...)
	} else {
		audience = awscdk.NewCfnParameter(b.stack, jsii.String(paramJWTAudience), &awscdk.CfnParameterProps{
			Type:        jsii.String("CommaDelimitedList"),
			Description: jsii.String("Audiences (client IDs) the admin API accepts, comma-separated"),
		}).ValueAsList()
	}
	return issuer, audience
}

func (b *builder) outputs() {
	out := func(id string, value *string, desc string) {
		awscdk.NewCfnOutput(b.stack, jsii.String(id), &awscdk.CfnOutputProps{Value: value, Description: jsii.String(desc)})
	}
	out(outputAPIURL, awscdk.Fn_Join(jsii.String(""), &[]*string{b.api.ApiEndpoint(), jsii.String("/")}), "Base URL of the admin and node API")
	out(outputTableName, b.tbl.TableName(), "DynamoDB table")
	out(outputEventBusName, b.evbus.EventBusName(), "EventBridge bus the workflow events go to")
	out(outputStateMachineArn, b.machine.StateMachineArn(), "Onboarding state machine")
	out("SiteSecretsRoleArn", b.secretsRole.RoleArn(), "Role that reads one site's credentials per tagged session")
}
