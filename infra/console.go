package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscognito"
	"github.com/aws/jsii-runtime-go"

	"github.com/maasflow/maasflow/shared/console"
)

// The operator console on AWS (docs/decisions.md, "The console on AWS"):
// the api function serves its embedded files at GET /console/… on the same
// HTTP API as the admin API, so the pages and the API share one origin
// (no CORS, one TLS name, no bucket or distribution to run), and the page
// signs in with the stack's Cognito pool by the authorization code grant
// with PKCE as a public client of its own.
const (
	routeConsole     = "/console"
	routeConsoleFile = "/console/{proxy+}"
	// consoleCallback is the page the pool sends the browser back to: API
	// Gateway routes no path that ends in a slash, so the page by name.
	consoleCallback  = "/console/index.html"
	outputConsoleURL = "ConsoleUrl"
)

// consoleSignIn is the console's app client of the pool the stack
// creates, set by consoleClient and read by console.
type consoleSignIn struct {
	authorizeURL, tokenURL, clientID *string
}

// consoleClient adds the console's app client to the operators' pool and
// returns its id, an audience the admin API's authorizer accepts. A
// public client (a page keeps no secret): the code grant with PKCE only,
// back to the console's own page at the API's URL (and its custom domain).
func (b *builder) consoleClient(pool awscognito.UserPool, domain awscognito.UserPoolDomain) *string {
	callbacks := []*string{
		awscdk.Fn_Join(jsii.String(""), &[]*string{b.api.ApiEndpoint(), jsii.String(consoleCallback)}),
	}
	if b.props.APIDomainName != "" {
		callbacks = append(callbacks, jsii.String("https://"+b.props.APIDomainName+consoleCallback))
	}
	client := pool.AddClient(jsii.String("Console"), &awscognito.UserPoolClientOptions{
		UserPoolClientName: jsii.String(b.name("console")),
		GenerateSecret:     jsii.Bool(false),
		// Only the managed login signs in (no password reaches the
		// client); refresh stays on, as Cognito always allows it.
		AuthFlows: &awscognito.AuthFlow{UserSrp: jsii.Bool(true)},
		OAuth: &awscognito.OAuthSettings{
			Flows:        &awscognito.OAuthFlows{AuthorizationCodeGrant: jsii.Bool(true), ImplicitCodeGrant: jsii.Bool(false)},
			Scopes:       &[]awscognito.OAuthScope{awscognito.OAuthScope_OPENID(), awscognito.OAuthScope_EMAIL(), awscognito.OAuthScope_PROFILE()},
			CallbackUrls: &callbacks,
		},
		SupportedIdentityProviders: &[]awscognito.UserPoolClientIdentityProvider{awscognito.UserPoolClientIdentityProvider_COGNITO()},
		// The page keeps the ID token in the tab for an hour; it signs in
		// again after that.
		AccessTokenValidity:        awscdk.Duration_Hours(jsii.Number(1)),
		IdTokenValidity:            awscdk.Duration_Hours(jsii.Number(1)),
		RefreshTokenValidity:       awscdk.Duration_Hours(jsii.Number(1)),
		PreventUserExistenceErrors: jsii.Bool(true),
	})
	base := domain.BaseUrl(nil)
	b.consoleAuth = &consoleSignIn{
		authorizeURL: awscdk.Fn_Join(jsii.String(""), &[]*string{base, jsii.String("/oauth2/authorize")}),
		tokenURL:     awscdk.Fn_Join(jsii.String(""), &[]*string{base, jsii.String("/oauth2/token")}),
		clientID:     client.UserPoolClientId(),
	}
	return client.UserPoolClientId()
}

// console routes GET /console and /console/{proxy+} to the api function,
// which serves the pages, and tells the function how the page signs in
// (without a pool of the stack's own: the token form, for a token of the
// configured issuer).
func (b *builder) console(integration awsapigatewayv2.HttpRouteIntegration) {
	fn := b.fns[functionAPI]
	if a := b.consoleAuth; a != nil {
		fn.AddEnvironment(jsii.String(console.EnvAuthorizeURL), a.authorizeURL, nil)
		fn.AddEnvironment(jsii.String(console.EnvTokenURL), a.tokenURL, nil)
		fn.AddEnvironment(jsii.String(console.EnvClientID), a.clientID, nil)
	}
	for _, path := range []string{routeConsole, routeConsoleFile} {
		for _, r := range *b.api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(path),
			Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_GET},
			Integration: integration,
		}) {
			nagSuppress(r, "AwsSolutions-APIG4", "the console's static files (HTML, CSS, JavaScript and its sign-in settings): "+
				"no data, no side effect; every call the page makes goes to the admin routes with the operator's JWT")
		}
	}
	awscdk.NewCfnOutput(b.stack, jsii.String(outputConsoleURL), &awscdk.CfnOutputProps{
		Value:       awscdk.Fn_Join(jsii.String(""), &[]*string{b.api.ApiEndpoint(), jsii.String(consoleCallback)}),
		Description: jsii.String("The operator console"),
	})
}
