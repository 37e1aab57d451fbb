package awsenv

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/decommission"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/shared/enroll"
)

func TestLoadEnv(t *testing.T) {
	env := map[string]string{
		config.EnvOnboardingStateMachine: "arn:aws:states:eu-west-1:1:stateMachine:onboarding",
		config.EnvNodeAPIURL:             "https://api.internal",
	}
	got, err := LoadEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	require.NoError(t, err)
	assert.Equal(t, "maasflow", got.Table)
	assert.Equal(t, "maasflow", got.EventBus)
	assert.Equal(t, "maasflow-admin", got.AdminGroup)
	assert.Equal(t, "https://api.internal", got.NodeAPIURL)
}

func TestLoadEnvReadsTheEnrollmentCABundle(t *testing.T) {
	ca, err := enroll.DevCA()
	require.NoError(t, err)
	env := map[string]string{
		config.EnvOnboardingStateMachine: "arn:aws:states:eu-west-1:1:stateMachine:onboarding",
		config.EnvNodeAPIURL:             "https://api.internal",
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }

	got, err := LoadEnv(lookup)
	require.NoError(t, err, "the bundle is optional")
	assert.Empty(t, got.CABundle)

	env[config.EnvCABundle] = ca
	got, err = LoadEnv(lookup)
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSpace(ca), got.CABundle)

	// A malformed bundle fails the start, naming the variable.
	for _, bad := range []string{"<ENROLLMENT_CA_PEM>", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"} {
		env[config.EnvCABundle] = bad
		_, err = LoadEnv(lookup)
		require.Error(t, err, "%q", bad)
		assert.Contains(t, err.Error(), config.EnvCABundle)
	}
}

func TestLoadEnvNamesEveryMissingVariable(t *testing.T) {
	_, err := LoadEnv(func(string) (string, bool) { return "", false })
	var missing *config.MissingError
	require.ErrorAs(t, err, &missing)
	assert.Equal(t, []string{config.EnvNodeAPIURL, config.EnvOnboardingStateMachine}, missing.Names)
}

// TestEveryActivityIsAFunction keeps functions/ and the activity catalog in
// step: one directory per activity, each starting exactly that activity,
// besides api and reconcile (the reconcile state machine's step).
func TestEveryActivityIsAFunction(t *testing.T) {
	mains, err := filepath.Glob("../../*/main.go")
	require.NoError(t, err)
	var dirs []string
	for _, m := range mains {
		dirs = append(dirs, filepath.Base(filepath.Dir(m)))
	}
	want := []string{"api", "reconcile", "stream"}
	// Each main builds its workflow's activities: the package's New.
	for pkg, catalog := range map[string][]activities.Function{
		"onboarding":   onboarding.Catalog(activities.Deps{}),
		"decommission": decommission.Catalog(activities.Deps{}),
	} {
		for _, f := range catalog {
			want = append(want, f.Name)
			src, err := os.ReadFile(filepath.Join("../..", f.Name, "main.go"))
			require.NoError(t, err, "functions/%s/main.go", f.Name)
			assert.Contains(t, string(src), pkg+".New(deps)."+f.Activity+",", f.Name)
		}
	}
	sort.Strings(dirs)
	sort.Strings(want)
	assert.Equal(t, want, dirs)
}

func TestSplitKeys(t *testing.T) {
	assert.Equal(t, []string{"a", "b"}, splitKeys(" a, ,b "))
	assert.Empty(t, splitKeys(""))
	assert.NotContains(t, strings.Join(splitKeys("x,y"), ""), ",")
}
