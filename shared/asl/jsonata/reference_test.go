package jsonata

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// suiteCase is one case of jsonata's own test suite (testdata/test-suite,
// copied from jsonata-js/jsonata v2.0.6, MIT licence alongside).
type suiteCase struct {
	Expr            string          `json:"expr"`
	ExprFile        string          `json:"expr-file"`
	Data            json.RawMessage `json:"data"`
	Dataset         string          `json:"dataset"`
	Result          json.RawMessage `json:"result"`
	UndefinedResult bool            `json:"undefinedResult"`
	Code            string          `json:"code"`
}

// TestReferenceTestSuite runs jsonata's own cases for the operators the
// earlier library lacked — the parent operator `%`, the focus binding `@`,
// the index binding `#` (groups parent-operator and joins) — and for null.
func TestReferenceTestSuite(t *testing.T) {
	root := filepath.Join("testdata", "test-suite")
	files, err := filepath.Glob(filepath.Join(root, "groups", "*", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	ran := 0
	for _, file := range files {
		raw, err := os.ReadFile(file)
		require.NoError(t, err)
		var cases []suiteCase
		if err := json.Unmarshal(raw, &cases); err != nil {
			var one suiteCase
			require.NoError(t, json.Unmarshal(raw, &one), file)
			cases = []suiteCase{one}
		}
		for i, c := range cases {
			expr := c.Expr
			if c.ExprFile != "" {
				b, err := os.ReadFile(filepath.Join(filepath.Dir(file), c.ExprFile))
				require.NoError(t, err)
				expr = string(b)
			}
			input := noInput
			switch {
			case c.Dataset != "":
				b, err := os.ReadFile(filepath.Join(root, "datasets", c.Dataset+".json"))
				require.NoError(t, err)
				input = rawJSON(b)
			case len(c.Data) > 0:
				input = rawJSON(c.Data)
			}
			name := filepath.Base(filepath.Dir(file)) + "/" + filepath.Base(file) + "#" + string(rune('0'+i/10)) + string(rune('0'+i%10))
			x, err := Compile(expr)
			if err == nil {
				var got any
				got, err = x.evalReference(Env{}, input)
				if err == nil {
					require.Empty(t, c.Code, "%s: %s: expected error %s, got %v", name, expr, c.Code, got)
					require.False(t, c.UndefinedResult, "%s: %s: expected undefined, got %v", name, expr, got)
					b, _ := json.Marshal(got)
					assert.JSONEq(t, string(c.Result), string(b), "%s: %s", name, expr)
					ran++
					continue
				}
			}
			switch {
			case c.UndefinedResult:
				require.ErrorIs(t, err, ErrUndefined, "%s: %s", name, expr)
			case c.Code != "":
				var je *Error
				require.ErrorAs(t, err, &je, "%s: %s", name, expr)
				assert.Equal(t, c.Code, je.Code, "%s: %s: %v", name, expr, err)
			default:
				t.Errorf("%s: %s: unexpected error %v", name, expr, err)
			}
			ran++
		}
	}
	assert.Greater(t, ran, 80)
}

// TestTwoPointOperators checks, the way Step Functions states write them
// (on $states.input), the operators jsonata gained after 1.5.
func TestTwoPointOperators(t *testing.T) {
	states := varMap{"states": map[string]any{"input": mustJSON(t, `{
	  "orders":[{"id":"o1","items":[{"sku":"a","qty":2},{"sku":"b","qty":1}]},{"id":"o2","items":[{"sku":"c","qty":5}]}],
	  "skus":[{"sku":"a","name":"Alpha"},{"sku":"c","name":"Gamma"}],
	  "z":null}`)}}
	for _, c := range []struct{ expr, want string }{
		// %: the parent of the current item.
		{`$states.input.orders.items.{'order': %.id, 'sku': sku}`, `[{"order":"o1","sku":"a"},{"order":"o1","sku":"b"},{"order":"o2","sku":"c"}]`},
		// #: the index of the item in its sequence.
		{`$states.input.orders#$i.{'n': $i, 'id': id}`, `[{"n":0,"id":"o1"},{"n":1,"id":"o2"}]`},
		// @: a join between two arrays.
		{`$states.input.orders.items@$it.($states.input.skus)@$s[$it.sku = $s.sku].{'sku': $it.sku, 'name': $s.name}`, `[{"sku":"a","name":"Alpha"},{"sku":"c","name":"Gamma"}]`},
		// null is read as null inside a larger expression.
		{`$states.input.z = null`, `true`},
		{`$states.input.z ? 'set' : 'unset'`, `"unset"`},
		{`$type($states.input.z)`, `"null"`},
		{`$exists($states.input.z)`, `true`},
	} {
		got, err := eval(t, c.expr, states)
		require.NoError(t, err, c.expr)
		assert.JSONEq(t, c.want, got, c.expr)
	}
}

// TestErrorsAreJSONatas checks that failures carry jsonata's own code and
// message, as Step Functions reports them after its sentence.
func TestErrorsAreJSONatas(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{`$abs('a')`, `T0410: Argument 1 of function "abs" does not match function signature`},
		{`$eval('1+1')`, `T1006: Attempted to invoke a non-function`},
		{`'a' + 1`, `T2001: The left side of the "+" operator must evaluate to a number`},
		{`{'a': 1, 'a': 2}`, `D1009: Multiple key definitions evaluate to same key: "a"`},
	} {
		_, err := eval(t, c.expr, nil)
		var je *Error
		require.ErrorAs(t, err, &je, c.expr)
		assert.Equal(t, c.want, err.Error(), c.expr)
	}
	_, err := Compile(`$states.input.(`)
	var je *Error
	require.ErrorAs(t, err, &je)
	assert.True(t, strings.HasPrefix(je.Code, "S0"), "a syntax error is an S0xxx: %v", err)
}

// TestRunawayRecursionFails: an expression that recurses without end fails
// its evaluation; the process and the interpreter's pool carry on.
func TestRunawayRecursionFails(t *testing.T) {
	_, err := eval(t, `($f := function($n){ 1 + $f($n + 1) }; $f(0))`, nil)
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrUndefined)
	got, err := eval(t, `1 + 1`, nil)
	require.NoError(t, err)
	assert.Equal(t, "2", got)
}

