package main

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLambdaArchitecture: arm64 unless the context names the other
// instruction set (by Lambda's name or Go's); anything else fails
// synthesis naming the key.
func TestLambdaArchitecture(t *testing.T) {
	requireNode(t)
	for value, want := range map[any]string{nil: "arm64", "": "arm64", "arm64": "arm64", "x86_64": "x86_64", "amd64": "x86_64"} {
		ctx := map[string]any{}
		if value != nil {
			ctx[ctxArchitecture] = value
		}
		app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
		b := &builder{stack: awscdk.NewStack(app, jsii.String("S"), nil)}
		assert.Equal(t, want, *b.lambdaArchitecture().Name(), "context %v", value)
		assert.Nil(t, b.stack.Node().TryFindChild(jsii.String(badArchitectureID)), "context %v is valid", value)
	}

	ctx := map[string]any{ctxArchitecture: "riscv64"}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	b := &builder{stack: awscdk.NewStack(app, jsii.String("S"), nil)}
	b.lambdaArchitecture()
	b.lambdaArchitecture()
	marker := b.stack.Node().TryFindChild(jsii.String(badArchitectureID))
	require.NotNil(t, marker, "an unknown architecture is a synthesis error")
	errs := marker.Node().Validate()
	require.Len(t, *errs, 1, "one error however many functions ask")
	assert.Contains(t, *(*errs)[0], ctxArchitecture)
	assert.Contains(t, *(*errs)[0], "riscv64")
}
