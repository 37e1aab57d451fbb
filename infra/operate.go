package main

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventschemas"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
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
	public := map[string]any{"ThrottlingRateLimit": enrollRateLimit, "ThrottlingBurstLimit": enrollBurstLimit}
	routes := map[string]any{"POST " + routeEnroll: public}
	if b.servesConnectorRenewal() {
		// Public as well (the handler checks the certificate); a
		// connector renews every few days.
		routes["POST "+routeConnectorRenew] = public
	}
	stage := b.defaultStage("Api", b.api.ApiId(), apiRateLimit, apiBurstLimit, routes)
	b.customDomain(stage)
}

// defaultStage is the $default stage of the HTTP API apiID, auto-deployed,
// with JSON access logs to the log group <prefix>AccessLogs and the given
// throttling; the construct is <prefix>DefaultStage.
func (b *builder) defaultStage(prefix string, apiID *string, rate, burst float64, routes map[string]any) awsapigatewayv2.CfnStage {
	logs := awslogs.NewLogGroup(b.stack, jsii.String(prefix+"AccessLogs"), &awslogs.LogGroupProps{Retention: logRetention})
	format, err := json.Marshal(accessLogFormat)
	if err != nil {
		panic(err) // a constant map of strings always marshals
	}
	props := &awsapigatewayv2.CfnStageProps{
		ApiId:      apiID,
		StageName:  jsii.String("$default"),
		AutoDeploy: jsii.Bool(true),
		AccessLogSettings: &awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
			DestinationArn: logs.LogGroupArn(),
			Format:         jsii.String(string(format)),
		},
		DefaultRouteSettings: &awsapigatewayv2.CfnStage_RouteSettingsProperty{
			ThrottlingRateLimit:  jsii.Number(rate),
			ThrottlingBurstLimit: jsii.Number(burst),
		},
	}
	if len(routes) > 0 {
		props.RouteSettings = routes
	}
	return awsapigatewayv2.NewCfnStage(b.stack, jsii.String(prefix+"DefaultStage"), props)
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
