package main

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscognito"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventschemas"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/jsii-runtime-go"

	schemas "github.com/maasflow/maasflow/events"
	"github.com/maasflow/maasflow/shared/config"
)

// API throttling. The enroll route is public (the handler checks the
// single-use token), so it gets a much lower limit than the admin API:
// a fleet enrolls a few nodes a minute; a flood is an attack or a bug.
const (
	apiRateLimit     = 100
	apiBurstLimit    = 200
	enrollRateLimit  = 5
	enrollBurstLimit = 20
	// archiveRetentionDays keeps every workflow event for replay.
	archiveRetentionDays = 365
)

// accessLogFormat is one JSON line per API request, with the fields the
// admin API logs too, so the two can be joined on requestId.
var accessLogFormat = map[string]string{
	"requestId": "$context.requestId", "ip": "$context.identity.sourceIp",
	"requestTime": "$context.requestTime", "routeKey": "$context.routeKey",
	"status": "$context.status", "responseLength": "$context.responseLength",
	"integrationError": "$context.integrationErrorMessage", "latency": "$context.responseLatency",
	"sub": "$context.authorizer.claims.sub",
}

// operate adds what running the stack needs: the API stage with access
// logs and throttling, the event archive and schemas, alarms and a
// dashboard.
func (b *builder) operate() {
	b.apiStage()
	b.eventArchive()
	b.eventSchemas()
	b.alarms()
}

func (b *builder) apiStage() {
	logs := awslogs.NewLogGroup(b.stack, jsii.String("ApiAccessLogs"), &awslogs.LogGroupProps{Retention: logRetention})
	format, err := json.Marshal(accessLogFormat)
	if err != nil {
		panic(err) // a constant map of strings always marshals
	}
	awsapigatewayv2.NewCfnStage(b.stack, jsii.String("ApiDefaultStage"), &awsapigatewayv2.CfnStageProps{
		ApiId:      b.api.ApiId(),
		StageName:  jsii.String("$default"),
		AutoDeploy: jsii.Bool(true),
		AccessLogSettings: &awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
			DestinationArn: logs.LogGroupArn(),
			Format:         jsii.String(string(format)),
		},
		DefaultRouteSettings: &awsapigatewayv2.CfnStage_RouteSettingsProperty{
			ThrottlingRateLimit:  jsii.Number(apiRateLimit),
			ThrottlingBurstLimit: jsii.Number(apiBurstLimit),
		},
		RouteSettings: map[string]any{
			"POST " + routeEnroll: map[string]any{
				"ThrottlingRateLimit":  enrollRateLimit,
				"ThrottlingBurstLimit": enrollBurstLimit,
			},
		},
	})
}

// eventArchive keeps every maasflow event on the bus for a year; a replay
// (docs/deploy.md, "Replay events") sends them to the bus again.
func (b *builder) eventArchive() {
	b.evbus.Archive(jsii.String("Archive"), &awsevents.BaseArchiveProps{
		ArchiveName:  jsii.String(b.name("events")),
		Description:  jsii.String("every maasflow " + b.props.Stage + " event, for replay"),
		EventPattern: &awsevents.EventPattern{Source: jsii.Strings(config.EventSource)},
		Retention:    awscdk.Duration_Days(jsii.Number(archiveRetentionDays)),
	})
}

// eventSchemas registers one schema per detail type. The registry takes
// JSON Schema draft 4 of the whole event, so the detail's schema (draft
// 2020-12, events/) is wrapped in an envelope; the keywords it uses mean
// the same in both drafts.
func (b *builder) eventSchemas() {
	reg := awseventschemas.NewCfnRegistry(b.stack, jsii.String("SchemaRegistry"), &awseventschemas.CfnRegistryProps{
		RegistryName: jsii.String(b.name("")),
		Description:  jsii.String("maasflow " + b.props.Stage + " workflow events"),
	})
	for _, dt := range schemas.DetailTypes() {
		raw, err := schemas.Schema(dt)
		if err != nil {
			panic(fmt.Sprintf("event schema %s: %v", dt, err))
		}
		content, err := envelopeSchema(dt, raw)
		if err != nil {
			panic(fmt.Sprintf("event schema %s: %v", dt, err))
		}
		s := awseventschemas.NewCfnSchema(b.stack, jsii.String("Schema"+CamelCase(dotsToHyphens(dt))), &awseventschemas.CfnSchemaProps{
			RegistryName: reg.AttrRegistryName(),
			SchemaName:   jsii.String(config.EventSource + "@" + dt),
			Type:         jsii.String("JSONSchemaDraft4"),
			Content:      jsii.String(content),
			Description:  jsii.String("detail-type " + dt),
		})
		s.Node().AddDependency(reg)
	}
}

