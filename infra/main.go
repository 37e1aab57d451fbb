package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// Context keys (cdk.json "context", or `cdk synth -c key=value`).
const (
	ctxStackName   = "maasflow:stackName"
	ctxJWTIssuer   = "maasflow:jwtIssuer"
	ctxJWTAudience = "maasflow:jwtAudience"
	ctxAdminGroup  = "maasflow:adminGroup"
	// The node-agent package and the task-signing public keys the
	// bootstrap bundles carry.
	ctxNodeAgentOCIRef    = "maasflow:nodeAgentOciRef"
	ctxNodeAgentDigest    = "maasflow:nodeAgentDigest"
	ctxTaskSigningPubKeys = "maasflow:taskSigningPubKeys"
	// Provisioning.Allocation: its base URL and the Secrets Manager secret
	// (maasflow/allocation-service/…) with its bearer token.
	ctxAllocationServiceURL = "maasflow:allocationServiceUrl"
	ctxAllocationSecretName = "maasflow:allocationSecretName" //nolint:gosec // G101: a context key naming a secret, not a credential
)

// envAssetDir overrides where the function bootstraps are read from
// (default <root>/bin, the output of make build).
const envAssetDir = "MAASFLOW_ASSET_DIR"

const defaultStackName = "Maasflow"

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
	audience, err := contextList(app, ctxJWTAudience)
	if err != nil {
		return nil, err
	}
	signingKeys, err := contextList(app, ctxTaskSigningPubKeys)
	if err != nil {
		return nil, err
	}
	strs := map[string]string{}
	for _, key := range []string{ctxStackName, ctxJWTIssuer, ctxAdminGroup, ctxNodeAgentOCIRef, ctxNodeAgentDigest,
		ctxAllocationServiceURL, ctxAllocationSecretName} {
		if strs[key], err = contextString(app, key); err != nil {
			return nil, err
		}
	}
	props := &MaasflowStackProps{
		StackProps: awscdk.StackProps{
			Description: jsii.String("maasflow: bare-metal GPU server onboarding through Canonical MAAS"),
		},
		Sources:     src,
		AssetDir:    assetDir,
		JWTIssuer:   strs[ctxJWTIssuer],
		JWTAudience: audience,
		AdminGroup:  strs[ctxAdminGroup],

		NodeAgentOCIRef:    strs[ctxNodeAgentOCIRef],
		NodeAgentDigest:    strs[ctxNodeAgentDigest],
		TaskSigningPubKeys: signingKeys,

		AllocationServiceURL: strs[ctxAllocationServiceURL],
		AllocationSecretName: strs[ctxAllocationSecretName],
	}
	if err := props.Validate(); err != nil {
		return nil, err
	}
	id := strs[ctxStackName]
	if id == "" {
		id = defaultStackName
	}
	return NewMaasflowStack(app, id, props), nil
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
