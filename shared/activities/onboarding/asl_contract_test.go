package onboarding

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/aslcontract"
	"github.com/maasflow/maasflow/shared/activities/decommission"
	"github.com/maasflow/maasflow/shared/domain"
)

const aslPath = "../../../statemachines/onboarding.asl.json"

type aslState = aslcontract.State

func loadASL(t *testing.T) (raw []byte, states map[string]aslState) {
	t.Helper()
	return aslcontract.Load(t, aslPath)
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
				if ts.Name.IsExported() && strings.HasSuffix(ts.Name.Name, "Error") && ts.Name.Name != "ClassifiedError" {
					names = append(names, ts.Name.Name)
				}
			}
		}
	}
	sort.Strings(names)
	return names
}

// errorPackages are the directories of every package that declares
// activity errors: the shared vocabulary, each workflow's own, and the
// MAAS client's.
var errorPackages = []string{"..", ".", "../decommission", "../../maas"}

// Platform error names (activities.LambdaLevelErrors, LambdaServiceErrors).
var (
	lambdaLevel   = nameSet(activities.LambdaLevelErrors())
	lambdaService = nameSet(activities.LambdaServiceErrors())
)

func nameSet(names []string) map[string]bool {
	s := make(map[string]bool, len(names))
	for _, n := range names {
		s[n] = true
	}
	return s
}

// everyErrorRoute is the routing table of both workflows (the onboarding's
// and the decommission's, each the shared vocabulary and its own types):
// the declared types and both state machines are checked against it.
var everyErrorRoute = func() map[string]domain.ErrorClass {
	routes := maps.Clone(errorRoutes)
	maps.Copy(routes, decommission.ErrorRoutes())
	return routes
}()

func TestErrorRoutesCoverEveryDeclaredType(t *testing.T) {
	var declared []string
	for _, dir := range errorPackages {
		declared = append(declared, declaredErrorTypes(t, dir)...)
	}
	require.Contains(t, declared, "AmbiguousMachineMatchError")
	require.Contains(t, declared, "MAASUnavailableError")
	for _, name := range declared {
		assert.Contains(t, everyErrorRoute, name, "declared error type %s is not in vocabulary", name)
	}
	for name := range everyErrorRoute {
		assert.Contains(t, declared, name, "vocabulary lists %s, which no package declares", name)
	}
}

// Where the Catch lists send an error.
const (
	toManual  = "RecordManualIntervention"
	toFailure = "RecordFailure"
)

// aslRouting is what the state machine does with each error name: which
// Task states retry it, and where each Task's Catch sends it.
type aslRouting struct {
	retriedBy map[string][]string            // error → states
	caughtTo  map[string]map[string][]string // error → Next → states
}

func routingOf(states map[string]aslState) aslRouting {
	r := aslRouting{retriedBy: map[string][]string{}, caughtTo: map[string]map[string][]string{}}
	for name, st := range states {
		if st.Type != "Task" {
			continue
		}
		for _, rt := range st.Retry {
			for _, e := range rt.ErrorEquals {
				r.retriedBy[e] = append(r.retriedBy[e], name)
			}
		}
		for _, c := range st.Catch {
			for _, e := range c.ErrorEquals {
				if r.caughtTo[e] == nil {
					r.caughtTo[e] = map[string][]string{}
				}
				r.caughtTo[e][c.Next] = append(r.caughtTo[e][c.Next], name)
			}
		}
	}
	return r
}

