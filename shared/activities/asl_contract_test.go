package activities

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/asl"
)

const aslPath = "../../statemachines/onboarding.asl.json"

type aslState struct {
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
	Result map[string]any `json:"Result"`
}

func loadASL(t *testing.T) (raw []byte, states map[string]aslState) {
	t.Helper()
	raw, err := os.ReadFile(aslPath)
	require.NoError(t, err)
	var def struct {
		States map[string]aslState `json:"States"`
	}
	require.NoError(t, json.Unmarshal(raw, &def))
	require.NotEmpty(t, def.States)
	return raw, def.States
}

// declaredErrorTypes parses the Go files of dir and returns every exported
// type whose name ends in "Error".
func declaredErrorTypes(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				if ts.Name.IsExported() && strings.HasSuffix(ts.Name.Name, "Error") && ts.Name.Name != "CatchError" {
					names = append(names, ts.Name.Name)
				}
			}
		}
	}
	sort.Strings(names)
	return names
}

func TestErrorRoutesCoverEveryDeclaredType(t *testing.T) {
	declared := append(declaredErrorTypes(t, "."), declaredErrorTypes(t, "../maas")...)
	require.Contains(t, declared, "AmbiguousMachineMatchError")
	require.Contains(t, declared, "UnavailableError")
	for _, name := range declared {
		assert.Contains(t, errorRoutes, name, "declared error type %s has no route in errorRoutes", name)
	}
	for name := range errorRoutes {
		assert.Contains(t, declared, name, "errorRoutes lists %s, which no package declares", name)
	}
}

func TestASLErrorNamesAreDeclared(t *testing.T) {
	states := everyASLState(t)
	retried := map[string]bool{}
	toManual := map[string]bool{}
	for name, st := range states {
		if st.Type != "Task" {
			continue
		}
		for _, r := range st.Retry {
			for _, e := range r.ErrorEquals {
				retried[e] = true
				if !strings.HasPrefix(e, "Lambda.") {
					assert.Contains(t, errorRoutes, e, "state %s retries undeclared error %s", name, e)
				}
			}
		}
		for _, c := range st.Catch {
			for _, e := range c.ErrorEquals {
				if strings.HasPrefix(e, "States.") {
					continue
				}
				assert.Contains(t, errorRoutes, e, "state %s catches undeclared error %s", name, e)
				if c.Next == "RecordManualIntervention" {
					toManual[e] = true
				}
			}
		}
	}
	for name, class := range errorRoutes {
		switch class {
		case ErrorRetryable:
			assert.True(t, retried[name], "retryable %s is never retried", name)
		case ErrorManualIntervention:
			assert.True(t, toManual[name], "%s is never routed to manual intervention", name)
		case ErrorFailed:
			// Deliberately fatal: reaches the failed path through States.ALL.
			assert.False(t, toManual[name], "%s is routed to manual intervention but listed as failed", name)
		}
	}
}

func TestASLTasksFollowTheRules(t *testing.T) {
	_, states := loadASL(t)
	lambdaErrors := []string{"Lambda.ClientExecutionTimeoutException", "Lambda.ServiceException",
		"Lambda.AWSLambdaException", "Lambda.SdkClientException", "Lambda.TooManyRequestsException"}
	subs := map[string]bool{}
	for _, f := range Catalog(Deps{}) {
		subs["${"+f.Substitution+"}"] = true
	}
	used := map[string]bool{}
	for name, st := range states {
		if st.Type != "Task" {
			continue
		}
		assert.Contains(t, []string{"arn:aws:states:::lambda:invoke", "arn:aws:states:::lambda:invoke.waitForTaskToken"}, st.Resource, name)
		fn, _ := st.Parameters["FunctionName"].(string)
		assert.True(t, subs[fn], "state %s calls unknown function %q", name, fn)
		used[fn] = true
		_, explicit := st.Parameters["Payload"].(map[string]any)
		assert.True(t, explicit, "state %s must build its Payload explicitly", name)

		var retried []string
		for _, r := range st.Retry {
			retried = append(retried, r.ErrorEquals...)
		}
		for _, e := range lambdaErrors {
			assert.Contains(t, retried, e, "state %s does not retry %s", name, e)
		}
		require.NotEmpty(t, st.Catch, name)
		last := st.Catch[len(st.Catch)-1]
		assert.Equal(t, []string{"States.ALL"}, last.ErrorEquals, "state %s must end its Catch with States.ALL", name)
	}
	for s := range subs {
		assert.True(t, used[s], "function %s is never called by the state machine", s)
	}
}

func TestASLWorkflowCodesAreDeclared(t *testing.T) {
	raw, _ := loadASL(t)
	// Pass states write {"Error": "<code>"} (Parameters or Result).
	re := regexp.MustCompile(`"Error":\s*"([A-Za-z.]+)"`)
	found := map[string]bool{}
	for _, m := range re.FindAllSubmatch(raw, -1) {
		found[string(m[1])] = true
	}
	for code := range found {
		assert.Contains(t, WorkflowCodes(), code)
	}
	for _, code := range WorkflowCodes() {
		assert.True(t, found[code], "workflow code %s is never written", code)
	}
}

func TestASLParsesOnTheEngine(t *testing.T) {
	raw, _ := loadASL(t)
	subs := map[string]string{}
	for _, f := range Catalog(Deps{}) {
		subs[f.Substitution] = "arn:aws:lambda:us-east-1:123456789012:function:maasflow-" + f.Name
	}
	sm, err := asl.Parse(raw, subs)
	require.NoError(t, err)
	assert.Contains(t, sm.StateNames(), "ValidateOnboarding")
}

func TestCatalog(t *testing.T) {
	kebab := regexp.MustCompile(`^[a-z]+(-[a-z]+)+$`)
	seen := map[string]bool{}
	for _, f := range Catalog(Deps{}) {
		assert.Regexp(t, kebab, f.Name)
		assert.Equal(t, f.Activity+"FunctionArn", f.Substitution)
		assert.False(t, seen[f.Name], "duplicate %s", f.Name)
		seen[f.Name] = true
		assert.NotNil(t, f.Handler)
		_, err := os.Stat(filepath.Join(".", strings.ReplaceAll(f.Name, "-", "_")+".go"))
		require.NoError(t, err, "activity %s has no file of its own", f.Activity)
	}
	assert.Len(t, seen, 14)
}
