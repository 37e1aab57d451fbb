package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// Context keys (cdk.json "context", or `cdk synth -c key=value`).
const (
	// ctxStage names the deployment (dev, staging, prod, …). Required: it
	// prefixes every named resource, so stages share an account and region.
	ctxStage       = "maasflow:stage"
	ctxJWTIssuer   = "maasflow:jwtIssuer"
	ctxJWTAudience = "maasflow:jwtAudience"
	ctxAdminGroup  = "maasflow:adminGroup"
	// ctxGroupsClaim names the token claim holding the caller's groups
	// (default cognito:groups).
	ctxGroupsClaim = "maasflow:adminGroupsClaim"
	// The node-agent package and the task-signing public keys the
	// bootstrap bundles carry.
	ctxNodeAgentOCIRef    = "maasflow:nodeAgentOciRef"
	ctxNodeAgentDigest    = "maasflow:nodeAgentDigest"
	ctxTaskSigningPubKeys = "maasflow:taskSigningPubKeys"
	// The enrollment API URL nodes call (a custom domain in production)
	// and the CA bundle (a PEM file) its certificate chains to.
	ctxEnrollmentAPIURL = "maasflow:enrollmentApiUrl"
	ctxCABundleFile     = "maasflow:caBundleFile"
	// ctxImportTable makes the stack use the table a destroyed stack of the
	// same stage retained, instead of creating it.
	ctxImportTable = "maasflow:importTable"
	// ctxSecretsKMSKey is an optional customer-managed KMS key ARN for the
	// site secrets.
	ctxSecretsKMSKey = "maasflow:secretsKmsKeyArn"
	// The MAAS VPC path: an existing VPC, the private subnets the
	// MAAS-facing functions run in, and the CIDRs MAAS regions live in.
	ctxVPCID     = "maasflow:vpcId"
	ctxSubnetIDs = "maasflow:subnetIds"
	ctxMAASCIDRs = "maasflow:maasCidrs"
	// ctxConnectorSites lists the site IDs reached through a site connector.
	ctxConnectorSites = "maasflow:connectorSites"
	// ctxAlarmEmail subscribes an address to the alarm topic.
	ctxAlarmEmail = "maasflow:alarmEmail"
	// ctxCognito creates a Cognito user pool for operators when no JWT
	// issuer is given.
	ctxCognito = "maasflow:cognito"
	// Provisioning.Allocation: its base URL and the Secrets Manager secret
	// (under the stage's prefix, <stage>/…) with its bearer token.
	ctxAllocationServiceURL = "maasflow:allocationServiceUrl"
	ctxAllocationSecretName = "maasflow:allocationSecretName" //nolint:gosec // G101: a context key naming a secret, not a credential
	// ctxReservedConcurrency is each background function's reserved
	// concurrency (default defaultReservedConcurrency, 0 on dev).
	ctxReservedConcurrency = "maasflow:reservedConcurrency"
	// ctxTags are cost-allocation tags: a JSON object, or k=v,k2=v2.
	ctxTags = "maasflow:tags"
	// ctxCLICallbackURLs are the CLI app client's redirect URIs.
	ctxCLICallbackURLs = "maasflow:cliCallbackUrls"
	// ctxAPIDomainName and ctxAPICertificateARN give the API a custom
	// domain with an ACM certificate of the stack's region.
	ctxAPIDomainName     = "maasflow:apiDomainName"
	ctxAPICertificateARN = "maasflow:apiCertificateArn"
)

// envStage is read when the context holds no stage (`MAASFLOW_STAGE=dev make synth`).
const envStage = "MAASFLOW_STAGE"

// envAssetDir overrides where the function bootstraps are read from
// (default <root>/bin, the output of make build).
const envAssetDir = "MAASFLOW_ASSET_DIR"

func main() {
	app := awscdk.NewApp(nil)
	_, err := buildStack(app, ".", os.Getenv)
	if err == nil {
		app.Synth(nil)
	}
	jsii.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot build the maasflow stack:\n%v\n", err)
		os.Exit(1)
	}
}

