package jsonata

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type varMap map[string]any

func (m varMap) Var(name string) (any, bool) {
	v, ok := m[name]
	return v, ok
}

func mustJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(s), &v))
	return v
}

func eval(t *testing.T, src string, vars varMap) (string, error) {
	t.Helper()
	x, err := Compile(src)
	require.NoError(t, err, src)
	v, err := x.Eval(Env{Vars: vars, Entropy: bytes.NewReader(bytes.Repeat([]byte{7}, 64))})
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b), nil
}

// TestStepFunctionsFunctions checks the functions Step Functions adds,
// with the examples and outputs of the developer guide's "JSONata
// functions provided by Step Functions".
func TestStepFunctionsFunctions(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{`$partition([1,2,3,4], 2)`, `[[1,2],[3,4]]`},
		{`$partition([1,2,3,4,5,6,7,8,9], 3)`, `[[1,2,3],[4,5,6],[7,8,9]]`},
		{`$partition([1,2,3], 2)`, `[[1,2],[3]]`},
		{`$range(0, 10, 2)`, `[0,2,4,6,8,10]`},
		{`$range(5, 1, -2)`, `[5,3,1]`},
		{`$hash("input data", "SHA-1")`, `"aaff4a450a104cd177d28d18d74485e8cae074b7"`},
		{`$parse('{"foo":"bar","n":[1,2.5]}')`, `{"foo":"bar","n":[1,2.5]}`},
		{`$parse('null')`, `null`},
		{`{"v": $parse('null')}`, `{"v":null}`},
		{`$random(42) = $random(42)`, `true`},
		{`$random() >= 0 and $random() < 1`, `true`},
		{`$length($uuid())`, `36`},
		{`$substring($uuid(), 14, 1)`, `"4"`},
	} {
		got, err := eval(t, c.expr, nil)
		require.NoError(t, err, c.expr)
		assert.JSONEq(t, c.want, got, c.expr)
	}
}

// TestLanguage checks the language as Step Functions states use it.
func TestLanguage(t *testing.T) {
	states := varMap{"states": map[string]any{"input": mustJSON(t, `{"title":"Doctor","items":[{"name":"a","price":2},{"name":"b","price":3.5}],"n":3}`)}}
	for _, c := range []struct{ expr, want string }{
		{`$states.input.title`, `"Doctor"`},
		{`$sum($states.input.items.price)`, `5.5`},
		{`$states.input.items[price > 2].name`, `"b"`},
		{`'Hello ' & $states.input.title`, `"Hello Doctor"`},
		{`{'a': 1+1}`, `{"a":2}`},
		{`$map($states.input.items, function($v){$v.price*2})`, `[4,7]`},
		{`($x := 5; $x * 2)`, `10`},
		{`$states.input.n = 3 ? 'three' : 'other'`, `"three"`},
		{`$states.input.items ~> $count()`, `2`},
		{`$states.input.items^(price).name`, `["a","b"]`},
		{`$count($states.input.items)`, `2`},
	} {
		got, err := eval(t, c.expr, states)
		require.NoError(t, err, c.expr)
		assert.JSONEq(t, c.want, got, c.expr)
	}
}

// TestChainedCallEvaluatesTwice pins the work-around for the library's
// in-place rewrite of `a ~> $f()`: the second evaluation must see the
// expression as written.
func TestChainedCallEvaluatesTwice(t *testing.T) {
	x, err := Compile(`'ab' ~> $uppercase()`)
	require.NoError(t, err)
	for range 3 {
		v, err := x.Eval(Env{})
		require.NoError(t, err)
		assert.Equal(t, "AB", v)
	}
}

func TestUndefined(t *testing.T) {
	_, err := eval(t, `$states.input.missing`, varMap{"states": map[string]any{"input": map[string]any{}}})
	assert.ErrorIs(t, err, ErrUndefined)
}

func TestCompileErrors(t *testing.T) {
	_, err := Compile(`$states.input.(`)
	assert.Error(t, err)
}

// $eval is not offered: AWS accepts the definition and fails the state.
func TestEvalIsNotAFunction(t *testing.T) {
	_, err := eval(t, `$eval('1+1')`, nil)
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrUndefined)
}

func TestEvaluationErrors(t *testing.T) {
	for _, src := range []string{`$partition('x', 2)`, `$hash('x', 'SHA-3')`, `$parse('{')`, `$range(1, 2, 0)`, `'a' + 1`} {
		_, err := eval(t, src, nil)
		assert.Error(t, err, src)
	}
}

