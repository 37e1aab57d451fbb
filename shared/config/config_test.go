package config

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadReportsEveryMissingVariable(t *testing.T) {
	env := map[string]string{EnvTable: "t1", EnvLogLevel: "  "}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	var table, bus, sm, level string
	err := Load(lookup,
		Var{Name: EnvTable, Required: true, Target: &table},
		Var{Name: EnvEventBus, Required: true, Target: &bus},
		Var{Name: EnvOnboardingStateMachine, Required: true, Target: &sm},
		Var{Name: EnvLogLevel, Default: "info", Target: &level},
	)
	var missing *MissingError
	require.ErrorAs(t, err, &missing)
	assert.Equal(t, []string{EnvEventBus, EnvOnboardingStateMachine}, missing.Names)
	assert.Equal(t, "t1", table)
	assert.Equal(t, "info", level, "blank value takes the default")
}

func TestHandlerOptionsRefuseUnknownFields(t *testing.T) {
	type in struct {
		Name string `json:"name"`
	}
	h := lambda.NewHandlerWithOptions(func(_ context.Context, v in) (string, error) { return v.Name, nil }, HandlerOptions()...)

	out, err := h.Invoke(context.Background(), []byte(`{"name":"a"}`))
	require.NoError(t, err)
	assert.JSONEq(t, `"a"`, string(out))

	_, err = h.Invoke(context.Background(), []byte(`{"name":"a","extra":1}`))
	assert.ErrorContains(t, err, `unknown field "extra"`)
}