// buildStack reads the repository at root and adds the maasflow stack to
// app, configured from the app's context and from getenv.
func buildStack(app awscdk.App, root string, getenv func(string) string) (awscdk.Stack, error) {
	src, err := LoadSources(root)
	if err != nil {
		return nil, err
	}
	assetDir := getenv(envAssetDir)
	if assetDir == "" {
		assetDir = filepath.Join(root, "bin")
	}
	lists := map[string][]string{}
	for _, key := range []string{ctxJWTAudience, ctxTaskSigningPubKeys, ctxSubnetIDs, ctxMAASCIDRs, ctxConnectorSites, ctxCLICallbackURLs} {
		if lists[key], err = contextList(app, key); err != nil {
			return nil, err
		}
	}
	strs := map[string]string{}
	for _, key := range []string{ctxStage, ctxJWTIssuer, ctxAdminGroup, ctxGroupsClaim, ctxNodeAgentOCIRef, ctxNodeAgentDigest,
		ctxEnrollmentAPIURL, ctxCABundleFile, ctxSecretsKMSKey, ctxVPCID, ctxAlarmEmail,
		ctxAllocationServiceURL, ctxAllocationSecretName, ctxAPIDomainName, ctxAPICertificateARN,
		ctxNodeCAKeyARN, ctxNodeCACertFile, ctxNodeDomainName, ctxNodeCertificateARN,
		ctxConnectorCAKeyARN, ctxConnectorCACertFile} {
		if strs[key], err = contextString(app, key); err != nil {
			return nil, err
		}
	}
	flags := map[string]bool{}
	for _, key := range []string{ctxImportTable, ctxCognito} {
		if flags[key], err = contextBool(app, key); err != nil {
			return nil, err
		}
	}
	stage := strs[ctxStage]
	if stage == "" {
		stage = strings.TrimSpace(getenv(envStage))
	}
	tags, err := contextTags(app, ctxTags)
	if err != nil {
		return nil, err
	}
	// A dev account often keeps a new account's low concurrency limit,
	// under which any reservation fails the deploy.
	reserved := defaultReservedConcurrency
	if stage == devStage {
		reserved = 0
	}
	if reserved, err = contextInt(app, ctxReservedConcurrency, reserved); err != nil {
		return nil, err
	}
	callbacks := lists[ctxCLICallbackURLs]
	if len(callbacks) == 0 {
		callbacks = []string{defaultCLICallbackURL}
	}
	var caBundle string
	if f := strs[ctxCABundleFile]; f != "" {
		b, err := os.ReadFile(f) //nolint:gosec // G304: the operator names the file
		if err != nil {
			return nil, fmt.Errorf("context %s: %w", ctxCABundleFile, err)
		}
		caBundle = string(b)
	}
	nodeTLS, err := nodeTLSProps(strs)
	if err != nil {
		return nil, err
	}
	connectorCA, err := connectorCAProps(strs)
	if err != nil {
		return nil, err
	}
	props := &MaasflowStackProps{
		StackProps: awscdk.StackProps{
			Description: jsii.String("maasflow " + stage + ": bare-metal GPU server onboarding through Canonical MAAS"),
		},
		Stage:       stage,
		Sources:     src,
		AssetDir:    assetDir,
		JWTIssuer:   strs[ctxJWTIssuer],
		JWTAudience: lists[ctxJWTAudience],
		AdminGroup:  strs[ctxAdminGroup],
		GroupsClaim: strs[ctxGroupsClaim],
		Cognito:     flags[ctxCognito],

		NodeAgentOCIRef:    strs[ctxNodeAgentOCIRef],
		NodeAgentDigest:    strs[ctxNodeAgentDigest],
		TaskSigningPubKeys: lists[ctxTaskSigningPubKeys],
		EnrollmentAPIURL:   strs[ctxEnrollmentAPIURL],
		CABundle:           caBundle,

		ImportTable:      flags[ctxImportTable],
		SecretsKMSKeyARN: strs[ctxSecretsKMSKey],
		ConnectorSites:   lists[ctxConnectorSites],
		AlarmEmail:       strs[ctxAlarmEmail],

		AllocationServiceURL: strs[ctxAllocationServiceURL],
		AllocationSecretName: strs[ctxAllocationSecretName],

		ReservedConcurrency: reserved,
		Tags:                tags,
		CLICallbackURLs:     callbacks,
		APIDomainName:       strs[ctxAPIDomainName],
		APICertificateARN:   strs[ctxAPICertificateARN],
		NodeTLS:             nodeTLS,
		ConnectorCA:         connectorCA,
	}
	if strs[ctxVPCID] != "" || len(lists[ctxSubnetIDs]) > 0 || len(lists[ctxMAASCIDRs]) > 0 {
		props.VPC = &VPCConfig{VPCID: strs[ctxVPCID], SubnetIDs: lists[ctxSubnetIDs], MAASCIDRs: lists[ctxMAASCIDRs]}
	}
	if err := props.Validate(); err != nil {
		return nil, err
	}
	return NewMaasflowStack(app, props.StackName(), props), nil
}