// classMismatches compares the ASL's Retry and Catch lists with the class
// each error type declares: a name the ASL matches must be declared (or be
// a platform name), a retried name must be retryable, a name caught into
// manual intervention must be retryable or need an operator, a name caught
// into the failed path must be terminal, and every class must reach its
// route somewhere.
func classMismatches(states map[string]aslState, routes map[string]domain.ErrorClass) []string {
	r := routingOf(states)
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	platform := func(e string) bool { return strings.HasPrefix(e, "States.") || lambdaLevel[e] || lambdaService[e] }
	for e, by := range r.retriedBy {
		if platform(e) {
			continue
		}
		class, ok := routes[e]
		switch {
		case !ok:
			add("%v retry %s, which names no error type", by, e)
		case class != domain.ErrorRetryable:
			add("%v retry %s, which is %s", by, e, class)
		}
	}
	for e, nexts := range r.caughtTo {
		if platform(e) {
			continue
		}
		class, ok := routes[e]
		if !ok {
			add("%v catch %s, which names no error type", nexts, e)
			continue
		}
		for next, by := range nexts {
			switch {
			case next == toManual && class == domain.ErrorTerminal:
				add("%v send terminal %s to manual intervention", by, e)
			case next == toFailure && class != domain.ErrorTerminal:
				add("%v send %s %s to the failed path", by, class, e)
			}
		}
	}
	for e, class := range routes {
		switch class {
		case domain.ErrorRetryable:
			if len(r.retriedBy[e]) == 0 {
				add("retryable %s is never retried", e)
			}
		case domain.ErrorNeedsOperator:
			if len(r.caughtTo[e][toManual]) == 0 {
				add("%s needs an operator but is never routed to manual intervention", e)
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestASLRetryAndCatchAgreeWithTheDeclaredClasses(t *testing.T) {
	states := everyASLState(t)
	assert.Empty(t, classMismatches(states, everyErrorRoute))
	assert.Empty(t, routingMismatches(states, everyErrorRoute))
}

// beforeMAAS are the Tasks that run before the workflow touches MAAS:
// failing there frees the host safely. Every later Task may leave MAAS
// holding a half-done machine.
var beforeMAAS = map[string]bool{"TakeSiteSlot": true, "ValidateOnboarding": true, "decommission/BeginDecommission": true}

// panicName is what a Go panic is reported as: the panic value's type
// (aws-lambda-go, and the embedded runtime the same way).
const panicName = "string"

// catchTarget is where a Task's Catch sends error name e: the first
// catcher that matches, followed through Pass states to the state that
// records the outcome ("" when nothing catches it).
func catchTarget(states map[string]aslState, st aslState, e string) string {
	for _, c := range st.Catch {
		for _, want := range c.ErrorEquals {
			if want == e || (want == "States.ALL" && e != "States.Runtime") || (want == "States.TaskFailed" && e != "States.Timeout") {
				next := c.Next
				for i := 0; i < len(states) && states[next].Type == "Pass"; i++ {
					next = states[next].Next
				}
				return next
			}
		}
	}
	return ""
}

// routingMismatches checks each Task's Catch, name by name, against the
// classes: before MAAS is touched everything ends as failed; after it,
// only terminal errors do, and everything else (retryable once its
// retries are spent, needs an operator, a Lambda-level failure, a crash
// under any name) ends in manual intervention.
func routingMismatches(states map[string]aslState, routes map[string]domain.ErrorClass) []string {
	names := maps.Clone(routes)
	for e := range lambdaLevel {
		names[e] = ""
	}
	names[panicName] = ""
	var out []string
	for name, st := range states {
		if st.Type != "Task" || catchTarget(states, st, "States.ALL") != toManual && catchTarget(states, st, "States.ALL") != toFailure {
			continue // the Tasks that record the outcome catch into the end states
		}
		for e, class := range names {
			want := toManual
			if beforeMAAS[name] || class == domain.ErrorTerminal {
				want = toFailure
			}
			if e == "States.Timeout" && st.Parameters["FunctionName"] == "${WatchMachineFunctionArn}" {
				want = st.Next // a machine wait whose watcher is down checks again
			}
			if got := catchTarget(states, st, e); got != want {
				out = append(out, fmt.Sprintf("%s sends %s to %s, want %s", name, e, got, want))
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestClassMismatchesAreFound edits the routing table and the ASL in
// memory: each disagreement must be reported.
func TestClassMismatchesAreFound(t *testing.T) {
	_, states := loadASL(t)
	routes := maps.Clone(everyErrorRoute)
	routes["AmbiguousMachineMatchError"] = domain.ErrorTerminal // caught to manual
	routes["MAASTimeoutError"] = domain.ErrorNeedsOperator      // retried
	routes["GuardrailError"] = domain.ErrorNeedsOperator        // only reaches the failed path
	delete(routes, "PXEPreflightError")                         // caught, but no type
	got := strings.Join(classMismatches(states, routes), "\n")
	assert.Contains(t, got, "send terminal AmbiguousMachineMatchError to manual intervention")
	assert.Contains(t, got, "retry MAASTimeoutError, which is needs_operator")
	assert.Contains(t, got, "GuardrailError needs an operator but is never routed to manual intervention")
	assert.Contains(t, got, "catch PXEPreflightError, which names no error type")

	broken := maps.Clone(states)
	crash := broken["CheckReady"]
	crash.Catch = crash.Catch[len(crash.Catch)-1:]
	crash.Catch[0].Next = toFailure
	broken["CheckReady"] = crash
	got = strings.Join(routingMismatches(broken, everyErrorRoute), "\n")
	assert.Contains(t, got, "CheckReady sends Lambda.Unknown to RecordFailure, want RecordManualIntervention")
	assert.Contains(t, got, "CheckReady sends string to RecordFailure, want RecordManualIntervention")
	assert.Contains(t, got, "CheckReady sends MachineWaitTimeoutError to RecordFailure, want RecordManualIntervention")
	assert.NotContains(t, got, "GuardrailError")
	routes = maps.Clone(everyErrorRoute)
	routes["MAASNotFoundError"] = domain.ErrorTerminal
	assert.Contains(t, strings.Join(routingMismatches(states, routes), "\n"),
		"DeployMachine sends MAASNotFoundError to RecordManualIntervention, want RecordFailure")

	st := states["DeployMachine"]
	st.Retry = append(st.Retry, struct {
		ErrorEquals []string `json:"ErrorEquals"`
	}{ErrorEquals: []string{"DeployTypoError"}})
	states["DeployMachine"] = st
	assert.Contains(t, strings.Join(classMismatches(states, everyErrorRoute), "\n"), "[DeployMachine] retry DeployTypoError, which names no error type")
}

func TestASLTasksFollowTheRules(t *testing.T) {
	_, states := loadASL(t)
	assertTasksFollowTheRules(t, states, onboardingFunctions(),
		[]string{"arn:aws:states:::lambda:invoke", "arn:aws:states:::lambda:invoke.waitForTaskToken"},
		[]string{"onboarding_id.$", "site_id.$", "hostname.$", "attempt.$", "run.$", "correlation_id.$"}, nil)
}

// contractFunctions is a catalog as aslcontract reads it.
func contractFunctions(catalog []activities.Function) []aslcontract.Function {
	out := make([]aslcontract.Function, len(catalog))
	for i, f := range catalog {
		out[i] = aslcontract.Function{Name: f.Name, Substitution: f.Substitution}
	}
	return out
}

// assertTasksFollowTheRules is aslcontract's check of every Task against
// catalog, with the Lambda service errors every Task retries.
func assertTasksFollowTheRules(t *testing.T, states map[string]aslState, catalog []activities.Function, resources, ref []string,
	extra func(name string, st aslState),
) {
	t.Helper()
	aslcontract.AssertTasksFollowTheRules(t, states, contractFunctions(catalog), resources, ref, activities.LambdaServiceErrors(), extra)
}

func TestASLWorkflowCodesAreDeclared(t *testing.T) {
	raw, _ := loadASL(t)
	aslcontract.AssertWorkflowCodesDeclared(t, raw, activities.WorkflowCodes())
}

func TestASLParsesOnTheEngine(t *testing.T) {
	raw, _ := loadASL(t)
	aslcontract.AssertParsesOnTheEngine(t, raw, contractFunctions(Catalog(activities.Deps{})), "ValidateOnboarding")
}

func TestCatalog(t *testing.T) {
	kebab := regexp.MustCompile(`^[a-z]+(-[a-z]+)+$`)
	seen := map[string]bool{}
	for _, f := range Catalog(activities.Deps{}) {
		assert.Regexp(t, kebab, f.Name)
		assert.Equal(t, f.Activity+"FunctionArn", f.Substitution)
		assert.False(t, seen[f.Name], "duplicate %s", f.Name)
		seen[f.Name] = true
		assert.NotNil(t, f.Handler)
		_, err := os.Stat(filepath.Join(".", strings.ReplaceAll(f.Name, "-", "_")+".go"))
		require.NoError(t, err, "activity %s has no file of its own", f.Activity)
	}
	assert.Len(t, seen, 22)
}

// TestASLEntersAtEveryStage: a run can enter the workflow at any stage
// (start_stage), and the entry Choice names only stages that exist.
func TestASLEntersAtEveryStage(t *testing.T) {
	_, states := loadASL(t)
	entry, ok := states["EnterAtStage"]
	require.True(t, ok)
	routed := map[domain.Stage]string{}
	for _, c := range entry.Choices {
		assert.Equal(t, "$.start_stage", c.Variable)
		routed[domain.Stage(c.StringEquals)] = c.Next
		assert.Contains(t, states, c.Next, "start_stage %s goes to a missing state", c.StringEquals)
	}
	assert.Contains(t, states, entry.Default)
	stages := declaredStageNames(t)
	for _, s := range stages {
		if s == domain.StageDone {
			assert.NotContains(t, routed, s, "a finished run is not entered")
			continue
		}
		assert.Contains(t, routed, s, "stage %s cannot be entered", s)
	}
	for s := range routed {
		assert.Contains(t, stages, s, "EnterAtStage routes %s, which is no stage", s)
	}
}

// declaredStageNames parses the domain.Stage constants from their source.
func declaredStageNames(t *testing.T) []domain.Stage {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "domain", "onboarding.go"))
	require.NoError(t, err)
	var out []domain.Stage
	for _, m := range regexp.MustCompile(`(?m)^\s*Stage\w+\s+Stage\s*=\s*"(\w+)"`).FindAllSubmatch(src, -1) {
		out = append(out, domain.Stage(m[1]))
	}
	require.GreaterOrEqual(t, len(out), 10)
	return out
}

// TestASLPollStagesAreStages: the poll loops run in the stage their Task
// names, which must be a declared stage.
func TestASLPollStagesAreStages(t *testing.T) {
	_, states := loadASL(t)
	stages := declaredStageNames(t)
	n := 0
	for name, st := range states {
		payload, _ := st.Parameters["Payload"].(map[string]any)
		if s, ok := payload["stage"]; ok {
			n++
			assert.Contains(t, stages, domain.Stage(s.(string)), "state %s polls in an unknown stage", name)
		}
	}
	assert.Equal(t, 4, n, "CheckReady, CheckDeployed, CheckRecovered and CheckReset name their stage")
}
