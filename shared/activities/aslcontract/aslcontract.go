// Package aslcontract holds the checks of a state machine against the
// activities that serve it, which every workflow's contract tests share: a
// Task calls a function of the workflow's catalog, builds its payload with
// the run it acts for, retries the Lambda service's errors and ends its
// Catch with States.ALL, and the definition parses on the embedded runtime.
// It imports no activities package, so each of them can use it in its own
// tests.
package aslcontract

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/asl"
)

// State is the part of an ASL state the contract tests read.
type State struct {
	Type       string         `json:"Type"`
	Resource   string         `json:"Resource"`
	Parameters map[string]any `json:"Parameters"`
	Retry      []struct {
		ErrorEquals []string `json:"ErrorEquals"`
	} `json:"Retry"`
	Catch []struct {
		ErrorEquals []string `json:"ErrorEquals"`
		Next        string   `json:"Next"`
	} `json:"Catch"`
	Result  map[string]any `json:"Result"`
	Next    string         `json:"Next"`
	Choices []struct {
		Variable     string `json:"Variable"`
		StringEquals string `json:"StringEquals"`
		Next         string `json:"Next"`
	} `json:"Choices"`
	Default string `json:"Default"`
}

// Function is a catalog entry as the checks see it: the function's name
// and the substitution its ARN takes in the definition.
type Function struct {
	Name         string
	Substitution string
}

// Load reads the state machine at path.
func Load(t testing.TB, path string) (raw []byte, states map[string]State) {
	t.Helper()
	raw, err := os.ReadFile(path) //nolint:gosec // a test reads the repository's own state machine
	require.NoError(t, err)
	var def struct {
		States map[string]State `json:"States"`
	}
	require.NoError(t, json.Unmarshal(raw, &def))
	require.NotEmpty(t, def.States)
	return raw, def.States
}

// AssertTasksFollowTheRules checks every Task of a state machine: it calls
// a function of catalog through one of resources, builds its Payload
// explicitly with at least ref's keys (the run it acts for), retries every
// error of lambdaService, and ends its Catch with States.ALL; every
// function of catalog is called. extra, when set, checks more of each Task.
func AssertTasksFollowTheRules(t testing.TB, states map[string]State, catalog []Function, resources, ref, lambdaService []string,
	extra func(name string, st State),
) {
	t.Helper()
	subs := map[string]bool{}
	for _, f := range catalog {
		subs["${"+f.Substitution+"}"] = true
	}
	used := map[string]bool{}
	for name, st := range states {
		if st.Type != "Task" {
			continue
		}
		assert.Contains(t, resources, st.Resource, name)
		fn, _ := st.Parameters["FunctionName"].(string)
		assert.True(t, subs[fn], "state %s calls unknown function %q", name, fn)
		used[fn] = true
		payload, explicit := st.Parameters["Payload"].(map[string]any)
		require.True(t, explicit, "state %s must build its Payload explicitly", name)
		for _, k := range ref {
			assert.Contains(t, payload, k, "state %s passes the run it acts for", name)
		}
		var retried []string
		for _, r := range st.Retry {
			retried = append(retried, r.ErrorEquals...)
		}
		for _, e := range lambdaService {
			assert.Contains(t, retried, e, "state %s does not retry %s", name, e)
		}
		require.NotEmpty(t, st.Catch, name)
		last := st.Catch[len(st.Catch)-1]
		assert.Equal(t, []string{"States.ALL"}, last.ErrorEquals, "state %s must end its Catch with States.ALL", name)
		if extra != nil {
			extra(name, st)
		}
	}
	for s := range subs {
		assert.True(t, used[s], "function %s is never called by the state machine", s)
	}
}

// AssertParsesOnTheEngine parses a state machine with its catalog's
// function ARNs substituted, as the runtimes do, and checks it holds state.
func AssertParsesOnTheEngine(t testing.TB, raw []byte, catalog []Function, state string) {
	t.Helper()
	subs := map[string]string{}
	for _, f := range catalog {
		subs[f.Substitution] = "arn:aws:lambda:us-east-1:123456789012:function:maasflow-" + f.Name
	}
	sm, err := asl.Parse(raw, subs)
	require.NoError(t, err)
	assert.Contains(t, sm.StateNames(), state)
}

// AssertWorkflowCodesDeclared checks that the codes a state machine's Pass
// states write ({"Error": "<code>"}, Parameters or Result) are exactly the
// declared ones.
func AssertWorkflowCodesDeclared(t testing.TB, raw []byte, codes []string) {
	t.Helper()
	re := regexp.MustCompile(`"Error":\s*"([A-Za-z.]+)"`)
	found := map[string]bool{}
	for _, m := range re.FindAllSubmatch(raw, -1) {
		found[string(m[1])] = true
	}
	for code := range found {
		assert.Contains(t, codes, code)
	}
	for _, code := range codes {
		assert.True(t, found[code], "workflow code %s is never written", code)
	}
}