// TestEndlessLoopIsStopped: a tail-recursive function that never ends is
// stopped at the evaluation limit (lowered here) and fails its evaluation.
func TestEndlessLoopIsStopped(t *testing.T) {
	saved := evalLimit
	evalLimit = 300 * time.Millisecond
	t.Cleanup(func() { evalLimit = saved })
	_, err := eval(t, `($f := function($n){ $f($n + 1) }; $f(0))`, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "did not finish within")
	got, err := eval(t, `2 * 3`, nil)
	require.NoError(t, err)
	assert.Equal(t, "6", got)
}

// TestConcurrentInterpreterEvaluations runs expressions only the
// interpreter evaluates from several goroutines at once: each borrows its
// own interpreter from the pool (clean under the race detector), and
// Step Functions' functions see their own evaluation's entropy.
func TestConcurrentInterpreterEvaluations(t *testing.T) {
	x, err := Compile(`$states.input.items.{'sku': sku, 'who': %.who, 'id': $uuid()}`)
	require.NoError(t, err)
	require.Nil(t, x.fast, "the expression must go to the interpreter")
	var wg sync.WaitGroup
	for g, who := range []string{"a", "b", "c", "d", "e", "f"} {
		seed := []byte{byte(0x10 * (g + 1))}
		wg.Add(1)
		go func() {
			defer wg.Done()
			input := map[string]any{"who": who, "items": []any{map[string]any{"sku": "x", "n": int64(1)}, map[string]any{"sku": "y", "n": int64(2)}}}
			for range 10 {
				entropy := bytes.NewReader(bytes.Repeat(seed, 32))
				v, err := x.Eval(Env{Vars: varMap{"states": map[string]any{"input": input}}, Entropy: entropy})
				if !assert.NoError(t, err) {
					return
				}
				items, _ := v.([]any)
				if !assert.Len(t, items, 2) {
					return
				}
				first, _ := items[0].(map[string]any)
				assert.Equal(t, "x", first["sku"])
				assert.Equal(t, who, first["who"])
				id, _ := first["id"].(string)
				assert.Equal(t, strings.Repeat(fmt.Sprintf("%02x", seed[0]), 4), id[:8], "the uuid comes from this evaluation's entropy")
			}
		}()
	}
	wg.Wait()
}

// TestGoValuesReachTheInterpreterAsJSON: variables holding Go types other
// than the JSON model's are seen as their JSON.
func TestGoValuesReachTheInterpreterAsJSON(t *testing.T) {
	x, err := Compile(`$states.input.items#$i.{'i': $i, 'v': $}`)
	require.NoError(t, err)
	require.Nil(t, x.fast)
	v, err := x.Eval(Env{Vars: varMap{"states": map[string]any{"input": map[string]any{"items": []string{"a", "b"}}}}})
	require.NoError(t, err)
	assert.Equal(t, []any{map[string]any{"i": int64(0), "v": "a"}, map[string]any{"i": int64(1), "v": "b"}}, v)
}
