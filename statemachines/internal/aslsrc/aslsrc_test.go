package aslsrc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const machinesDir = "../.."

// TestCommittedJSONIsTheSourcesRendering: the JSON that is deployed and
// embedded is exactly what the sources render to. A hand edit to a JSON
// file, or a source edit without regenerating, fails here.
func TestCommittedJSONIsTheSourcesRendering(t *testing.T) {
	ms, err := RenderAll(machinesDir)
	require.NoError(t, err)
	committed, err := filepath.Glob(filepath.Join(machinesDir, "*.asl.json"))
	require.NoError(t, err)
	require.Len(t, ms, len(committed), "every committed state machine has a source in %s", SourceDir)
	for _, m := range ms {
		cur, err := os.ReadFile(m.JSONPath)
		require.NoError(t, err)
		if string(cur) != string(m.JSON) {
			t.Errorf("%s differs from what %s/%s renders: edit the source and run `make asl-generate` (go generate ./statemachines)",
				m.JSONPath, SourceDir, strings.TrimSuffix(filepath.Base(m.JSONPath), ".asl.json")+sourceSuffix)
		}
	}
}

// TestSourcesStateEachSharedListOnce: no machine's source spells out an
// error name that a list of errors.yaml holds, so adding an error type to
// a list is one edit that reaches every machine.
func TestSourcesStateEachSharedListOnce(t *testing.T) {
	shared, err := os.ReadFile(filepath.Join(machinesDir, SourceDir, SharedFile))
	require.NoError(t, err)
	// Every name the lists hold, read through a document that splices them.
	b, err := Render(shared, []byte("ErrorEquals: [*lambda_service, *maas_transient, *store_transient, *maas_refused, *runtime, *terminal]\n"))
	require.NoError(t, err)
	var lists struct {
		Lists []string `json:"ErrorEquals"`
	}
	require.NoError(t, json.Unmarshal(b, &lists))
	require.NotEmpty(t, lists.Lists)
	srcs, err := filepath.Glob(filepath.Join(machinesDir, SourceDir, "*"+sourceSuffix))
	require.NoError(t, err)
	for _, src := range srcs {
		text, err := os.ReadFile(src)
		require.NoError(t, err)
		for _, name := range lists.Lists {
			assert.False(t, regexp.MustCompile(`\b`+regexp.QuoteMeta(name)+`\b`).Match(text),
				"%s names %s, which a list in %s holds: use the list's alias", filepath.Base(src), name, SharedFile)
		}
	}
}

func TestRender(t *testing.T) {
	shared := []byte("x-errors:\n  a: &a [A1, A2]\n  b: &b [B1]\nx-retriers:\n  r: &r {ErrorEquals: *a, MaxAttempts: 2}\n")
	t.Run("aliases, splicing, order, x- members left out", func(t *testing.T) {
		src := []byte(`x-catchers:
  c: &c {ErrorEquals: [States.ALL], Next: Z}
StartAt: S
States:
  S:
    Type: Task
    TimeoutSeconds: 900
    BackoffRate: 1.5
    End: true
    Result: {x-kept: null, "n": "2"}
    Retry: [*r, {ErrorEquals: [C, *a, *b], MaxAttempts: 1}]
    Catch: [*c]
`)
		got, err := Render(shared, src)
		require.NoError(t, err)
		assert.JSONEq(t, `{"StartAt":"S","States":{"S":{"Type":"Task","TimeoutSeconds":900,"BackoffRate":1.5,"End":true,
			"Result":{"x-kept":null,"n":"2"},
			"Retry":[{"ErrorEquals":["A1","A2"],"MaxAttempts":2},{"ErrorEquals":["C","A1","A2","B1"],"MaxAttempts":1}],
			"Catch":[{"ErrorEquals":["States.ALL"],"Next":"Z"}]}}}`, string(got))
		assert.True(t, strings.HasPrefix(string(got), "{\n  \"StartAt\": \"S\",\n  \"States\": {"), "member order kept, two-space indent:\n%s", got)
		assert.True(t, strings.HasSuffix(string(got), "}\n"))
	})
	t.Run("lists outside ErrorEquals, Retry and Catch are not spliced", func(t *testing.T) {
		got, err := Render(shared, []byte("Items: [[1], *a]\n"))
		require.NoError(t, err)
		assert.JSONEq(t, `{"Items":[[1],["A1","A2"]]}`, string(got))
	})
	t.Run("text stays text", func(t *testing.T) {
		got, err := Render(nil, []byte("A: \"true\"\nB: \"<a & b> §\"\nC: \"007\"\n"))
		require.NoError(t, err)
		assert.Contains(t, string(got), `"A": "true"`)
		assert.Contains(t, string(got), `"B": "<a & b> §"`, "no HTML or Unicode escapes")
		assert.Contains(t, string(got), `"C": "007"`)
	})
	for name, src := range map[string]string{
		"a member twice":      "A: 1\nA: 2\n",
		"a merge key":         "A: {<<: {B: 1}}\n",
		"a number JSON lacks": "A: 0x10\n",
		"an unknown alias":    "A: *nope\n",
		"not a mapping":       "- 1\n",
	} {
		t.Run("refuses "+name, func(t *testing.T) {
			_, err := Render(nil, []byte(src))
			assert.Error(t, err)
		})
	}
}
