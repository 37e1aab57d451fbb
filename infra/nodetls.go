package main

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3assets"
	"github.com/aws/jsii-runtime-go"

	"github.com/maasflow/maasflow/shared/config"
)

// Node endpoints on AWS: the node routes (/node/v1/…) live on an HTTP API
// of their own, reachable only through a custom domain with mutual TLS whose
// trust store is the node CA certificate; its execute-api endpoint is
// disabled, since that endpoint does no mutual TLS. The ordinary API gains
// the node routes a node calls without a certificate: recovery (its
// certificate expired) and its own design (with its enrollment token or
// identity). docs/deploy.md "Node identity on AWS".

// Context keys of the node endpoints' mutual TLS; all four or none.
const (
	// ctxNodeCAKeyARN is the KMS asymmetric key (ECC_NIST_P256,
	// SIGN_VERIFY) that signs node certificates.
	ctxNodeCAKeyARN = "maasflow:nodeCaKeyArn"
	// ctxNodeCACertFile is a file holding the node CA certificate that key
	// self-signed (PEM): the trust store and the API's ca_pem.
	ctxNodeCACertFile = "maasflow:nodeCaCertFile"
	// ctxNodeDomainName and ctxNodeCertificateARN name the mutual TLS
	// custom domain and its ACM certificate (same region).
	ctxNodeDomainName     = "maasflow:nodeDomainName"
	ctxNodeCertificateARN = "maasflow:nodeCertificateArn"
)

// Node routes of the mutual TLS API, and of the ordinary one.
const (
	routeNodeWait    = "/node/v1/nodes/{id}/tasks/wait"
	routeNodeResult  = "/node/v1/nodes/{id}/tasks/{task_id}/result"
	routeNodeRenew   = "/node/v1/nodes/{id}/certificate"
	routeNodeRecover = "/api/v1/nodes/{id}/recover"
	routeNodeDesign  = "/api/v1/nodes/{id}/design"
)

// Throttling of the node API: a heartbeat per node at most every few
// seconds, renewals rarer still.
const (
	nodeRateLimit  = 200
	nodeBurstLimit = 400
)

// outputNodeDomainTarget is the DNS target of the mutual TLS domain.
const outputNodeDomainTarget = "NodeDomainTarget"

// NodeTLSProps configure the node endpoints' mutual TLS on AWS.
type NodeTLSProps struct {
	// CAKeyARN is the node CA's KMS key; CACertFile the certificate it
	// self-signed, whose PEM CACertPEM holds.
	CAKeyARN   string
	CACertFile string
	CACertPEM  string
	// DomainName and CertificateARN make the mutual TLS custom domain.
	DomainName     string
	CertificateARN string
}

// nodeTLSProps reads the node mutual TLS settings from the context
// strings: nil when none is given, the certificate file read.
func nodeTLSProps(strs map[string]string) (*NodeTLSProps, error) {
	p := &NodeTLSProps{CAKeyARN: strs[ctxNodeCAKeyARN], CACertFile: strs[ctxNodeCACertFile],
		DomainName: strs[ctxNodeDomainName], CertificateARN: strs[ctxNodeCertificateARN]}
	if *p == (NodeTLSProps{}) {
		return nil, nil //nolint:nilnil // no node mutual TLS is a valid setting
	}
	if p.CACertFile != "" {
		raw, err := os.ReadFile(p.CACertFile)
		if err != nil {
			return nil, fmt.Errorf("context %s: %w", ctxNodeCACertFile, err)
		}
		p.CACertPEM = string(raw)
	}
	return p, nil
}

// validate reports what is missing or wrong.
func (p *NodeTLSProps) validate() error {
	var errs []error
	need := func(ok bool, what, key string) {
		if !ok {
			errs = append(errs, errors.New("node mutual TLS: "+what+" is required (-c "+key+"=…)"))
		}
	}
	need(p.CAKeyARN != "", "the node CA's KMS key ARN", ctxNodeCAKeyARN)
	need(p.CACertFile != "", "the node CA certificate file", ctxNodeCACertFile)
	need(p.DomainName != "", "the node endpoints' domain name", ctxNodeDomainName)
	need(p.CertificateARN != "", "the domain's ACM certificate ARN", ctxNodeCertificateARN)
	if p.CACertFile != "" {
		if err := checkCACert(p.CACertPEM); err != nil {
			errs = append(errs, errors.New("node mutual TLS: "+ctxNodeCACertFile+": "+err.Error()))
		}
	}
	return errors.Join(errs...)
}