// contextString reads a string context value; absent is "".
func contextString(app awscdk.App, key string) (string, error) {
	switch v := app.Node().TryGetContext(jsii.String(key)).(type) {
	case nil:
		return "", nil
	case string:
		return strings.TrimSpace(v), nil
	default:
		return "", fmt.Errorf("context %s must be a string, not %T", key, v)
	}
}

// contextBool reads a boolean context value given as JSON (cdk.json) or as
// the string true/false (-c key=true); absent is false.
func contextBool(app awscdk.App, key string) (bool, error) {
	switch v := app.Node().TryGetContext(jsii.String(key)).(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	case string:
		switch strings.TrimSpace(v) {
		case "true":
			return true, nil
		case "false", "":
			return false, nil
		}
	}
	return false, fmt.Errorf("context %s must be true or false", key)
}

// contextList reads a list context value given as a JSON array (cdk.json)
// or a comma-separated string (-c key=a,b).
func contextList(app awscdk.App, key string) ([]string, error) {
	var items []string
	switch v := app.Node().TryGetContext(jsii.String(key)).(type) {
	case nil:
	case string:
		items = strings.Split(v, ",")
	case []any:
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("context %s must list strings, not %T", key, e)
			}
			items = append(items, s)
		}
	default:
		return nil, fmt.Errorf("context %s must be a string or a list of strings, not %T", key, v)
	}
	var out []string
	for _, s := range items {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// contextInt reads a whole number given as JSON or as a string; absent is
// def.
func contextInt(app awscdk.App, key string, def int) (int, error) {
	switch v := app.Node().TryGetContext(jsii.String(key)).(type) {
	case nil:
		return def, nil
	case float64:
		if v == float64(int(v)) {
			return int(v), nil
		}
	case string:
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			return n, nil
		}
	}
	return 0, fmt.Errorf("context %s must be a whole number", key)
}

// contextTags reads tags given as a JSON object of strings (cdk.json) or
// as k=v pairs separated by commas (-c key=k=v,k2=v2).
func contextTags(app awscdk.App, key string) (map[string]string, error) {
	tags := map[string]string{}
	switch v := app.Node().TryGetContext(jsii.String(key)).(type) {
	case nil:
	case map[string]any:
		for k, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("context %s: tag %q must be a string, not %T", key, k, e)
			}
			tags[strings.TrimSpace(k)] = strings.TrimSpace(s)
		}
	case string:
		for pair := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(pair) == "" {
				continue
			}
			k, val, ok := strings.Cut(pair, "=")
			if !ok {
				return nil, fmt.Errorf("context %s: %q is not key=value", key, strings.TrimSpace(pair))
			}
			tags[strings.TrimSpace(k)] = strings.TrimSpace(val)
		}
	default:
		return nil, fmt.Errorf("context %s must be an object of strings or k=v,k2=v2, not %T", key, v)
	}
	return tags, nil
}
