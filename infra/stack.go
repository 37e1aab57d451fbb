package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/shared/store"
)

// sitesSecretName matches every per-site secret (domain.SiteCredentialsSecretName
// writes maasflow/sites/<site>/credentials); Secrets Manager appends a
// random suffix to secret ARNs, which the trailing * also covers.
const sitesSecretName = "maasflow/sites/*" //nolint:gosec // G101: a secret name pattern for IAM, not a credential

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

// tableActions is what the functions may do to the table: every item read
// and write the store issues (TransactWriteItems is authorised per item as
// Put/Update/Delete/ConditionCheck), but no Scan, which no request path may
// use, and no table administration.
var tableActions = []string{
	"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query",
	"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
	"dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem",
}

// MaasflowStackProps configures the maasflow stack.
type MaasflowStackProps struct {
	awscdk.StackProps
	// Sources are the functions and the onboarding ASL (LoadSources).
	Sources Sources
	// AssetDir holds <function>/bootstrap for every function (make build
	// writes bin/<function>/bootstrap).
	AssetDir string
	// JWTIssuer is the admin API's token issuer URL. Empty: the stack takes
	// it as the CloudFormation parameter JwtIssuer at deploy time.
	JWTIssuer string
	// JWTAudience lists accepted token audiences. Empty: the stack takes
	// them as the comma-separated CloudFormation parameter JwtAudience.
	JWTAudience []string
	// AdminGroup is the token group that grants admin; empty means
	// config.DefaultAdminGroup.
	AdminGroup string
	// TableName defaults to store.DefaultTable, EventBusName to
	// config.DefaultEventBus.
	TableName    string
	EventBusName string
	// NodeAgentOCIRef and NodeAgentDigest name the node-agent package the
	// bootstrap bundles install, TaskSigningPubKeys the keys nodes verify
	// tasks with. Empty leaves the variable unset: the functions then use
	// their built-in development package and no keys.
	NodeAgentOCIRef    string
	NodeAgentDigest    string
	TaskSigningPubKeys []string
	// AllocationServiceURL is Provisioning.Allocation's base URL, and
	// AllocationSecretName the Secrets Manager secret (under
	// maasflow/allocation-service/) with its bearer token. Empty: no
	// allocation service; every drain then stops for an operator.
	AllocationServiceURL string
	AllocationSecretName string
}

// Validate reports what would make the stack unbuildable or undeployable,
// every problem at once.
func (p *MaasflowStackProps) Validate() error {
	if p == nil {
		return errors.New("stack props are required")
	}
	var errs []error
	fns := p.Sources.Functions
	if !slices.Contains(fns, functionAPI) {
		errs = append(errs, fmt.Errorf("functions/%s/main.go is missing: the HTTP API needs it", functionAPI))
	}
	if p.Sources.OnboardingASL == "" {
		errs = append(errs, errors.New("the onboarding ASL is empty"))
	}
	errs = append(errs, p.validateDecommission()...)
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
	b := &builder{stack: stack, props: props, fns: map[string]awslambda.Function{}}
	b.table()
	b.bus()
	b.httpAPI()
	b.functions()
	b.stateMachine()
	b.reconcile()
	b.decommissionMachine()
	b.routes()
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

	tbl     awsdynamodb.Table
	evbus   awsevents.EventBus
	api     awsapigatewayv2.HttpApi
	fns     map[string]awslambda.Function
	machine awsstepfunctions.StateMachine
	decom   awsstepfunctions.StateMachine
}

func (b *builder) table() {
	name := b.props.TableName
	if name == "" {
		name = store.DefaultTable
	}
	str := awsdynamodb.AttributeType_STRING
	b.tbl = awsdynamodb.NewTable(b.stack, jsii.String("Table"), &awsdynamodb.TableProps{
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
		b.tbl.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
			IndexName:      jsii.String(ix.Name),
			PartitionKey:   &awsdynamodb.Attribute{Name: jsii.String(ix.PartitionKey), Type: str},
			SortKey:        &awsdynamodb.Attribute{Name: jsii.String(ix.SortKey), Type: str},
			ProjectionType: awsdynamodb.ProjectionType_ALL,
		})
	}
}

func (b *builder) bus() {
	name := b.props.EventBusName
	if name == "" {
		name = config.DefaultEventBus
	}
	b.evbus = awsevents.NewEventBus(b.stack, jsii.String("EventBus"), &awsevents.EventBusProps{
		EventBusName: jsii.String(name),
	})
}

func (b *builder) httpAPI() {
	b.api = awsapigatewayv2.NewHttpApi(b.stack, jsii.String("HttpApi"), &awsapigatewayv2.HttpApiProps{
		ApiName:     jsii.String(*b.stack.StackName() + "-api"),
		Description: jsii.String("maasflow admin REST API and node enrollment"),
	})
}

// onboardingName is the state machine's physical name. Functions the state
// machine invokes must reach it by an ARN built from this name: referencing
// the resource would make it depend on itself through their policies.
func (b *builder) onboardingName() string { return *b.stack.StackName() + "-onboarding" }

func (b *builder) onboardingARN() *string {
	return b.stack.FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String("states"),
		Resource:     jsii.String("stateMachine"),
		ResourceName: jsii.String(b.onboardingName()),
		ArnFormat:    awscdk.ArnFormat_COLON_RESOURCE_NAME,
	})
}

func (b *builder) sitesSecretARN() *string {
	return b.stack.FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String("secretsmanager"),
		Resource:     jsii.String("secret"),
		ResourceName: jsii.String(sitesSecretName),
		ArnFormat:    awscdk.ArnFormat_COLON_RESOURCE_NAME,
	})
}

func (b *builder) functions() {
	for _, name := range b.props.Sources.Functions {
		b.fns[name] = b.function(name)
	}
}

