package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscognito"
	"github.com/aws/aws-cdk-go/awscdk/v2/awswafv2"
	"github.com/aws/jsii-runtime-go"

	"github.com/maasflow/maasflow/shared/config"
)

// Sign-in protection of the operators' user pool.
const (
	// minPasswordLength: NIST SP 800-63B lets length carry most of the
	// strength; 14 is the CIS benchmark's minimum for IAM users.
	minPasswordLength = 14
	// tempPasswordDays: an invitation's password expires in three days.
	tempPasswordDays = 3
	// signInRateLimit is how many requests one client IP may send to the
	// user pool in five minutes (WAF's rate-based rule window) before WAF
	// blocks it: an operator signs in a few times a day.
	signInRateLimit = 100
)

// Output names of the sign-in settings.
const (
	outputUserPoolID       = "UserPoolId"
	outputUserPoolClientID = "UserPoolClientId"
	outputUserPoolDomain   = "UserPoolDomainUrl"
	outputAPIDomainTarget  = "ApiDomainTarget"
)

// cognito creates the operators' user pool with the admin group and the
// CLI's app client, returning the JWT issuer and audience of the admin
// API. Self sign-up is off (operators are invited), MFA with an
// authenticator app is required, and passwords follow a strong policy.
// The CLI signs in with the authorization code grant and PKCE through the
// pool's managed login, at loopback callback URLs; no client has the
// implicit grant, and USER_PASSWORD_AUTH (a password sent to the pool) is
// off.
func (b *builder) cognito() (*string, *[]*string) {
	pool := awscognito.NewUserPool(b.stack, jsii.String("Operators"), &awscognito.UserPoolProps{
		UserPoolName:      jsii.String(b.name("operators")),
		SelfSignUpEnabled: jsii.Bool(false),
		SignInAliases:     &awscognito.SignInAliases{Email: jsii.Bool(true), Username: jsii.Bool(true)},
		Mfa:               awscognito.Mfa_REQUIRED,
		MfaSecondFactor:   &awscognito.MfaSecondFactor{Otp: jsii.Bool(true), Sms: jsii.Bool(false)},
		PasswordPolicy: &awscognito.PasswordPolicy{
			MinLength: jsii.Number(minPasswordLength), RequireDigits: jsii.Bool(true), RequireLowercase: jsii.Bool(true),
			RequireUppercase: jsii.Bool(true), RequireSymbols: jsii.Bool(true),
			TempPasswordValidity: awscdk.Duration_Days(jsii.Number(tempPasswordDays)),
		},
		AccountRecovery: awscognito.AccountRecovery_EMAIL_ONLY,
		// Threat protection (compromised-credential checks and adaptive
		// authentication that blocks risky sign-ins) needs the Plus feature
		// plan, billed per monthly active user; for a team of operators
		// that is a few dollars a month.
		FeaturePlan:                  awscognito.FeaturePlan_PLUS,
		StandardThreatProtectionMode: awscognito.StandardThreatProtectionMode_FULL_FUNCTION,
		RemovalPolicy:                awscdk.RemovalPolicy_RETAIN,
	})
	group := b.props.AdminGroup
	if group == "" {
		group = config.DefaultAdminGroup
	}
	awscognito.NewCfnUserPoolGroup(b.stack, jsii.String("AdminGroup"), &awscognito.CfnUserPoolGroupProps{
		UserPoolId: pool.UserPoolId(), GroupName: jsii.String(group),
		Description: jsii.String("maasflow administrators"),
	})
	// The managed login the authorization code grant goes through. The
	// prefix is unique per region, hence the account ID in it.
	domain := pool.AddDomain(jsii.String("Domain"), &awscognito.UserPoolDomainOptions{
		CognitoDomain: &awscognito.CognitoDomainOptions{
			DomainPrefix: awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String(b.name("") + "-"), b.stack.Account()}),
		},
	})
	client := pool.AddClient(jsii.String("CLI"), &awscognito.UserPoolClientOptions{
		UserPoolClientName: jsii.String(b.name("cli")),
		// A public client: the CLI cannot keep a secret, so it proves
		// the code exchange with PKCE (S256) instead.
		GenerateSecret: jsii.Bool(false),
		// SRP proves the password without sending it; refresh is always
		// on. No USER_PASSWORD_AUTH.
		AuthFlows: &awscognito.AuthFlow{UserSrp: jsii.Bool(true)},
		OAuth: &awscognito.OAuthSettings{
			Flows:        &awscognito.OAuthFlows{AuthorizationCodeGrant: jsii.Bool(true), ImplicitCodeGrant: jsii.Bool(false)},
			Scopes:       &[]awscognito.OAuthScope{awscognito.OAuthScope_OPENID(), awscognito.OAuthScope_EMAIL(), awscognito.OAuthScope_PROFILE()},
			CallbackUrls: jsii.Strings(b.props.CLICallbackURLs...),
		},
		SupportedIdentityProviders: &[]awscognito.UserPoolClientIdentityProvider{awscognito.UserPoolClientIdentityProvider_COGNITO()},
		AccessTokenValidity:        awscdk.Duration_Hours(jsii.Number(1)),
		IdTokenValidity:            awscdk.Duration_Hours(jsii.Number(1)),
		RefreshTokenValidity:       awscdk.Duration_Days(jsii.Number(1)),
		PreventUserExistenceErrors: jsii.Bool(true),
	})
	b.signInFirewall(pool)
	awscdk.NewCfnOutput(b.stack, jsii.String(outputUserPoolID), &awscdk.CfnOutputProps{Value: pool.UserPoolId()})
	awscdk.NewCfnOutput(b.stack, jsii.String(outputUserPoolClientID), &awscdk.CfnOutputProps{Value: client.UserPoolClientId()})
	awscdk.NewCfnOutput(b.stack, jsii.String(outputUserPoolDomain), &awscdk.CfnOutputProps{
		Value: domain.BaseUrl(nil), Description: jsii.String("Managed login of the operators' pool (authorize and token endpoints)"),
	})
	issuer := awscdk.Fn_Join(jsii.String(""), &[]*string{
		jsii.String("https://cognito-idp."), b.stack.Region(), jsii.String(".amazonaws.com/"), pool.UserPoolId(),
	})
	return issuer, &[]*string{client.UserPoolClientId(), b.consoleClient(pool, domain)}
}

