package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/config"
)

// connectorQueues matches the stage's connector queue prefix, the site ID
// left open.
func connectorQueues(r string) bool {
	return strings.Contains(r, ":maasflow-prod-connector-*") || strings.Contains(r, ":maasflow-dev-connector-*")
}

// connectorQueueAdmin is what the api function does to a site's queues.
var connectorQueueAdmin = []string{"sqs:CreateQueue", "sqs:SetQueueAttributes", "sqs:TagQueue",
	"sqs:GetQueueUrl", "sqs:GetQueueAttributes", "sqs:ListQueueTags", "sqs:DeleteQueue"}

// checkConnectorAccess checks the connectors' Roles Anywhere setup: one
// trust anchor over the connector CA, a profile naming one role trusted
// only through that anchor, whose policy scopes each session to the site
// its certificate's CN names, and no IAM user at all.
func checkConnectorAccess(t *testing.T, cfn *cfnTemplate) {
	t.Helper()
	assert.NotContains(t, cfn.raw(t), "AWS::IAM::User", "connectors hold no long-lived keys")

	anchorID, anchor := cfn.byID(t, "AWS::RolesAnywhere::TrustAnchor", "ConnectorTrustAnchor")
	assert.Equal(t, true, anchor.Properties["Enabled"])
	assert.Equal(t, "CERTIFICATE_BUNDLE", fmt.Sprint(anchor.Properties["Source"].(map[string]any)["SourceType"]))
	assert.Contains(t, fmt.Sprint(anchor.Properties["Source"]), "BEGIN CERTIFICATE", "the connector CA is the anchor's source")

	roleID, role := cfn.byID(t, "AWS::IAM::Role", "ConnectorRole")
	trust := fmt.Sprint(role.Properties["AssumeRolePolicyDocument"])
	for _, want := range []string{"rolesanywhere.amazonaws.com", "sts:AssumeRole", "sts:TagSession", "sts:SetSourceIdentity", "aws:SourceArn", anchorID} {
		assert.Contains(t, trust, want)
	}
	assert.InDelta(t, connectorSessionSeconds, role.Properties["MaxSessionDuration"], 0)

	_, profile := cfn.byID(t, "AWS::RolesAnywhere::Profile", "ConnectorProfile")
	assert.Contains(t, fmt.Sprint(profile.Properties["RoleArns"]), roleID)
	assert.InDelta(t, connectorSessionSeconds, profile.Properties["DurationSeconds"], 0)

	var sawQueue, sawPut bool
	for _, s := range cfn.statements(t) {
		if len(s.roles) != 1 || s.roles[0] != roleID {
			continue
		}
		res := strings.Join(s.resources, " ")
		actions := slices.Sorted(slices.Values(s.actions))
		switch {
		case slices.Equal(actions, []string{"sqs:DeleteMessage", "sqs:ReceiveMessage"}):
			sawQueue = true
			assert.Contains(t, res, ":maasflow-prod-connector-${aws:PrincipalTag/x509Subject/CN}", "a connector receives only its own site's requests")
			assert.NotContains(t, res, "*")
		case slices.Equal(actions, []string{"dynamodb:PutItem"}):
			sawPut = true
			assert.Equal(t, map[string]any{"ForAllValues:StringEquals": map[string]any{
				"dynamodb:LeadingKeys": []any{"${aws:PrincipalTag/x509Subject/CN}"}}}, s.conditions,
				"a connector writes only under its own site's key")
		default:
			t.Errorf("unexpected connector grant %v on %s", s.actions, res)
		}
	}
	assert.True(t, sawQueue && sawPut, "the connector role receives its requests and writes its replies")

	_, fn := cfn.byID(t, "AWS::Lambda::Function", "ApiFunction")
	env := envVars(fn)
	assert.Equal(t, testConnectorCAKey, env[config.EnvConnectorCAKeyID])
	assert.Contains(t, fmt.Sprint(env[config.EnvConnectorCACert]), "BEGIN CERTIFICATE")
	for _, v := range []string{config.EnvConnectorTrustAnchor, config.EnvConnectorProfile, config.EnvConnectorRole} {
		assert.NotEmpty(t, env[v], v)
	}
}

// TestConnectorSettings checks what a synthesis refuses: connector sites
// without the connector CA, half a CA setting, the node CA's key.
func TestConnectorSettings(t *testing.T) {
	base := func() *MaasflowStackProps {
		return &MaasflowStackProps{Stage: devStage}
	}
	p := base()
	p.ConnectorSites = []string{"site-a"}
	require.Error(t, errorsOf(p.validateConnectors()))
	assert.Contains(t, errorsOf(p.validateConnectors()).Error(), ctxConnectorCAKeyARN)

	p = base()
	p.ConnectorCA = &ConnectorCAProps{KeyARN: testConnectorCAKey}
	assert.Contains(t, errorsOf(p.validateConnectors()).Error(), ctxConnectorCACertFile)

	p = base()
	p.ConnectorCA = &ConnectorCAProps{KeyARN: testConnectorCAKey, CertFile: "x.pem", CertPEM: "not a certificate"}
	assert.Contains(t, errorsOf(p.validateConnectors()).Error(), "is not a PEM certificate")

	p = base()
	p.ConnectorCA = &ConnectorCAProps{KeyARN: testKMSKey, CertFile: "x.pem", CertPEM: testCA}
	p.NodeTLS = &NodeTLSProps{CAKeyARN: testKMSKey}
	assert.Contains(t, errorsOf(p.validateConnectors()).Error(), "must not be the node CA's")

	p = base()
	p.ConnectorCA = &ConnectorCAProps{KeyARN: testConnectorCAKey, CertFile: "x.pem", CertPEM: testCA}
	assert.Empty(t, p.validateConnectors())
}

func errorsOf(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%v", errs)
}