// envelopeSchema wraps a detail schema in the EventBridge event envelope.
func envelopeSchema(detailType string, detail []byte) (string, error) {
	var d map[string]any
	if err := json.Unmarshal(detail, &d); err != nil {
		return "", err
	}
	delete(d, "$schema")
	delete(d, "$id")
	env := map[string]any{
		"$schema":  "http://json-schema.org/draft-04/schema#",
		"title":    detailType,
		"type":     "object",
		"required": []string{"detail-type", "source", "detail"},
		"properties": map[string]any{
			"detail-type": map[string]any{"type": "string", "enum": []string{detailType}},
			"source":      map[string]any{"type": "string", "enum": []string{config.EventSource}},
			"account":     map[string]any{"type": "string"},
			"region":      map[string]any{"type": "string"},
			"time":        map[string]any{"type": "string", "format": "date-time"},
			"id":          map[string]any{"type": "string"},
			"detail":      d,
		},
	}
	out, err := json.Marshal(env)
	return string(out), err
}

func dotsToHyphens(s string) string {
	out := []byte(s)
	for i, c := range out {
		if c == '.' || c == '_' {
			out[i] = '-'
		}
	}
	return string(out)
}

// alarms notify the alarm topic of failed and timed-out executions,
// function errors and throttles, requests stuck in a connector DLQ and API
// 5xx answers; the dashboard shows the same metrics.
func (b *builder) alarms() {
	topic := awssns.NewTopic(b.stack, jsii.String("AlarmTopic"), &awssns.TopicProps{
		TopicName:   jsii.String(b.name("alarms")),
		DisplayName: jsii.String("maasflow " + b.props.Stage + " alarms"),
		EnforceSSL:  jsii.Bool(true),
	})
	if b.props.AlarmEmail != "" {
		topic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(b.props.AlarmEmail), nil))
	}
	action := awscloudwatchactions.NewSnsAction(topic)
	five := awscdk.Duration_Minutes(jsii.Number(5))
	alarm := func(id, desc string, m awscloudwatch.IMetric) awscloudwatch.Alarm {
		a := awscloudwatch.NewAlarm(b.stack, jsii.String("Alarm"+id), &awscloudwatch.AlarmProps{
			AlarmName:          jsii.String(b.name(kebab(id))),
			AlarmDescription:   jsii.String(desc),
			Metric:             m,
			Threshold:          jsii.Number(1),
			EvaluationPeriods:  jsii.Number(1),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		a.AddAlarmAction(action)
		return a
	}
	sum := &awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}
	alarm("ExecutionsFailed", "onboarding executions failed", b.machine.MetricFailed(sum))
	alarm("ExecutionsTimedOut", "onboarding executions timed out", b.machine.MetricTimedOut(sum))
	alarm("ExecutionsAborted", "onboarding executions aborted other than by cancel", b.machine.MetricAborted(sum))
	if b.watch != nil {
		// While the machine watch fails, every onboarding wait lasts until
		// its task timeout.
		alarm("MachineWatchFailed", "machine-watch runs failed: onboarding waits end only at their timeout",
			b.watch.MetricFailed(sum))
	}

	var errs, throttles []awscloudwatch.IMetric
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range b.fns {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		fn := b.fns[name]
		errs = append(errs, fn.MetricErrors(sum))
		throttles = append(throttles, fn.MetricThrottles(sum))
		alarm(CamelCase(name)+"Errors", "function "+name+" returned errors", fn.MetricErrors(sum))
		alarm(CamelCase(name)+"Throttles", "function "+name+" was throttled", fn.MetricThrottles(sum))
	}
	for _, site := range b.props.ConnectorSites {
		dlq := b.connector.dlqs[site]
		alarm("Connector"+CamelCase(site)+"Dlq", "requests for the connector of site "+site+" failed repeatedly",
			dlq.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Maximum")}))
	}
	api5xx := awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:  jsii.String("AWS/ApiGateway"),
		MetricName: jsii.String("5xx"),
		DimensionsMap: &map[string]*string{
			"ApiId": b.api.ApiId(), "Stage": jsii.String("$default"),
		},
		Period: five, Statistic: jsii.String("Sum"),
	})
	alarm("Api5xx", "the API answered 5xx", api5xx)

	dash := awscloudwatch.NewDashboard(b.stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DashboardName: jsii.String(b.name("")),
	})
	graph := func(title string, left ...awscloudwatch.IMetric) awscloudwatch.IWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{Title: jsii.String(title), Left: &left, Width: jsii.Number(12)})
	}
	dash.AddWidgets(
		graph("Onboarding executions", b.machine.MetricStarted(sum), b.machine.MetricSucceeded(sum),
			b.machine.MetricFailed(sum), b.machine.MetricTimedOut(sum)),
		graph("API 5xx", api5xx),
	)
	dash.AddWidgets(graph("Function errors", errs...), graph("Function throttles", throttles...))
	if b.watch != nil {
		dash.AddWidgets(graph("Machine-watch runs", b.watch.MetricStarted(sum), b.watch.MetricFailed(sum)))
	}
}