// function builds one Lambda with its own role and log group and the grants
// every function has: item reads and writes on the table, PutEvents on the
// bus, and GetSecretValue on the site secrets.
func (b *builder) function(name string) awslambda.Function {
	id := CamelCase(name)
	logs := awslogs.NewLogGroup(b.stack, jsii.String(id+"Logs"), &awslogs.LogGroupProps{
		Retention: logRetention,
	})
	// An own role instead of the default one: the default attaches
	// AWSLambdaBasicExecutionRole, which may write to every log group.
	role := awsiam.NewRole(b.stack, jsii.String(id+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("maasflow function " + name),
	})
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: jsii.Strings(*logs.LogGroupArn()),
	}))

	memory, timeout := activityMemoryMB, activityTimeoutSec
	env := map[string]*string{
		config.EnvTable:      b.tbl.TableName(),
		config.EnvEventBus:   b.evbus.EventBusName(),
		config.EnvNodeAPIURL: b.api.ApiEndpoint(),
	}
	optional := map[string]string{
		config.EnvPackageOCIRef:   b.props.NodeAgentOCIRef,
		config.EnvPackageDigest:   b.props.NodeAgentDigest,
		config.EnvTaskSigningKeys: strings.Join(b.props.TaskSigningPubKeys, ","),
	}
	for k, v := range optional {
		if v != "" {
			env[k] = jsii.String(v)
		}
	}
	if name == functionAPI {
		memory, timeout = apiMemoryMB, apiTimeoutSec
		adminGroup := b.props.AdminGroup
		if adminGroup == "" {
			adminGroup = config.DefaultAdminGroup
		}
		env[config.EnvAdminGroup] = jsii.String(adminGroup)
		// The api gets the state machine's own ARN in stateMachine(), once
		// it exists; nothing the state machine refers to depends on the api.
	} else {
		// Built from the name: the state machine refers to these
		// functions, so they cannot refer to it.
		env[config.EnvOnboardingStateMachine] = b.onboardingARN()
	}

	fn := awslambda.NewFunction(b.stack, jsii.String(id+"Function"), &awslambda.FunctionProps{
		Description:           jsii.String("maasflow " + name + " (functions/" + name + ")"),
		Runtime:               awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:          awslambda.Architecture_ARM_64(),
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
	})

	b.tbl.Grant(fn, *jsii.Strings(tableActions...)...)
	b.evbus.GrantPutEventsTo(fn, nil)
	secretActions := []string{"secretsmanager:GetSecretValue"}
	if name == functionAPI {
		// The API writes a site's credentials when the site is registered
		// or its credentials are rotated.
		secretActions = append(secretActions, "secretsmanager:PutSecretValue", "secretsmanager:CreateSecret")
	}
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(secretActions...),
		Resources: jsii.Strings(*b.sitesSecretARN()),
	}))
	if name == functionAwaitEnrollment {
		// Completes the enrollment wait itself when the node enrolled
		// before the wait began. SendTaskSuccess is authorised against the
		// state machine that issued the token.
		fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("states:SendTaskSuccess"),
			Resources: jsii.Strings(*b.onboardingARN()),
		}))
	}
	return fn
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
	// CloudWatch Logs resource-policy size limit.
	logs := awslogs.NewLogGroup(b.stack, jsii.String("OnboardingLogs"), &awslogs.LogGroupProps{
		LogGroupName: jsii.String("/aws/vendedlogs/states/" + b.onboardingName()),
		Retention:    logRetention,
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
	for _, name := range src.Functions {
		if invoked[name] {
			b.fns[name].GrantInvoke(b.machine)
		}
	}
	if slices.Contains(src.ResourcePlaceholders, placeholderEventBusName) || slices.Contains(src.ResourcePlaceholders, placeholderEventBusArn) {
		b.evbus.GrantPutEventsTo(b.machine, nil)
	}
	if slices.Contains(src.ResourcePlaceholders, placeholderTableName) {
		b.tbl.Grant(b.machine, *jsii.Strings(tableActions...)...)
	}

	api := b.fns[functionAPI]
	api.AddEnvironment(jsii.String(config.EnvOnboardingStateMachine), b.machine.StateMachineArn(), nil)
	api.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("states:StartExecution", "states:SendTaskSuccess"),
		Resources: jsii.Strings(*b.machine.StateMachineArn()),
	}))
}

func (b *builder) routes() {
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

	integration := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("ApiIntegration"), b.fns[functionAPI], nil)
	authorizer := awsapigatewayv2authorizers.NewHttpJwtAuthorizer(jsii.String("AdminJwtAuthorizer"), issuer,
		&awsapigatewayv2authorizers.HttpJwtAuthorizerProps{JwtAudience: audience})

	b.api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
		Path:        jsii.String(routeAdmin),
		Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_ANY},
		Integration: integration,
		Authorizer:  authorizer,
	})
	b.api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
		Path:        jsii.String(routeHealthz),
		Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_GET},
		Integration: integration,
	})
	b.api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
		Path:        jsii.String(routeEnroll),
		Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_POST},
		Integration: integration,
	})
}

func (b *builder) outputs() {
	out := func(id string, value *string, desc string) {
		awscdk.NewCfnOutput(b.stack, jsii.String(id), &awscdk.CfnOutputProps{Value: value, Description: jsii.String(desc)})
	}
	out(outputAPIURL, b.api.Url(), "Base URL of the admin and node API")
	out(outputTableName, b.tbl.TableName(), "DynamoDB table")
	out(outputEventBusName, b.evbus.EventBusName(), "EventBridge bus the workflow events go to")
	out(outputStateMachineArn, b.machine.StateMachineArn(), "Onboarding state machine")
}