// signInFirewall puts a WAF web ACL on the user pool: one client IP may
// send signInRateLimit requests in five minutes, then WAF blocks it until
// its rate falls. WAF cannot protect the HTTP API itself (docs/decisions.md,
// "Per-client limits and WAF").
func (b *builder) signInFirewall(pool awscognito.UserPool) {
	visibility := func(metric string) *awswafv2.CfnWebACL_VisibilityConfigProperty {
		return &awswafv2.CfnWebACL_VisibilityConfigProperty{
			CloudWatchMetricsEnabled: jsii.Bool(true), MetricName: jsii.String(metric), SampledRequestsEnabled: jsii.Bool(true),
		}
	}
	acl := awswafv2.NewCfnWebACL(b.stack, jsii.String("SignInWebAcl"), &awswafv2.CfnWebACLProps{
		Name:             jsii.String(b.name("sign-in")),
		Scope:            jsii.String("REGIONAL"),
		DefaultAction:    &awswafv2.CfnWebACL_DefaultActionProperty{Allow: map[string]any{}},
		VisibilityConfig: visibility(b.name("sign-in")),
		Rules: &[]any{&awswafv2.CfnWebACL_RuleProperty{
			Name:     jsii.String("rate-per-ip"),
			Priority: jsii.Number(0),
			Action:   &awswafv2.CfnWebACL_RuleActionProperty{Block: map[string]any{}},
			Statement: &awswafv2.CfnWebACL_StatementProperty{
				RateBasedStatement: &awswafv2.CfnWebACL_RateBasedStatementProperty{
					Limit: jsii.Number(signInRateLimit), AggregateKeyType: jsii.String("IP"),
				},
			},
			VisibilityConfig: visibility(b.name("sign-in-rate-per-ip")),
		}},
	})
	awswafv2.NewCfnWebACLAssociation(b.stack, jsii.String("SignInWebAclAssociation"), &awswafv2.CfnWebACLAssociationProps{
		ResourceArn: pool.UserPoolArn(), WebAclArn: acl.AttrArn(),
	})
}

// customDomain maps the HTTP API's $default stage to the configured
// domain name with its ACM certificate (a regional endpoint, TLS 1.2); the
// operator points the name's DNS at the ApiDomainTarget output.
func (b *builder) customDomain(stage awsapigatewayv2.CfnStage) {
	if b.props.APIDomainName == "" {
		return
	}
	domain := awsapigatewayv2.NewCfnDomainName(b.stack, jsii.String("ApiDomain"), &awsapigatewayv2.CfnDomainNameProps{
		DomainName: jsii.String(b.props.APIDomainName),
		DomainNameConfigurations: &[]any{&awsapigatewayv2.CfnDomainName_DomainNameConfigurationProperty{
			CertificateArn: jsii.String(b.props.APICertificateARN),
			EndpointType:   jsii.String("REGIONAL"),
			SecurityPolicy: jsii.String("TLS_1_2"),
		}},
	})
	mapping := awsapigatewayv2.NewCfnApiMapping(b.stack, jsii.String("ApiDomainMapping"), &awsapigatewayv2.CfnApiMappingProps{
		ApiId: b.api.ApiId(), DomainName: domain.Ref(), Stage: stage.Ref(),
	})
	mapping.AddDependency(stage)
	awscdk.NewCfnOutput(b.stack, jsii.String(outputAPIDomainTarget), &awscdk.CfnOutputProps{
		Value:       domain.AttrRegionalDomainName(),
		Description: jsii.String("DNS target (CNAME or alias) for " + b.props.APIDomainName),
	})
}