func TestWholeNumbersAreIntegers(t *testing.T) {
	x, err := Compile(`$v * 2`)
	require.NoError(t, err)
	v, err := x.Eval(Env{Vars: varMap{"v": int64(21)}})
	require.NoError(t, err)
	assert.Equal(t, int64(42), v)
	x, err = Compile(`$v / 4`)
	require.NoError(t, err)
	v, err = x.Eval(Env{Vars: varMap{"v": int64(2)}})
	require.NoError(t, err)
	assert.InDelta(t, 0.5, v, 0)
}

// TestConcurrentEvaluations must stay clean under the race detector.
func TestConcurrentEvaluations(t *testing.T) {
	x, err := Compile(`$uppercase($v) & $string($count($split($v, '')))`)
	require.NoError(t, err)
	var wg sync.WaitGroup
	letters := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for _, s := range letters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				v, err := x.Eval(Env{Vars: varMap{"v": s}})
				assert.NoError(t, err)
				assert.Equal(t, strings.ToUpper(s)+"1", v)
			}
		}()
	}
	wg.Wait()
}

// TestFastPathAgreesWithTheLibrary evaluates every expression the fast
// path takes both ways: the answers (or the undefinedness) must agree.
func TestFastPathAgreesWithTheLibrary(t *testing.T) {
	input := mustJSON(t, `{"s":"b","n":3,"f":2.5,"t":true,"z":null,"o":{"k":"v","n":1},"a":[1,2],"e":"é"}`)
	vars := varMap{"states": map[string]any{"input": input}, "v": "x"}
	exprs := []string{
		`$states.input`, `$states.input.s`, `$states.input.o.k`, `$states.input.o.n`, `$states.input.missing`,
		`$states.input.s.deeper`, `$states.input.z`, `$v`, `$states.input.a`, `$states.input.a.x`,
	}
	for _, op := range []string{"=", "!=", "<", "<=", ">", ">="} {
		for _, lhs := range []string{"$states.input.s", "$states.input.n", "$states.input.f", "$states.input.t", "$states.input.missing", "$states.input.o", "$states.input.e", "$v"} {
			for _, lit := range []string{"'b'", "'a'", "3", "2.5", "true", "'é'"} {
				exprs = append(exprs, lhs+" "+op+" "+lit)
			}
		}
	}
	fastSeen, _ := agreeWithReference(t, exprs, vars)
	assert.Greater(t, fastSeen, 250)
}

