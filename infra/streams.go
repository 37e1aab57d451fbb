package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/shared/console"
)

// Server push on AWS (docs/decisions.md, "Streams on AWS"): API Gateway's
// HTTP API buffers a Lambda's whole answer, so the admin API's streams are
// served by the stream function behind a Lambda function URL in
// RESPONSE_STREAM mode. The URL's auth type is NONE (a browser cannot sign
// with SigV4): the function checks each operator's JWT against the same
// issuer and audiences as the admin API's authorizer, and reads the table
// only. CORS lets only the console's origin read the answers.
const (
	functionStream = "stream"
	// streamTimeoutSec is Lambda's longest invocation: a stream lasts at
	// most this, and ends with its "end" event before it.
	streamTimeoutSec = 900
	// streamMemoryMB: a stream holds one resource's JSON at a time.
	streamMemoryMB  = 256
	outputStreamURL = "StreamUrl"
)

// streamExposedHeaders are the answer's headers the page may read
// (api.HeaderCorrelationID, api.HeaderTimeScale).
var streamExposedHeaders = []string{"X-Correlation-ID", "X-Maasflow-Time-Scale"}

// streamAccess is what the streams read: items and every index (the lists
// the console follows page by index); nothing is written.
func streamAccess() access {
	return access{indexes: allIndexes(), items: []string{"dynamodb:GetItem", "dynamodb:Query"}}
}

// streams gives the stream function, when the repository has one, its
// URL, the JWT settings it checks tokens against, and tells the console
// where to open its streams.
func (b *builder) streams(issuer *string, audiences *[]*string) {
	fn, ok := b.fns[functionStream]
	if !ok {
		return
	}
	if cfn, ok := fn.Node().DefaultChild().(awslambda.CfnFunction); ok {
		cfn.SetTimeout(jsii.Number(streamTimeoutSec))
		cfn.SetMemorySize(jsii.Number(streamMemoryMB))
	}
	adminGroup := b.props.AdminGroup
	if adminGroup == "" {
		adminGroup = config.DefaultAdminGroup
	}
	fn.AddEnvironment(jsii.String(config.EnvJWTIssuer), issuer, nil)
	fn.AddEnvironment(jsii.String(config.EnvJWTAudiences), awscdk.Fn_Join(jsii.String(","), audiences), nil)
	fn.AddEnvironment(jsii.String(config.EnvAdminGroup), jsii.String(adminGroup), nil)
	if b.props.GroupsClaim != "" {
		fn.AddEnvironment(jsii.String(config.EnvAdminGroupsClaim), jsii.String(b.props.GroupsClaim), nil)
	}
	// The console is served by the api function at the HTTP API's URL
	// (and its custom domain): its origin is the only one whose page may
	// read the streams.
	origins := []*string{b.api.ApiEndpoint()}
	if b.props.APIDomainName != "" {
		origins = append(origins, jsii.String("https://"+b.props.APIDomainName))
	}
	url := fn.AddFunctionUrl(&awslambda.FunctionUrlOptions{
		AuthType:   awslambda.FunctionUrlAuthType_NONE,
		InvokeMode: awslambda.InvokeMode_RESPONSE_STREAM,
		Cors: &awslambda.FunctionUrlCorsOptions{
			AllowedOrigins: &origins,
			AllowedMethods: &[]awslambda.HttpMethod{awslambda.HttpMethod_GET},
			// The bearer token travels in a header, never a cookie.
			AllowCredentials: jsii.Bool(false),
			AllowedHeaders:   jsii.Strings("authorization", "accept", "x-correlation-id"),
			ExposedHeaders:   jsii.Strings(streamExposedHeaders...),
			MaxAge:           awscdk.Duration_Hours(jsii.Number(1)),
		},
	})
	b.fns[functionAPI].AddEnvironment(jsii.String(console.EnvStreamURL), url.Url(), nil)
	awscdk.NewCfnOutput(b.stack, jsii.String(outputStreamURL), &awscdk.CfnOutputProps{
		Value:       url.Url(),
		Description: jsii.String("The admin API's streams (server-sent events; the operator's JWT in the Authorization header)"),
	})
}
