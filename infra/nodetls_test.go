package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/config"
)

// Settings of the node endpoints' mutual TLS in the tests.
const (
	testNodeKey    = "arn:aws:kms:eu-west-1:111122223333:key/abcd1234-aaaa-bbbb-cccc-1234567890ab"
	testNodeDomain = "nodes.gpu.example.com"
	testNodeCert   = "arn:aws:acm:eu-west-1:111122223333:certificate/9f8e7d6c-1111-2222-3333-444455556666"
)

// nodeTLSContext is fullContext with the node endpoints on mutual TLS.
func nodeTLSContext(t *testing.T) map[string]any {
	t.Helper()
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(caFile, []byte(testCA), 0o600))
	ctx := fullContext(t, caFile)
	ctx[ctxNodeCAKeyARN] = testNodeKey
	ctx[ctxNodeCACertFile] = caFile
	ctx[ctxNodeDomainName] = testNodeDomain
	ctx[ctxNodeCertificateARN] = testNodeCert
	return ctx
}

// TestNodeMutualTLS: with the node CA and a domain configured, the node
// routes are served only by an API whose execute-api endpoint is off,
// through a custom domain with mutual TLS whose trust store is the node CA
// certificate; the API function signs with the KMS key and hands nodes
// the domain; recovery and the design stay on the ordinary API; cdk-nag
// finds nothing unsuppressed.
func TestNodeMutualTLS(t *testing.T) {
	requireNode(t)
	ctx := nodeTLSContext(t)
	cfn, _, _, _ := synth(t, ctx)

	var mainAPI, nodeAPI string
	for id, r := range cfn.Resources {
		if r.Type != "AWS::ApiGatewayV2::Api" {
			continue
		}
		if functionIDPrefix(id) == "NodeApi" {
			nodeAPI = id
			assert.Equal(t, true, r.Properties["DisableExecuteApiEndpoint"], "the execute-api endpoint does no mutual TLS")
			continue
		}
		mainAPI = id
		assert.NotEqual(t, true, r.Properties["DisableExecuteApiEndpoint"])
	}
	require.NotEmpty(t, nodeAPI)
	require.NotEmpty(t, mainAPI)

	routes := map[string][]string{}
	for _, r := range cfn.Resources {
		if r.Type == "AWS::ApiGatewayV2::Route" {
			api := refTarget(r.Properties["ApiId"])
			routes[api.(string)] = append(routes[api.(string)], r.Properties["RouteKey"].(string)) //nolint:forcetypeassert // the template's shape
		}
	}
	slices.Sort(routes[nodeAPI])
	assert.Equal(t, []string{"GET " + routeNodeWait, "POST " + routeNodeRenew, "POST " + routeNodeResult}, routes[nodeAPI])
	for _, key := range routes[mainAPI] {
		assert.NotContains(t, key, "/node/v1/", "a node route on the ordinary API")
	}
	assert.Contains(t, routes[mainAPI], "POST "+routeNodeRecover)
	assert.Contains(t, routes[mainAPI], "GET "+routeNodeDesign)

	domainID, domain := cfn.byID(t, "AWS::ApiGatewayV2::DomainName", "NodeDomain")
	assert.Equal(t, testNodeDomain, domain.Properties["DomainName"])
	mtls, ok := domain.Properties["MutualTlsAuthentication"].(map[string]any)
	require.True(t, ok, "the node domain has mutual TLS: %v", domain.Properties)
	uri, err := json.Marshal(mtls["TruststoreUri"])
	require.NoError(t, err)
	assert.Contains(t, string(uri), "s3://", "the trust store is an S3 object")
	assert.Contains(t, string(uri), ".pem", "the node CA certificate file")
	configs := list(domain.Properties["DomainNameConfigurations"])
	require.Len(t, configs, 1)
	assert.Equal(t, map[string]any{"CertificateArn": testNodeCert, "EndpointType": "REGIONAL", "SecurityPolicy": "TLS_1_2"}, configs[0])
	var mapped []string
	for _, r := range cfn.Resources {
		if r.Type == "AWS::ApiGatewayV2::ApiMapping" && refTarget(r.Properties["DomainName"]) == domainID {
			mapped = append(mapped, refTarget(r.Properties["ApiId"]).(string)) //nolint:forcetypeassert // the template's shape
		}
	}
	assert.Equal(t, []string{nodeAPI}, mapped, "the mutual TLS domain serves the node API alone")

	_, fn := cfn.byID(t, "AWS::Lambda::Function", CamelCase(functionAPI)+"Function")
	env := envVars(fn)
	assert.Equal(t, testNodeKey, env[config.EnvNodeCAKeyID])
	assert.Equal(t, testCA, env[config.EnvNodeCACert])
	assert.Equal(t, "https://"+testNodeDomain, env[config.EnvNodeMTLSURL])
	signs := false
	for _, st := range cfn.statements(t) {
		if slices.Contains(st.actions, "kms:Sign") && !slices.Equal(st.resources, []string{testConnectorCAKey}) {
			signs = true
			assert.Equal(t, []string{testNodeKey}, st.resources, "the signing grant names the node CA key alone")
			assert.ElementsMatch(t, []string{"kms:GetPublicKey", "kms:Sign"}, st.actions)
		}
	}
	assert.True(t, signs, "the API function may sign with the node CA key")
	assert.Contains(t, cfn.Outputs, outputNodeDomainTarget)

	assert.Empty(t, nagFindings(t, ctx, nil), "cdk-nag with the node mutual TLS")
}

// TestNodeMutualTLSSettings: the four settings come together, and the
// certificate must be a CA's.
func TestNodeMutualTLSSettings(t *testing.T) {
	p, err := nodeTLSProps(map[string]string{})
	require.NoError(t, err)
	assert.Nil(t, p, "no setting, no mutual TLS domain")

	p, err = nodeTLSProps(map[string]string{ctxNodeDomainName: testNodeDomain})
	require.NoError(t, err)
	err = p.validate()
	require.Error(t, err)
	for _, key := range []string{ctxNodeCAKeyARN, ctxNodeCACertFile, ctxNodeCertificateARN} {
		assert.Contains(t, err.Error(), key)
	}

	leaf := filepath.Join(t.TempDir(), "not-a-ca.pem")
	require.NoError(t, os.WriteFile(leaf, []byte("not a certificate"), 0o600))
	p, err = nodeTLSProps(map[string]string{ctxNodeCAKeyARN: testNodeKey, ctxNodeCACertFile: leaf,
		ctxNodeDomainName: testNodeDomain, ctxNodeCertificateARN: testNodeCert})
	require.NoError(t, err)
	require.ErrorContains(t, p.validate(), "is not a PEM certificate")

	_, err = nodeTLSProps(map[string]string{ctxNodeCACertFile: filepath.Join(t.TempDir(), "missing.pem")})
	require.ErrorContains(t, err, ctxNodeCACertFile)
}