// TestFastPathConstructsAgreeWithTheReference holds the fast path's
// constructors, operators and functions to jsonata-js on operands of every
// JSON type: each expression the fast path decides must give the
// reference's answer (or fail where it fails).
func TestFastPathConstructsAgreeWithTheReference(t *testing.T) {
	input := mustJSON(t, `{"s":"b","u":"Ab","n":3,"neg":-2,"f":2.5,"t":true,"fa":false,"z":null,"o":{"k":"v","n":1},"p":{"k":"w","m":2},
	  "a":[1,2],"sa":["x","y"],"e":"é","big":1e300,"zero":0,"one":[5],"nest":[[1],[2]],"objs":[{"p":1},{"q":2}],
	  "deep":{"items":[{"sku":"a","tags":["x","y"],"n":1},{"sku":"b","tags":["z"],"n":2},{"sku":"c","tags":[],"n":null}]},
	  "single":{"items":[{"sku":"a","tags":["x"],"in":[{"k":[1]}]}]},"nested":[[{"sku":"p"}],[{"sku":"q"},[{"sku":"r"}]]],"node":"gpu-01","step":{"i":4}}`)
	vars := varMap{"states": map[string]any{"input": input}, "v": "x", "merge": "shadowed"}
	operands := []string{"$states.input.s", "$states.input.u", "$states.input.n", "$states.input.neg", "$states.input.f", "$states.input.t",
		"$states.input.fa", "$states.input.z", "$states.input.o", "$states.input.missing", "$states.input.e", "$states.input.big",
		"$states.input.zero", "$states.input.a", "$states.input.sa", "$states.input.one", "$states.input.nest", "$states.input.objs", "$states.input.objs.p",
		"$states.input.objs.q", "$states.input.deep.items.sku", "$states.input.deep.items.tags", "$states.input.deep.items.n",
		"$states.input.deep.items.missing", "$states.input.single.items.sku", "$states.input.single.items.tags",
		"$states.input.single.items.in.k", "$states.input.nested.sku", "$states.input.nest.x", "$states.input.a.x", "'lit'", "7", "0.5", "true", "null", "{'k': 1}", "[1, 'two']", "[]"}
	var exprs []string
	for _, a := range operands {
		exprs = append(exprs, a, "-"+a, "{'x': "+a+"}", "["+a+"]", "["+a+", ["+a+"]]", a+" ? 'y' : 'n'", a+" ? 'y'",
			"$count("+a+")", "$exists("+a+")", "$string("+a+")", "$length("+a+")", "$uppercase("+a+")", "$lowercase("+a+")",
			"$sum("+a+")", "$not("+a+")", "$join("+a+")", "$join("+a+", '-')", "$contains("+a+", 'b')", "$merge("+a+")",
			"$merge(["+a+", {'k': 0}])", "("+a+")", "$split("+a+", 'b')", "$split('a,b', "+a+")", "$partition("+a+", 2)",
			"$partition([1, 2, 3], "+a+")", "$range(1, "+a+", 1)", "$hash("+a+", 'SHA-256')", "$parse("+a+")")
	}
	binaryOperands := []string{"$states.input.a", "$states.input.s", "$states.input.n", "$states.input.f", "$states.input.t", "$states.input.z",
		"$states.input.o", "$states.input.missing", "$states.input.e", "$states.input.zero", "'lit'", "0.5", "null"}
	for _, a := range binaryOperands {
		for _, b := range binaryOperands {
			for _, op := range []string{"=", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "&", "and", "or"} {
				exprs = append(exprs, a+" "+op+" "+b)
			}
		}
	}
	exprs = append(exprs,
		`$merge([$states.input, {'step': {'i': 1, 'node': $states.input.node, 'tag': 'x'}}])`,
		`{'a': 1, 'a': 2}`, `{'a': $states.input.missing, 'a': 2}`, `{$states.input.s: 1}`, `{$states.input.n: 1}`,
		`$merge('x')`, `$merge()`, `$count()`, `$string(1, 2)`, `$sum([1, 'a'])`, `$sum([0.1, 0.2])`, `$join(['a', 1])`,
		`$states.input.step.i = 4 and $states.input.t`, `$states.input.o.n + $states.input.step.i`, `$v & '-' & $states.input.node`,
		`$merge($states.input.o)`, `$states.input.o.k & $states.input.p.k`, `$uppercase('é')`, `$length('😀')`, `1/3`, `10 % -3`, `-7 % 3`,
		`$string(-0)`, `$string(123456789012345678)`, `$string(1e21)`, `$contains('abc', /b/)`,
		`$split('a,b,,c', ',')`, `$split('abc', '')`, `$split('a,b', ',', 1)`, `$split('😀x😀', 'x')`, `$parse('[1,{"a":null}]')`,
		`$partition([], 3)`, `$range(0, 10, 2)`, `$range(5, 1, -2)`, `$hash('input data', 'SHA-1')`, `$random(42)`,
		`qty`, `qty > 1`, `$number('12')`, `$number('-1.5e3')`, `$number('007')`, `$number('1e400')`, `$number('0x1F')`,
		`$number(' 1')`, `$number('1.')`, `$number('9007199254740993')`, `$number('0.1')`, `$number($states.input.s)`,
		`$number($states.input.t)`, `$number($states.input.f)`, `$number($states.input.z)`, `$number($states.input.a)`,
		`$number($states.input.one)`, `$number()`)
	for _, p := range []string{"$states.input.deep.items", "$states.input.single.items", "$states.input.objs", "$states.input.a",
		"$states.input.nest", "$states.input.nested", "$states.input.one", "$states.input.deep", "$states.input.missing", "$states.input.s"} {
		for _, f := range []string{"[0]", "[1]", "[-1]", "[5]", "[0.5]", "[-4]", "[n > 1]", "[n = 1]", "[sku = 'a']", "[sku != 'a']",
			"[missing]", "[true]", "[false]", "[n]", "[sku]", "[$states.input.t]", "[0][0]", "[n >= 1][1]", "[tags = 'x']", "[p = 1]", "[k]"} {
			exprs = append(exprs, p+f, p+f+".sku", p+f+".tags", p+f+".tags[0]", "$count("+p+f+")", "{'r': "+p+f+"}", "["+p+f+"]")
		}
	}
	exprs = append(exprs,
		`$states.input.deep.items[n > 1].tags[0]`, `$states.input.deep.items.tags[0]`, `$states.input.deep.items.tags[-1]`,
		`$states.input.single.items[0].in[0].k`, `$states.input.single.items.in.k[0]`, `$states.input.nested[0].sku`,
		`$states.input.deep.items[sku = $states.input.s].n`)
	fastSeen, decided := agreeWithReference(t, exprs, vars)
	t.Logf("%d expressions, %d taken by the fast path, %d decided by it", len(exprs), fastSeen, decided)
	assert.Greater(t, decided, 700)
}

