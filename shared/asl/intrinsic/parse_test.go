package intrinsic

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIsCall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"States.Format('{}', $.a)", true},
		{"States.UUID()", true},
		{"States.Nope(", true}, // an intrinsic, just not a valid one: Parse reports it
		{"$.States.Format(", false},
		{"$.a", false},
		{"States.Format", false},
		{" States.UUID()", false},
		{"states.UUID()", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, IsCall(tt.in))
		})
	}
}

func TestParseAcceptsEveryFunction(t *testing.T) {
	t.Parallel()
	names := []string{
		"Format", "StringToJson", "JsonToString", "Array", "ArrayPartition", "ArrayContains",
		"ArrayRange", "ArrayGetItem", "ArrayLength", "ArrayUnique", "Base64Encode", "Base64Decode",
		"Hash", "JsonMerge", "MathRandom", "MathAdd", "StringSplit", "UUID",
	}
	require.Len(t, names, 18)
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			t.Parallel()
			c, err := Parse("States." + n + "($.x)")
			require.NoError(t, err)
			assert.Equal(t, "States."+n, c.Name())
			assert.Equal(t, []string{"$.x"}, c.Paths())
		})
	}
}

func TestParseSyntaxErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		expr   string
		offset int
		reason string
	}{
		{"unknown function", "States.Foo(1)", 0, "unknown intrinsic function States.Foo"},
		{"unknown nested function", "States.Array(States.Bar())", 13, "unknown intrinsic function States.Bar"},
		{"wrong case", "States.format('x')", 0, "unknown intrinsic function States.format"},
		{"not an intrinsic", "$.a", 0, "expected an intrinsic function"},
		{"missing name", "States.(1)", 7, "missing function name"},
		{"missing parenthesis", "States.UUID", 11, "expected '(' after States.UUID"},
		{"unclosed call", "States.Array(1, 2", 17, "missing ')' to close States.Array"},
		{"trailing comma", "States.Array(1,)", 15, "unexpected ')' where an argument was expected"},
		{"leading comma", "States.Array(,1)", 13, "unexpected ',' where an argument was expected"},
		{"missing comma", "States.Array(1 2)", 15, "expected ',' or ')'"},
		{"trailing text", "States.UUID() x", 14, "unexpected 'x' after the closing parenthesis"},
		{"two calls", "States.UUID()States.UUID()", 13, "after the closing parenthesis"},
		{"unterminated string", "States.Format('abc)", 14, "unterminated string literal"},
		{"open backslash", `States.Format('a\nb')`, 16, "open backslash"},
		{"open backslash before a quote letter", `States.Format('\u0041')`, 15, "open backslash"},
		{"backslash at the end", `States.Format('a\`, 16, "open backslash at the end"},
		{"bare word", "States.Array(foo)", 13, `unexpected "foo"`},
		{"True is not true", "States.Array(True)", 13, `unexpected "True"`},
		{"double-quoted string", `States.Array("a")`, 13, `unexpected '"'`},
		{"leading zero", "States.Array(01)", 13, "leading zero"},
		{"lonely minus", "States.Array(-)", 13, "malformed number"},
		{"dot without digits", "States.Array(1.)", 13, "no digits after '.'"},
		{"exponent without digits", "States.Array(1e)", 13, "no digits in the exponent"},
		{"plus sign", "States.Array(+1)", 13, `unexpected '+'`},
		{"path without a dot or a variable name", "States.Array($1abc)", 13, `must start with "$."`},
		{"unbalanced bracket", "States.Array($.a[0)", 13, "unterminated '['"},
		{"closing bracket", "States.Array($.a])", 16, "unbalanced ']'"},
		{"unterminated quoted name", "States.Array($['a)", 15, "unterminated quoted name"},
		{"empty", "", 0, "expected an intrinsic function"},
		{"only spaces", "   ", 3, "expected an intrinsic function"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse(tt.expr)
			var se *SyntaxError
			require.ErrorAs(t, err, &se)
			assert.Nil(t, c)
			assert.Equal(t, tt.expr, se.Expr)
			assert.Equal(t, tt.offset, se.Offset)
			assert.Contains(t, se.Reason, tt.reason)
			assert.Contains(t, err.Error(), tt.reason)
		})
	}
}

// nested builds depth levels of States.Array around a literal.
func nested(depth int) string {
	return strings.Repeat("States.Array(", depth) + "1" + strings.Repeat(")", depth)
}

func TestNestingLimit(t *testing.T) {
	t.Parallel()
	c, err := Parse(nested(MaxNesting))
	require.NoError(t, err, "10 levels are allowed")
	got, err := c.Eval(nil)
	require.NoError(t, err)
	for range MaxNesting - 1 {
		require.IsType(t, []any{}, got)
		got = got.([]any)[0]
	}
	assert.Equal(t, []any{int64(1)}, got)

	_, err = Parse(nested(MaxNesting + 1))
	var se *SyntaxError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, se.Reason, "deeper than 10 levels")

	// Width does not count against the limit: only the depth does.
	wide := "States.Array(" + strings.Repeat(nested(MaxNesting-1)+", ", 5) + "1)"
	_, err = Parse(wide)
	require.NoError(t, err)

	// A deeply nested hostile input fails fast instead of recursing.
	_, err = Parse(nested(100000))
	require.ErrorAs(t, err, &se)
}

func TestParseErrorsAreSyntaxErrorsOnly(t *testing.T) {
	t.Parallel()
	_, err := Parse("States.Nope()")
	var se *SyntaxError
	require.ErrorAs(t, err, &se)
	var fe *FailureError
	assert.NotErrorAs(t, err, &fe)
}

// FuzzParse asserts Parse never panics, fails only with a *SyntaxError, and
// that whatever it accepts evaluates to a value or a typed error without
// panicking either.
func FuzzParse(f *testing.F) {
	seeds := []string{
		"States.Format('Hello, my name is {}.', $.name)",
		"States.Format('{}', States.ArrayLength(States.Array(1,2)))",
		"States.ArrayPartition($.inputArray,4)",
		"States.Hash($.Data, $.Algorithm)",
		"States.JsonMerge($.json1, $.json2, false)",
		"States.StringSplit($.inputString, $.splitter)",
		"States.MathRandom(1, 999, 3)",
		"States.ArrayRange(9, 1, -2)",
		`States.Format('\{\} \' \\ {}', $$.Execution.Id)`,
		"States.Array($.abc.['def ghi'], $[0], $.a[?(@.b == 'x, y')])",
		"States.Array(1e5, -0.5, true, false, null, 'x')",
		"States.UUID()",
		nested(MaxNesting + 1),
		"States.Format('",
		"States.Array($[",
		"States.Array(-",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	doc := map[string]any{
		"name": "Arnav", "inputArray": []any{int64(1), int64(2)}, "Data": "input data", "Algorithm": "SHA-1",
		"json1": map[string]any{"a": int64(1)}, "json2": map[string]any{"b": int64(2)},
		"inputString": "a,b", "splitter": ",",
	}
	f.Fuzz(func(t *testing.T, expr string) {
		c, err := Parse(expr)
		if err != nil {
			var se *SyntaxError
			require.ErrorAs(t, err, &se)
			require.Nil(t, c)
			return
		}
		require.NotNil(t, c)
		require.True(t, strings.HasPrefix(c.Name(), "States."))
		_, err = c.EvalWith(func(path string) (any, error) {
			if v, ok := doc[strings.TrimPrefix(path, "$.")]; ok {
				return v, nil
			}
			return nil, &pathNotFoundError{path: path}
		}, fixedEntropy(0))
		if err != nil {
			var fe *FailureError
			var pe *pathNotFoundError
			require.True(t, errors.As(err, &fe) || errors.As(err, &pe), "unexpected error type %T: %v", err, err)
		}
	})
}

func BenchmarkFormat(b *testing.B) {
	resolve := func(string) (any, error) { return "Arnav", nil }
	b.ReportAllocs()
	for b.Loop() {
		c, err := Parse("States.Format('Hello, my name is {}.', $.name)")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Eval(resolve); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFormatEvalOnly is the per-execution cost when the interpreter
// parses once at validation and keeps the *Call.
func BenchmarkFormatEvalOnly(b *testing.B) {
	resolve := func(string) (any, error) { return "Arnav", nil }
	c, err := Parse("States.Format('Hello, my name is {}.', $.name)")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Eval(resolve); err != nil {
			b.Fatal(err)
		}
	}
}
