package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsrolesanywhere"
	"github.com/aws/jsii-runtime-go"

	"github.com/maasflow/maasflow/shared/config"
)

// Connectors authenticate with short-lived certificates, not IAM users:
// one Roles Anywhere trust anchor over the connector CA, one profile and
// one role for every connector, scoped to the connector's own site by the
// subject common name of its certificate, which maasflow sets to the site
// ID (docs/decisions.md, "Connector sites through the API, on Roles
// Anywhere sessions").

// Context keys of the connector CA; both or none.
const (
	// ctxConnectorCAKeyARN is the KMS asymmetric key (ECC_NIST_P256,
	// SIGN_VERIFY) that signs connector certificates: not the node CA's.
	ctxConnectorCAKeyARN = "maasflow:connectorCaKeyArn"
	// ctxConnectorCACertFile is a file holding the certificate that key
	// self-signed (PEM): the trust anchor's source.
	ctxConnectorCACertFile = "maasflow:connectorCaCertFile"
)

// connectorSessionSeconds is a Roles Anywhere session's life; the
// connector renews its credentials before they expire.
const connectorSessionSeconds = 3600

// principalSite is the session tag Roles Anywhere maps from the
// certificate's subject CN: the connector's site.
const principalSite = "${aws:PrincipalTag/x509Subject/CN}"

// Stack outputs a connector's enrollment hands out as well.
const (
	outputConnectorTrustAnchor = "ConnectorTrustAnchorArn"
	outputConnectorProfile     = "ConnectorProfileArn"
	outputConnectorRole        = "ConnectorRoleArn"
)

// ConnectorCAProps name the connector CA.
type ConnectorCAProps struct {
	KeyARN   string
	CertFile string
	CertPEM  string
}

// connectorCAProps reads the connector CA settings: nil when none is
// given, the certificate file read.
func connectorCAProps(strs map[string]string) (*ConnectorCAProps, error) {
	p := &ConnectorCAProps{KeyARN: strs[ctxConnectorCAKeyARN], CertFile: strs[ctxConnectorCACertFile]}
	if p.KeyARN == "" && p.CertFile == "" {
		return nil, nil //nolint:nilnil // no connector CA is a valid setting
	}
	if p.CertFile != "" {
		raw, err := os.ReadFile(p.CertFile)
		if err != nil {
			return nil, fmt.Errorf("context %s: %w", ctxConnectorCACertFile, err)
		}
		p.CertPEM = string(raw)
	}
	return p, nil
}

// validateConnectors reports a connector CA setting that is incomplete,
// and connector sites listed without one: without it no connector could
// authenticate, since there are no IAM users.
func (p *MaasflowStackProps) validateConnectors() []error {
	ca := p.ConnectorCA
	if ca == nil {
		if len(p.ConnectorSites) > 0 {
			return []error{fmt.Errorf("connector sites need the connector CA: -c %s=… and -c %s=…", ctxConnectorCAKeyARN, ctxConnectorCACertFile)}
		}
		return nil
	}
	var errs []error
	if ca.KeyARN == "" {
		errs = append(errs, errors.New("connector CA: the KMS key ARN is required (-c "+ctxConnectorCAKeyARN+"=…)"))
	}
	if ca.CertFile == "" {
		errs = append(errs, errors.New("connector CA: the certificate file is required (-c "+ctxConnectorCACertFile+"=…)"))
	} else if err := checkCACert(ca.CertPEM); err != nil {
		errs = append(errs, errors.New("connector CA: "+ctxConnectorCACertFile+": "+err.Error()))
	}
	if p.NodeTLS != nil && ca.KeyARN != "" && ca.KeyARN == p.NodeTLS.CAKeyARN {
		errs = append(errs, errors.New("connector CA: its key must not be the node CA's: a node certificate would open an AWS session"))
	}
	return errs
}