// TestFastPathLeavesGoTypesToTheInterpreter: a variable holding Go types
// outside the JSON model is read as its JSON, not guessed at.
func TestFastPathLeavesGoTypesToTheInterpreter(t *testing.T) {
	vars := varMap{"v": map[string]any{"m": map[string]string{"k": "x"}, "l": []string{"a", "b"}, "n": 3}}
	for expr, want := range map[string]any{
		`$v.m.k`:       "x",
		`$count($v.l)`: int64(2),
		`$v.l[1]`:      "b",
		`$v.n + 1`:     int64(4),
	} {
		x, err := Compile(expr)
		require.NoError(t, err)
		v, err := x.Eval(Env{Vars: vars})
		require.NoError(t, err, expr)
		assert.Equal(t, want, v, expr)
	}
}

// agreeWithReference evaluates every expression the fast path takes both
// ways: each answer the fast path gives must be the reference's, and it
// must fail (undefined included) where the reference fails. It returns how
// many expressions the fast path took and how many it decided.
func agreeWithReference(t *testing.T, exprs []string, vars varMap) (fastSeen, decided int) {
	t.Helper()
	for _, src := range exprs {
		x, err := Compile(src)
		if err != nil {
			continue
		}
		if x.fast == nil {
			continue
		}
		fastSeen++
		env := Env{Vars: vars}
		fv, ferr := evalFast(x.fast, env)
		if errors.Is(ferr, errNotSure) {
			continue
		}
		decided++
		// Eval takes a shortcut for plain paths: it must answer the same.
		ev, eerr := x.Eval(env)
		assert.Equal(t, fv, ev, src)
		assert.Equal(t, ferr == nil, eerr == nil, src)
		lv, lerr := x.evalReference(env, noInput)
		if lerr != nil {
			require.Error(t, ferr, "%s: the reference fails (%v), the fast path gives %#v", src, lerr, fv)
			if errors.Is(lerr, ErrUndefined) {
				assert.ErrorIs(t, ferr, ErrUndefined, src)
			}
			continue
		}
		require.NoError(t, ferr, "%s: the reference gives %#v", src, lv)
		assert.Equal(t, lv, fv, src)
	}
	return fastSeen, decided
}

// TestBase64OnBothPaths: jsonata's $base64encode and $base64decode need a
// browser's btoa or Node's Buffer, which the embedded interpreter lacks;
// both paths give the Go ones, on the text's UTF-8 bytes (the form of
// States.Base64Encode and States.Base64Decode).
func TestBase64OnBothPaths(t *testing.T) {
	vars := varMap{"s": "gpu-01 é"}
	for _, c := range []struct{ expr, want string }{
		{`$base64encode('hi')`, `"aGk="`},
		{`$base64decode('aGk=')`, `"hi"`},
		{`$base64encode('é')`, `"w6k="`},
		{`$base64decode($base64encode($s))`, `"gpu-01 é"`},
		{`$s ~> $base64encode()`, `"Z3B1LTAxIMOp"`},
		{`{'v': $base64encode($missing)}`, `{}`},
	} {
		got, err := eval(t, c.expr, vars)
		require.NoError(t, err, c.expr)
		assert.JSONEq(t, c.want, got, c.expr)
		x, err := Compile(c.expr)
		require.NoError(t, err)
		ref, err := x.evalReference(Env{Vars: vars}, noInput)
		require.NoError(t, err, "the interpreter: %s", c.expr)
		b, err := json.Marshal(ref)
		require.NoError(t, err)
		assert.JSONEq(t, c.want, string(b), "the interpreter: %s", c.expr)
	}
	for _, src := range []string{`$base64encode(1)`, `$base64decode('!!')`, `$base64decode('/w==')`} {
		_, err := eval(t, src, nil)
		require.Error(t, err, src)
		assert.Contains(t, err.Error(), "$base64", src)
		assert.NotContains(t, err.Error(), "!!", "the failure never repeats the value: %s", src)
		assert.NotContains(t, err.Error(), "/w==", "the failure never repeats the value: %s", src)
		x, err := Compile(src)
		require.NoError(t, err)
		_, err = x.evalReference(Env{}, noInput)
		require.Error(t, err, "the interpreter: %s", src)
	}
}