// checkCACert accepts one PEM CA certificate: what the trust store and the
// API's node CA need.
func checkCACert(certPEM string) error {
	block, _ := pem.Decode([]byte(certPEM))
	if block == nil || block.Type != "CERTIFICATE" {
		return errors.New("is not a PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return errors.New("does not parse as X.509")
	}
	if !cert.IsCA {
		return errors.New("is not a CA certificate")
	}
	return nil
}

// nodeTLS builds the node endpoints' mutual TLS API when configured.
func (b *builder) nodeTLS() {
	p := b.props.NodeTLS
	if p == nil {
		return
	}
	fn := b.fns[functionAPI]
	// An integration belongs to one API: one for each.
	plain := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("NodeRecoveryIntegration"), fn, nil)
	integration := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("NodeIntegration"), fn, nil)

	// Recovery and the design stay on the ordinary API: no certificate.
	for _, rt := range []struct {
		path   string
		method awsapigatewayv2.HttpMethod
	}{{routeNodeRecover, awsapigatewayv2.HttpMethod_POST}, {routeNodeDesign, awsapigatewayv2.HttpMethod_GET}} {
		for _, r := range *b.api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path: jsii.String(rt.path), Methods: &[]awsapigatewayv2.HttpMethod{rt.method}, Integration: plain,
		}) {
			nagSuppress(r, "AwsSolutions-APIG4", "a node has no operator JWT: the handler authenticates it by its single-use "+
				"recovery token or its node credential, and the stage's throttle bounds the route")
		}
	}

	nodeAPI := awsapigatewayv2.NewHttpApi(b.stack, jsii.String("NodeApi"), &awsapigatewayv2.HttpApiProps{
		ApiName:     jsii.String(b.name("node-api")),
		Description: jsii.String("maasflow node endpoints: mutual TLS through the node domain only"),
		// The execute-api endpoint does no mutual TLS: only the domain serves.
		DisableExecuteApiEndpoint: jsii.Bool(true),
		CreateDefaultStage:        jsii.Bool(false),
	})
	for _, rt := range []struct {
		path   string
		method awsapigatewayv2.HttpMethod
	}{
		{routeNodeWait, awsapigatewayv2.HttpMethod_GET},
		{routeNodeResult, awsapigatewayv2.HttpMethod_POST},
		{routeNodeRenew, awsapigatewayv2.HttpMethod_POST},
	} {
		for _, r := range *nodeAPI.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path: jsii.String(rt.path), Methods: &[]awsapigatewayv2.HttpMethod{rt.method}, Integration: integration,
		}) {
			nagSuppress(r, "AwsSolutions-APIG4", "the custom domain's mutual TLS authenticates the node against the node CA "+
				"trust store, and the handler checks the certificate's node against the path and the node's record")
		}
	}

	stage := b.defaultStage("NodeApi", nodeAPI.ApiId(), nodeRateLimit, nodeBurstLimit, nil)

	// The trust store is the node CA certificate, an S3 object API
	// Gateway reads at deploy time; a changed certificate is a new object.
	truststore := awss3assets.NewAsset(b.stack, jsii.String("NodeTruststore"), &awss3assets.AssetProps{
		Path: jsii.String(p.CACertFile),
	})
	domain := awsapigatewayv2.NewCfnDomainName(b.stack, jsii.String("NodeDomain"), &awsapigatewayv2.CfnDomainNameProps{
		DomainName: jsii.String(p.DomainName),
		DomainNameConfigurations: &[]any{&awsapigatewayv2.CfnDomainName_DomainNameConfigurationProperty{
			CertificateArn: jsii.String(p.CertificateARN),
			EndpointType:   jsii.String("REGIONAL"),
			SecurityPolicy: jsii.String("TLS_1_2"),
		}},
		MutualTlsAuthentication: &awsapigatewayv2.CfnDomainName_MutualTlsAuthenticationProperty{
			TruststoreUri: truststore.S3ObjectUrl(),
		},
	})
	mapping := awsapigatewayv2.NewCfnApiMapping(b.stack, jsii.String("NodeDomainMapping"), &awsapigatewayv2.CfnApiMappingProps{
		ApiId: nodeAPI.ApiId(), DomainName: domain.Ref(), Stage: stage.Ref(),
	})
	mapping.AddDependency(stage)

	// The API function signs with the key and hands nodes the domain.
	fn.AddEnvironment(jsii.String(config.EnvNodeCAKeyID), jsii.String(p.CAKeyARN), nil)
	fn.AddEnvironment(jsii.String(config.EnvNodeCACert), jsii.String(p.CACertPEM), nil)
	fn.AddEnvironment(jsii.String(config.EnvNodeMTLSURL), jsii.String("https://"+p.DomainName), nil)
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("kms:GetPublicKey", "kms:Sign"),
		Resources: jsii.Strings(p.CAKeyARN),
	}))
	awscdk.NewCfnOutput(b.stack, jsii.String(outputNodeDomainTarget), &awscdk.CfnOutputProps{
		Value:       domain.AttrRegionalDomainName(),
		Description: jsii.String("DNS target (CNAME or alias) for " + p.DomainName + ", the node endpoints' mutual TLS domain"),
	})
}