// connectorAccess builds the Roles Anywhere trust anchor, role and profile
// connectors take sessions with, and lets the api function issue connector
// certificates and manage the sites' queues.
func (b *builder) connectorAccess() {
	ca, c := b.props.ConnectorCA, b.connector
	if ca == nil || c.table == nil {
		return
	}
	anchor := awsrolesanywhere.NewCfnTrustAnchor(b.stack, jsii.String("ConnectorTrustAnchor"), &awsrolesanywhere.CfnTrustAnchorProps{
		Name:    jsii.String(b.name("connector")),
		Enabled: jsii.Bool(true),
		Source: &awsrolesanywhere.CfnTrustAnchor_SourceProperty{
			SourceType: jsii.String("CERTIFICATE_BUNDLE"),
			SourceData: &awsrolesanywhere.CfnTrustAnchor_SourceDataProperty{X509CertificateData: jsii.String(ca.CertPEM)},
		},
	})
	role := awsiam.NewRole(b.stack, jsii.String("ConnectorRole"), &awsiam.RoleProps{
		Description:        jsii.String("maasflow " + b.props.Stage + " site connectors, one site per session (its certificate's CN)"),
		MaxSessionDuration: awscdk.Duration_Seconds(jsii.Number(connectorSessionSeconds)),
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("rolesanywhere.amazonaws.com"), &awsiam.ServicePrincipalOpts{
			Conditions: &map[string]any{"ArnEquals": map[string]any{"aws:SourceArn": anchor.AttrTrustAnchorArn()}},
		}),
	})
	// Roles Anywhere assumes the role with these three (its trust policy
	// must allow them all).
	role.AssumeRolePolicy().AddStatements(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:    jsii.Strings("sts:TagSession", "sts:SetSourceIdentity"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("rolesanywhere.amazonaws.com"), nil)},
		Conditions: &map[string]any{"ArnEquals": map[string]any{"aws:SourceArn": anchor.AttrTrustAnchorArn()}},
	}))
	// What sqsrelay.Link calls, on its own site's queue only.
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("sqs:ReceiveMessage", "sqs:DeleteMessage"),
		Resources: jsii.Strings(*b.stack.FormatArn(&awscdk.ArnComponents{
			Service: jsii.String("sqs"), Resource: jsii.String(b.connectorQueueName("") + principalSite),
			ArnFormat: awscdk.ArnFormat_NO_RESOURCE_NAME,
		})),
	}))
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("dynamodb:PutItem"),
		Resources: jsii.Strings(*c.table.TableArn()),
		Conditions: &map[string]any{"ForAllValues:StringEquals": map[string]any{
			"dynamodb:LeadingKeys": []string{principalSite},
		}},
	}))
	profile := awsrolesanywhere.NewCfnProfile(b.stack, jsii.String("ConnectorProfile"), &awsrolesanywhere.CfnProfileProps{
		Name:            jsii.String(b.name("connector")),
		Enabled:         jsii.Bool(true),
		RoleArns:        &[]any{role.RoleArn()},
		DurationSeconds: jsii.Number(connectorSessionSeconds),
	})

	fn, apiRole := b.fns[functionAPI], b.roles[functionAPI]
	fn.AddEnvironment(jsii.String(config.EnvConnectorCAKeyID), jsii.String(ca.KeyARN), nil)
	fn.AddEnvironment(jsii.String(config.EnvConnectorCACert), jsii.String(ca.CertPEM), nil)
	fn.AddEnvironment(jsii.String(config.EnvConnectorTrustAnchor), anchor.AttrTrustAnchorArn(), nil)
	fn.AddEnvironment(jsii.String(config.EnvConnectorProfile), profile.AttrProfileArn(), nil)
	fn.AddEnvironment(jsii.String(config.EnvConnectorRole), role.RoleArn(), nil)
	apiRole.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		// A statement of its own, never merged with the node CA's.
		Sid:       jsii.String("ConnectorCASign"),
		Actions:   jsii.Strings("kms:GetPublicKey", "kms:Sign"),
		Resources: jsii.Strings(ca.KeyARN),
	}))
	// A site switched to the connector path gets its queues; a disabled
	// one loses them. Only the stage's connector queues.
	apiRole.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("sqs:CreateQueue", "sqs:SetQueueAttributes", "sqs:TagQueue",
			"sqs:GetQueueUrl", "sqs:GetQueueAttributes", "sqs:ListQueueTags", "sqs:DeleteQueue"),
		Resources: jsii.Strings(*b.connectorQueuesARN()),
	}))

	for id, v := range map[string]*string{
		outputConnectorTrustAnchor: anchor.AttrTrustAnchorArn(),
		outputConnectorProfile:     profile.AttrProfileArn(),
		outputConnectorRole:        role.RoleArn(),
	} {
		awscdk.NewCfnOutput(b.stack, jsii.String(id), &awscdk.CfnOutputProps{Value: v,
			Description: jsii.String("Roles Anywhere: what a connector's session names (also returned with its certificate)")})
	}
}