// kebab turns a CamelCase construct ID into kebab-case for alarm names.
func kebab(s string) string {
	var out []byte
	for i, c := range []byte(s) {
		if c >= 'A' && c <= 'Z' {
			if i > 0 {
				out = append(out, '-')
			}
			c += 'a' - 'A'
		}
		out = append(out, c)
	}
	return string(out)
}

// cognito creates the operators' user pool with the admin group, and an
// app client for `maasflow login` (username and password, refresh
// tokens). Self sign-up is off: operators are invited.
func (b *builder) cognito() (*string, *[]*string) {
	pool := awscognito.NewUserPool(b.stack, jsii.String("Operators"), &awscognito.UserPoolProps{
		UserPoolName:      jsii.String(b.name("operators")),
		SelfSignUpEnabled: jsii.Bool(false),
		SignInAliases:     &awscognito.SignInAliases{Email: jsii.Bool(true), Username: jsii.Bool(true)},
		Mfa:               awscognito.Mfa_OPTIONAL,
		MfaSecondFactor:   &awscognito.MfaSecondFactor{Otp: jsii.Bool(true), Sms: jsii.Bool(false)},
		PasswordPolicy: &awscognito.PasswordPolicy{
			MinLength: jsii.Number(14), RequireDigits: jsii.Bool(true), RequireLowercase: jsii.Bool(true),
			RequireUppercase: jsii.Bool(true), RequireSymbols: jsii.Bool(false),
		},
		AccountRecovery: awscognito.AccountRecovery_EMAIL_ONLY,
		RemovalPolicy:   awscdk.RemovalPolicy_RETAIN,
	})
	group := b.props.AdminGroup
	if group == "" {
		group = config.DefaultAdminGroup
	}
	awscognito.NewCfnUserPoolGroup(b.stack, jsii.String("AdminGroup"), &awscognito.CfnUserPoolGroupProps{
		UserPoolId: pool.UserPoolId(), GroupName: jsii.String(group),
		Description: jsii.String("maasflow administrators"),
	})
	client := pool.AddClient(jsii.String("CLI"), &awscognito.UserPoolClientOptions{
		UserPoolClientName:         jsii.String(b.name("cli")),
		GenerateSecret:             jsii.Bool(false),
		AuthFlows:                  &awscognito.AuthFlow{UserPassword: jsii.Bool(true), UserSrp: jsii.Bool(true)},
		AccessTokenValidity:        awscdk.Duration_Hours(jsii.Number(1)),
		IdTokenValidity:            awscdk.Duration_Hours(jsii.Number(1)),
		RefreshTokenValidity:       awscdk.Duration_Days(jsii.Number(1)),
		PreventUserExistenceErrors: jsii.Bool(true),
	})
	awscdk.NewCfnOutput(b.stack, jsii.String("UserPoolId"), &awscdk.CfnOutputProps{Value: pool.UserPoolId()})
	awscdk.NewCfnOutput(b.stack, jsii.String("UserPoolClientId"), &awscdk.CfnOutputProps{Value: client.UserPoolClientId()})
	issuer := awscdk.Fn_Join(jsii.String(""), &[]*string{
		jsii.String("https://cognito-idp."), b.stack.Region(), jsii.String(".amazonaws.com/"), pool.UserPoolId(),
	})
	return issuer, &[]*string{client.UserPoolClientId()}
}
