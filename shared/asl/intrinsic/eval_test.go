package intrinsic

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocumentedExamples runs every example of the AWS page "Intrinsic
// functions for JSONPath states in Step Functions" with its input and checks
// the documented output. want is JSON text, parsed into the ojg model, so
// int64 versus float64 is checked too.
func TestDocumentedExamples(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		expr  string
		input string
		want  string
	}{
		{
			name:  "Format with a literal template",
			expr:  "States.Format('Hello, my name is {}.', $.name)",
			input: `{"name": "Arnav", "template": "Hello, my name is {}."}`,
			want:  `"Hello, my name is Arnav."`,
		},
		{
			name:  "Format with a template from a path",
			expr:  "States.Format($.template, $.name)",
			input: `{"name": "Arnav", "template": "Hello, my name is {}."}`,
			want:  `"Hello, my name is Arnav."`,
		},
		{
			name:  "StringToJson",
			expr:  "States.StringToJson($.escapedJsonString)",
			input: `{"escapedJsonString": "{\"foo\": \"bar\"}"}`,
			want:  `{"foo": "bar"}`,
		},
		{
			name:  "JsonToString",
			expr:  "States.JsonToString($.unescapedJson)",
			input: `{"unescapedJson": {"foo": "bar"}}`,
			want:  `"{\"foo\":\"bar\"}"`,
		},
		{
			name:  "Array",
			expr:  "States.Array($.Id)",
			input: `{"Id": 123456}`,
			want:  `[123456]`,
		},
		{
			name:  "ArrayPartition",
			expr:  "States.ArrayPartition($.inputArray,4)",
			input: `{"inputArray": [1,2,3,4,5,6,7,8,9]}`,
			want:  `[[1,2,3,4],[5,6,7,8],[9]]`,
		},
		{
			name:  "ArrayContains",
			expr:  "States.ArrayContains($.inputArray, $.lookingFor)",
			input: `{"inputArray": [1,2,3,4,5,6,7,8,9], "lookingFor": 5}`,
			want:  `true`,
		},
		{
			name: "ArrayRange",
			expr: "States.ArrayRange(1, 9, 2)",
			want: `[1,3,5,7,9]`,
		},
		{
			name:  "ArrayGetItem",
			expr:  "States.ArrayGetItem($.inputArray, $.index)",
			input: `{"inputArray": [1,2,3,4,5,6,7,8,9], "index": 5}`,
			want:  `6`,
		},
		{
			name:  "ArrayLength",
			expr:  "States.ArrayLength($.inputArray)",
			input: `{"inputArray": [1,2,3,4,5,6,7,8,9]}`,
			want:  `9`,
		},
		{
			name:  "ArrayUnique",
			expr:  "States.ArrayUnique($.inputArray)",
			input: `{"inputArray": [1,2,3,3,3,3,3,3,4]}`,
			want:  `[1,2,3,4]`,
		},
		{
			name:  "Base64Encode",
			expr:  "States.Base64Encode($.input)",
			input: `{"input": "Data to encode"}`,
			want:  `"RGF0YSB0byBlbmNvZGU="`,
		},
		{
			// The page shows "Decoded data" as the result, but the documented
			// input is the Base64Encode example's output, which decodes back to
			// "Data to encode".
			name:  "Base64Decode",
			expr:  "States.Base64Decode($.base64)",
			input: `{"base64": "RGF0YSB0byBlbmNvZGU="}`,
			want:  `"Data to encode"`,
		},
		{
			// The page prints aaff4a450a104cd177d28d18d7485e8cae074b7, 39 hex
			// digits: one "4" is missing. This is the SHA-1 of "input data"
			// (sha1sum agrees).
			name:  "Hash",
			expr:  "States.Hash($.Data, $.Algorithm)",
			input: `{"Data": "input data", "Algorithm": "SHA-1"}`,
			want:  `"aaff4a450a104cd177d28d18d74485e8cae074b7"`,
		},
		{
			name:  "JsonMerge",
			expr:  "States.JsonMerge($.json1, $.json2, false)",
			input: `{"json1": {"a": {"a1": 1, "a2": 2}, "b": 2}, "json2": {"a": {"a3": 1, "a4": 2}, "c": 3}}`,
			want:  `{"a": {"a3": 1, "a4": 2}, "b": 2, "c": 3}`,
		},
		{
			name:  "MathAdd",
			expr:  "States.MathAdd($.value1, $.step)",
			input: `{"value1": 111, "step": -1}`,
			want:  `110`,
		},
		{
			name:  "StringSplit with one delimiter",
			expr:  "States.StringSplit($.inputString, $.splitter)",
			input: `{"inputString": "1,2,3,4,5", "splitter": ","}`,
			want:  `["1","2","3","4","5"]`,
		},
		{
			name:  "StringSplit with several delimiters",
			expr:  "States.StringSplit($.inputString, $.splitter)",
			input: `{"inputString": "This.is+a,test=string", "splitter": ".+,="}`,
			want:  `["This","is","a","test","string"]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := evalExpr(t, tt.expr, tt.input, "")
			require.NoError(t, err)
			assert.Equal(t, parseJSON(t, tt.want), got)
		})
	}
}

// TestRecordedBehaviour pins behaviour AWS recorded in LocalStack's
// snapshot tests (executions against real Step Functions), beyond the page's
// examples.
func TestRecordedBehaviour(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		expr  string
		input string
		want  string
	}{
		{"Format null", "States.Format('Formatting argument {}.', $.v)", `{"v": null}`, `"Formatting argument null."`},
		{"Format integer", "States.Format('Formatting argument {}.', $.v)", `{"v": 1}`, `"Formatting argument 1."`},
		{"Format float", "States.Format('Formatting argument {}.', $.v)", `{"v": 1.1}`, `"Formatting argument 1.1."`},
		{"Format empty string", "States.Format('Formatting argument {}.', $.v)", `{"v": ""}`, `"Formatting argument ."`},
		{
			"Format string holding JSON", "States.Format('Formatting argument {}.', $.v)",
			`{"v": "{\"Arg1\": 1, \"Arg2\": []}"}`, `"Formatting argument {\"Arg1\": 1, \"Arg2\": []}."`,
		},
		{
			"Format objects Java style", "States.Format('Formatting arguments fst={} and snd={}.', $.fst, $.snd)",
			`{"fst": {"Arg1": 1, "Arg2": []}, "snd": {"Arg1": 1, "Arg2": []}}`,
			`"Formatting arguments fst={Arg1=1, Arg2=[]} and snd={Arg1=1, Arg2=[]}."`,
		},
		{"Format array", "States.Format('{}', $.v)", `{"v": [1, "a", null, true]}`, `"[1, a, null, true]"`},
		{"Format boolean", "States.Format('{}', true)", ``, `"true"`},
		{"StringToJson empty", "States.StringToJson($.v)", `{"v": ""}`, `null`},
		{"StringToJson blank", "States.StringToJson($.v)", `{"v": " "}`, `null`},
		{"StringToJson null", "States.StringToJson($.v)", `{"v": "null"}`, `null`},
		{"StringToJson minus zero", "States.StringToJson($.v)", `{"v": "-0"}`, `0`},
		{"StringToJson float", "States.StringToJson($.v)", `{"v": "1.1"}`, `1.1`},
		{"StringToJson string", "States.StringToJson($.v)", `{"v": "\"HelloWorld\""}`, `"HelloWorld"`},
		{"StringToJson array", "States.StringToJson($.v)", `{"v": "[1, 2, \"HelloWorld\"]"}`, `[1, 2, "HelloWorld"]`},
		{"StringToJson big integer", "States.StringToJson($.v)", `{"v": "{\"n\": [99999999999999999999, 2.0]}"}`, `{"n": [1e20, 2.0]}`},
		{"JsonToString null", "States.JsonToString($.v)", `{"v": null}`, `"null"`},
		{"JsonToString string", "States.JsonToString($.v)", `{"v": "HelloWorld"}`, `"\"HelloWorld\""`},
		{"JsonToString array", "States.JsonToString($.v)", `{"v": [1, 2, "HelloWorld"]}`, `"[1,2,\"HelloWorld\"]"`},
		{"JsonToString object", "States.JsonToString($.v)", `{"v": {"Arg1": 1, "Arg2": []}}`, `"{\"Arg1\":1,\"Arg2\":[]}"`},
		{
			"JsonMerge overrides shared keys", "States.JsonMerge($.fst, $.snd, false)",
			`{"fst": {"a": {"a1": 1, "a2": 2}, "b": 2, "d": 3}, "snd": {"a": {"a3": 1, "a4": 2}, "c": 3, "d": 4}}`,
			`{"a": {"a3": 1, "a4": 2}, "b": 2, "c": 3, "d": 4}`,
		},
		{
			"JsonMerge of a parsed literal and the execution input",
			`States.JsonMerge(States.StringToJson('{"constant_in_literal": "false"}'), $$.Execution.Input.input_field, false)`,
			``, `{"constant_in_literal": "false", "constant_input_field": "constant_value"}`,
		},
		{"ArrayPartition of an empty array", "States.ArrayPartition($.v, 2)", `{"v": []}`, `[]`},
		{"ArrayPartition chunk larger than the array", "States.ArrayPartition($.v, 5)", `{"v": [0, 1, 2]}`, `[[0, 1, 2]]`},
		{"ArrayRange not reaching last", "States.ArrayRange(0, 10, 3)", ``, `[0, 3, 6, 9]`},
		{"ArrayRange one step", "States.ArrayRange(1, 9, 9)", ``, `[1]`},
		{"ArrayContains null in empty", "States.ArrayContains($.a, $.v)", `{"a": [], "v": null}`, `false`},
		{"ArrayContains nested array", "States.ArrayContains($.a, $.v)", `{"a": [[1, 2, 3], 2], "v": [1, 2, 3]}`, `true`},
		{"ArrayContains object", "States.ArrayContains($.a, $.v)", `{"a": [{"1": 2, "2": []}], "v": {"2": [], "1": 2}}`, `true`},
		{"ArrayContains false", "States.ArrayContains($.a, false)", `{"a": [true, false]}`, `true`},
		{"Base64Encode empty", "States.Base64Encode($.v)", `{"v": ""}`, `""`},
		{"Base64Decode empty", "States.Base64Decode($.v)", `{"v": ""}`, `""`},
		{"Hash MD5", "States.Hash('input data', 'MD5')", ``, `"812f45842bc6d66ee14572ce20db8e86"`},
		{"Hash SHA-256", "States.Hash('input data', 'SHA-256')", ``, `"b4a697a057313163aee33cd8d40c66e9f0f177e00cac2de32475ffff6169c3e3"`},
		{
			"Hash SHA-384", "States.Hash('input data', 'SHA-384')", ``,
			`"d28a7d5cf25a74f11a50a18452b75e04bb3d70c9dd0510d6123aa008c756511b87525bdc835ebb27e1fb9e9374a15562"`,
		},
		{
			"Hash SHA-512", "States.Hash('input data', 'SHA-512')", ``,
			`"6ce4adb348546d4f449c4d25aad9a7c9cb711d9e91982d3f0b29ca2f3f47d4ce2deba23bf2954f0f1d593fc50283731a533d30d425402d4f91316d871303aac4"`,
		},
		// The definition held a JSON "\n", so the intrinsic text has a real
		// newline inside both literals.
		{"StringSplit on a newline", "States.StringSplit('Hello\nWorld', '\n')", ``, `["Hello", "World"]`},
		{
			"nested calls on a context path",
			"States.ArrayGetItem(States.StringSplit($$.StateMachine.Name, '-'), States.MathAdd(States.ArrayLength(States.StringSplit($$.StateMachine.Name, '-')), -1))",
			``, `"suffix"`,
		},
	}
	const context = `{"StateMachine": {"Name": "my-machine-suffix"}, "Execution": {"Input": {"input_field": {"constant_input_field": "constant_value"}}}}`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := evalExpr(t, tt.expr, tt.input, context)
			require.NoError(t, err)
			assert.Equal(t, parseJSON(t, tt.want), got)
		})
	}
}

// TestMathRounding pins Java's Math.round, which AWS applies to non-integer
// arguments: half rounds toward positive infinity (AWS recordings:
// 1.49+1.5 = 3, 1.5+1.51 = 4, -1.49+-1.5 = -2).
func TestMathRounding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int64
	}{
		{"-9", "3", -6},
		{"1.49", "1.50", 3},
		{"1.50", "1.51", 4},
		{"-1.49", "-1.50", -2},
		{"-1.50", "-1.51", -3},
		{"1.49", "-1.49", 0},
		{"0.5", "0", 1},
		{"2.5", "0", 3},
		{"-0.5", "0.5", 1},
		{"-0.5", "0", 0},
		{"-2.5", "0", -2},
		{"-3.5", "0", -3},
		{"2147483647", "2147483647", 4294967294},
	}
	for _, tt := range tests {
		t.Run(tt.a+"+"+tt.b, func(t *testing.T) {
			t.Parallel()
			got, err := evalExpr(t, "States.MathAdd($.a, $.b)", `{"a": `+tt.a+`, "b": `+tt.b+`}`, "")
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestMathRandom(t *testing.T) {
	t.Parallel()
	t.Run("documented example stays in range", func(t *testing.T) {
		t.Parallel()
		c, err := Parse("States.MathRandom($.start, $.end)")
		require.NoError(t, err)
		resolve := docResolver(t, `{"start": 1, "end": 999}`, "")
		for seed := range byte(50) {
			got, err := c.EvalWith(resolve, fixedEntropy(seed))
			require.NoError(t, err)
			require.IsType(t, int64(0), got)
			assert.GreaterOrEqual(t, got.(int64), int64(1))
			assert.Less(t, got.(int64), int64(999))
		}
	})
	t.Run("end is exclusive", func(t *testing.T) {
		t.Parallel()
		for seed := range byte(20) {
			c, err := Parse("States.MathRandom(7, 8)")
			require.NoError(t, err)
			got, err := c.EvalWith(nil, fixedEntropy(seed))
			require.NoError(t, err)
			assert.Equal(t, int64(7), got)
		}
	})
	t.Run("a seed gives the same number every time", func(t *testing.T) {
		t.Parallel()
		c, err := Parse("States.MathRandom(0, 999, 3)")
		require.NoError(t, err)
		first, err := c.Eval(nil)
		require.NoError(t, err)
		for range 5 {
			again, err := c.Eval(nil)
			require.NoError(t, err)
			assert.Equal(t, first, again)
		}
	})
	t.Run("rounded start and end", func(t *testing.T) {
		t.Parallel()
		// AWS recording input (12.50, 44.51): rounds to [13, 45).
		got, err := evalExpr(t, "States.MathRandom($.s, $.e, 42)", `{"s": 12.50, "e": 44.51}`, "")
		require.NoError(t, err)
		assert.GreaterOrEqual(t, got.(int64), int64(13))
		assert.Less(t, got.(int64), int64(45))
	})
}

// TestJavaRandom checks the generator against java.util.Random: new
// Random(42).nextInt() is -1170105035, a widely quoted value.
func TestJavaRandom(t *testing.T) {
	t.Parallel()
	r := newJavaRandom(42)
	assert.Equal(t, int32(-1170105035), r.next(32))

	// nextInt(bound) stays in [0, bound) on both of Java's code paths.
	for _, bound := range []int32{1, 2, 7, 64, 999, 1 << 30, 1<<31 - 1} {
		r := newJavaRandom(int64(bound))
		for range 100 {
			x := r.nextInt(bound)
			assert.GreaterOrEqual(t, x, int32(0))
			assert.Less(t, x, bound)
		}
	}
}

func TestUUID(t *testing.T) {
	t.Parallel()
	v4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	c, err := Parse("States.UUID()")
	require.NoError(t, err)
	first, err := c.Eval(nil)
	require.NoError(t, err)
	require.IsType(t, "", first)
	assert.Regexp(t, v4, first)
	second, err := c.Eval(nil)
	require.NoError(t, err)
	assert.NotEqual(t, first, second)

	// The same entropy gives the same UUID, so local runs can be reproduced.
	a, err := c.EvalWith(nil, fixedEntropy(9))
	require.NoError(t, err)
	b, err := c.EvalWith(nil, fixedEntropy(9))
	require.NoError(t, err)
	assert.Equal(t, a, b)
	assert.Regexp(t, v4, a)
}

func TestNestingAndEscapes(t *testing.T) {
	t.Parallel()
	const arnInput = `{"ImageRecipe": {"Arn": "arn:aws:imagebuilder:us-east-1:123456789012:image-recipe/my-recipe/2.5.1"}}`
	tests := []struct {
		name  string
		expr  string
		input string
		want  string
	}{
		{"Format of a nested length", "States.Format('{}', States.ArrayLength(States.Array(1,2)))", ``, `"2"`},
		{
			// The page's nine-function example has three placeholders; this
			// adds the third value it leaves out (see TestDocumentedNestingExample).
			"nine nested functions",
			"States.Format('{}.{}.{}', States.ArrayGetItem(States.StringSplit(States.ArrayGetItem(States.StringSplit($.ImageRecipe.Arn, '/'), 2), '.'), 0), States.ArrayGetItem(States.StringSplit(States.ArrayGetItem(States.StringSplit($.ImageRecipe.Arn, '/'), 2), '.'), 1), States.ArrayGetItem(States.StringSplit(States.ArrayGetItem(States.StringSplit($.ImageRecipe.Arn, '/'), 2), '.'), 2))",
			arnInput, `"2.5.1"`,
		},
		{"escaped quote", `States.Format('it\'s {}', 'x')`, ``, `"it's x"`},
		{"escaped braces are not a placeholder", `States.Format('\{\} {}', 'x')`, ``, `"{} x"`},
		{"escaped open brace only", `States.Format('\{} {}', 'x')`, ``, `"{} x"`},
		{"escaped backslash", `States.Format('a\\b {}', 'x')`, ``, `"a\\b x"`},
		{"lone braces are text", `States.Format('{ } {}', 'x')`, ``, `"{ } x"`},
		{"unescaped JSON braces in a literal", `States.StringToJson('{"a": 1}')`, ``, `{"a": 1}`},
		{"escaped characters in other functions", `States.StringSplit('a\{b\}c', '\{\}')`, ``, `["a", "b", "c"]`},
		{"template from a path has no escapes", "States.Format($.t, 'x')", `{"t": "\\ {}"}`, `"\\ x"`},
		{"whitespace around tokens", "  States.Format   ( 'OK {}'  ,\n\t$.v )  ", `{"v": 1}`, `"OK 1"`},
		{"literals", "States.Array('a', -1, 2.5, 1e2, true, false, null, 99999999999999999999)", ``, `["a", -1, 2.5, 100.0, true, false, null, 1e20]`},
		{"empty array", "States.Array()", ``, `[]`},
		{"root path", "States.JsonToString($)", `{"a": 1}`, `"{\"a\":1}"`},
		{"bracket path", "States.Format('{}', $['a b'])", `{"a b": "spaced"}`, `"spaced"`},
		{"filter path with a comma and parentheses", "States.Array($.a[?(@.k == 'x, y')].v)", `{"a": [{"k": "x, y", "v": 1}]}`, `[1]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := evalExpr(t, tt.expr, tt.input, "")
			require.NoError(t, err)
			assert.Equal(t, parseJSON(t, tt.want), got)
		})
	}
}

// TestDocumentedNestingExample: the page's "nine nested intrinsic functions"
// example parses, but gives two values to a three-placeholder template, so
// evaluating it is an intrinsic failure.
func TestDocumentedNestingExample(t *testing.T) {
	t.Parallel()
	const expr = "States.Format('{}.{}.{}', States.ArrayGetItem(States.StringSplit(States.ArrayGetItem(States.StringSplit($.ImageRecipe.Arn, '/'), 2), '.'), 0), States.ArrayGetItem(States.StringSplit(States.ArrayGetItem(States.StringSplit($.ImageRecipe.Arn, '/'), 2), '.'), 1))"
	c, err := Parse(expr)
	require.NoError(t, err)
	assert.Equal(t, []string{"$.ImageRecipe.Arn", "$.ImageRecipe.Arn"}, c.Paths())
	_, err = c.Eval(docResolver(t, `{"ImageRecipe": {"Arn": "arn:aws:imagebuilder:us-east-1:123456789012:image-recipe/r/2.5.1"}}`, ""))
	var fe *FailureError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "States.Format", fe.Function)
	assert.Contains(t, fe.Reason, "3 {} placeholders but 2 values")
}

// TestPathsReachTheResolverVerbatim: the resolver gets the path text exactly
// as written, including the bracket form AWS documents for names outside the
// member-name shorthand.
func TestPathsReachTheResolverVerbatim(t *testing.T) {
	t.Parallel()
	c, err := Parse("States.Array($.abc.['def ghi'], $$.Execution.Id, $, $[0].x)")
	require.NoError(t, err)
	var seen []string
	got, err := c.Eval(func(path string) (any, error) {
		seen = append(seen, path)
		return int64(len(seen)), nil
	})
	require.NoError(t, err)
	want := []string{"$.abc.['def ghi']", "$$.Execution.Id", "$", "$[0].x"}
	assert.Equal(t, want, seen)
	assert.Equal(t, want, c.Paths())
	assert.Equal(t, []any{int64(1), int64(2), int64(3), int64(4)}, got)
}

func TestResolverErrorsAreReturnedUnchanged(t *testing.T) {
	t.Parallel()
	c, err := Parse("States.Format('{}', States.ArrayLength($.missing))")
	require.NoError(t, err)
	_, err = c.Eval(docResolver(t, `{}`, ""))
	var pe *pathNotFoundError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "$.missing", pe.path)
	var fe *FailureError
	assert.NotErrorAs(t, err, &fe, "a resolver error must not become an intrinsic failure")
}

// TestFailures covers every documented error case and the argument checks:
// each is a *FailureError naming the function.
func TestFailures(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", maxEncodeChars+1)
	longB64 := strings.Repeat("QUFB", maxEncodeChars/4+1)
	tests := []struct {
		name     string
		expr     string
		input    string
		function string
		reason   string
	}{
		{"Format without arguments", "States.Format()", ``, "States.Format", "got no arguments"},
		{"Format template not a string", "States.Format($.t)", `{"t": 1}`, "States.Format", "argument 1 must be a string, got number"},
		{"Format too few values", "States.Format('{} {}', 1)", ``, "States.Format", "2 {} placeholders but 1 value was given"},
		{"Format too many values", "States.Format('{}', 1, 2)", ``, "States.Format", "1 {} placeholder but 2 values were given"},
		{"Format escaped braces are not placeholders", `States.Format('\{\}', 1)`, ``, "States.Format", "0 {} placeholders but 1 value"},
		{"StringToJson not a string", "States.StringToJson($.v)", `{"v": {"a": 1}}`, "States.StringToJson", "must be a string, got object"},
		{"StringToJson invalid JSON", "States.StringToJson('{\"a\": ')", ``, "States.StringToJson", "not valid JSON"},
		{"StringToJson trailing data", "States.StringToJson('1 2')", ``, "States.StringToJson", "continues after the first value"},
		{"StringToJson comment", "States.StringToJson('[1] // c')", ``, "States.StringToJson", "continues after the first value"},
		{"StringToJson lax number", "States.StringToJson('1.')", ``, "States.StringToJson", "not valid JSON"},
		{"StringToJson number beyond float64", "States.StringToJson('[1e400]')", ``, "States.StringToJson", "number out of range"},
		{"StringToJson arity", "States.StringToJson('1', '2')", ``, "States.StringToJson", "takes 1 argument, got 2"},
		{"JsonToString arity", "States.JsonToString()", ``, "States.JsonToString", "takes 1 argument, got 0"},
		{"ArrayPartition not an array", "States.ArrayPartition($.v, 2)", `{"v": "abc"}`, "States.ArrayPartition", "argument 1 must be an array, got string"},
		{"ArrayPartition zero chunk", "States.ArrayPartition($.v, 0)", `{"v": [1]}`, "States.ArrayPartition", "must be a positive integer, got 0"},
		{"ArrayPartition negative chunk", "States.ArrayPartition($.v, -1)", `{"v": [1]}`, "States.ArrayPartition", "must be a positive integer, got -1"},
		{"ArrayPartition chunk rounds to zero", "States.ArrayPartition($.v, 0.4)", `{"v": [1]}`, "States.ArrayPartition", "positive integer, got 0"},
		{"ArrayPartition chunk not a number", "States.ArrayPartition($.v, 'x')", `{"v": [1]}`, "States.ArrayPartition", "argument 2 must be an integer, got string"},
		{"ArrayContains not an array", "States.ArrayContains($.v, 1)", `{"v": {}}`, "States.ArrayContains", "must be an array, got object"},
		{"ArrayContains arity", "States.ArrayContains($.v)", `{"v": []}`, "States.ArrayContains", "takes 2 arguments, got 1"},
		{"ArrayRange zero step", "States.ArrayRange(1, 9, 0)", ``, "States.ArrayRange", "step) must not be zero"},
		{"ArrayRange over 1000 items", "States.ArrayRange(1, 1001, 1)", ``, "States.ArrayRange", "1001 items, more than the limit of 1000"},
		{"ArrayRange not integers", "States.ArrayRange('1', 9, 1)", ``, "States.ArrayRange", "argument 1 must be an integer, got string"},
		{"ArrayRange out of int range", "States.ArrayRange(0, 3000000000, 1)", ``, "States.ArrayRange", "argument 2 must be between"},
		{"ArrayGetItem out of range", "States.ArrayGetItem($.v, 3)", `{"v": [1, 2, 3]}`, "States.ArrayGetItem", "index 3 is out of range for an array of 3 items"},
		{"ArrayGetItem negative", "States.ArrayGetItem($.v, -1)", `{"v": [1]}`, "States.ArrayGetItem", "index -1 is out of range for an array of 1 item"},
		{"ArrayGetItem index not a number", "States.ArrayGetItem($.v, null)", `{"v": [1]}`, "States.ArrayGetItem", "argument 2 must be an integer, got null"},
		{"ArrayLength not an array", "States.ArrayLength($.v)", `{"v": 1}`, "States.ArrayLength", "must be an array, got number"},
		{"ArrayUnique not an array", "States.ArrayUnique($.v)", `{"v": true}`, "States.ArrayUnique", "must be an array, got boolean"},
		{"Base64Encode over 10000 characters", "States.Base64Encode($.v)", `{"v": "` + long + `"}`, "States.Base64Encode", "10001 characters, more than the limit of 10000"},
		{"Base64Encode not a string", "States.Base64Encode($.v)", `{"v": []}`, "States.Base64Encode", "must be a string, got array"},
		{"Base64Decode over 10000 characters", "States.Base64Decode($.v)", `{"v": "` + longB64 + `"}`, "States.Base64Decode", "more than the limit of 10000"},
		{"Base64Decode invalid", "States.Base64Decode('not base64!')", ``, "States.Base64Decode", "not valid base64"},
		{"Hash over 10000 characters", "States.Hash($.v, 'MD5')", `{"v": "` + long + `"}`, "States.Hash", "more than the limit of 10000"},
		{"Hash unknown algorithm", "States.Hash('x', 'SHA-3')", ``, "States.Hash", "must name an algorithm"},
		{"Hash algorithm is case sensitive", "States.Hash('x', 'sha-1')", ``, "States.Hash", "must name an algorithm"},
		{"Hash data not a string", "States.Hash($.v, 'MD5')", `{"v": 1}`, "States.Hash", "argument 1 must be a string, got number"},
		{"JsonMerge deep", "States.JsonMerge($.a, $.b, true)", `{"a": {}, "b": {}}`, "States.JsonMerge", "only the shallow merge is supported"},
		{"JsonMerge third not boolean", "States.JsonMerge($.a, $.b, 'false')", `{"a": {}, "b": {}}`, "States.JsonMerge", "argument 3 must be the boolean false, got string"},
		{"JsonMerge first not object", "States.JsonMerge($.a, $.b, false)", `{"a": [], "b": {}}`, "States.JsonMerge", "argument 1 must be an object, got array"},
		{"JsonMerge second not object", "States.JsonMerge($.a, $.b, false)", `{"a": {}, "b": 1}`, "States.JsonMerge", "argument 2 must be an object, got number"},
		{"JsonMerge arity", "States.JsonMerge($.a, $.b)", `{"a": {}, "b": {}}`, "States.JsonMerge", "takes 3 arguments, got 2"},
		{"MathRandom arity", "States.MathRandom(1)", ``, "States.MathRandom", "takes 2 or 3 arguments"},
		{"MathRandom empty range", "States.MathRandom(5, 5)", ``, "States.MathRandom", "end) must be greater than argument 1"},
		{"MathRandom seed not a number", "States.MathRandom(1, 5, 'x')", ``, "States.MathRandom", "argument 3 must be an integer, got string"},
		{"MathAdd over int range", "States.MathAdd(2147483648, 1)", ``, "States.MathAdd", "argument 1 must be between -2147483648 and 2147483647"},
		{"MathAdd not a number", "States.MathAdd(1, $.v)", `{"v": "2"}`, "States.MathAdd", "argument 2 must be an integer, got string"},
		{"MathAdd arity", "States.MathAdd(1, 2, 3)", ``, "States.MathAdd", "takes 2 arguments, got 3"},
		{"StringSplit not a string", "States.StringSplit($.v, ',')", `{"v": 1}`, "States.StringSplit", "argument 1 must be a string, got number"},
		{"StringSplit delimiter not a string", "States.StringSplit('a', $.v)", `{"v": null}`, "States.StringSplit", "argument 2 must be a string, got null"},
		{"UUID with an argument", "States.UUID(1)", ``, "States.UUID", "takes 0 arguments, got 1"},
		{"failure inside a nested call", "States.Format('{}', States.ArrayGetItem(States.Array(), 0))", ``, "States.ArrayGetItem", "out of range for an array of 0 items"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := evalExpr(t, tt.expr, tt.input, "")
			var fe *FailureError
			require.ErrorAs(t, err, &fe)
			assert.Nil(t, got)
			assert.Equal(t, tt.function, fe.Function)
			assert.Contains(t, fe.Reason, tt.reason)
			assert.True(t, strings.HasPrefix(err.Error(), tt.function+": "), err.Error())
		})
	}
}

// TestFailuresDoNotEchoValues: error text reaches execution history and
// logs, so it never holds the argument values, which may be secrets.
func TestFailuresDoNotEchoValues(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-bmc-password"
	exprs := []string{
		"States.StringToJson($.s)",
		"States.Base64Decode($.s)",
		"States.Hash('x', $.s)",
		"States.ArrayLength($.s)",
		"States.MathAdd($.s, 1)",
		"States.JsonMerge($.o, $.o, $.s)",
		"States.Format('{} {}', $.s)",
	}
	for _, expr := range exprs {
		t.Run(expr, func(t *testing.T) {
			t.Parallel()
			_, err := evalExpr(t, expr, `{"s": "`+secret+`", "o": {"k": "`+secret+`"}}`, "")
			var fe *FailureError
			require.ErrorAs(t, err, &fe)
			assert.NotContains(t, err.Error(), secret)
		})
	}
}

func TestEvalWithoutResolver(t *testing.T) {
	t.Parallel()
	c, err := Parse("States.Array($.a)")
	require.NoError(t, err)
	_, err = c.Eval(nil)
	var fe *FailureError
	require.ErrorAs(t, err, &fe)
	assert.Contains(t, fe.Reason, "no resolver")
}

func TestArrayUniqueAndContainsEquality(t *testing.T) {
	t.Parallel()
	// AWS recording input for ArrayUnique: duplicates of every JSON type.
	const input = `{"v": [null, null, true, true, false, false, 1, 1, 1.1, 0, -0, "HelloWorld", "HelloWorld", [], [], [null], [null], {"a": 1, "b": 2}, {"b": 2, "a": 1}, {"a": 1, "b": 1}]}`
	got, err := evalExpr(t, "States.ArrayUnique($.v)", input, "")
	require.NoError(t, err)
	assert.Equal(t, parseJSON(t, `[null, true, false, 1, 1.1, 0, "HelloWorld", [], [null], {"a": 1, "b": 2}, {"a": 1, "b": 1}]`), got)

	got, err = evalExpr(t, "States.ArrayContains($.v, 1.0)", `{"v": [1]}`, "")
	require.NoError(t, err)
	require.IsType(t, true, got)
	assert.True(t, got.(bool), "1 and 1.0 are the same JSON number")

	got, err = evalExpr(t, "States.ArrayContains($.v, '1')", `{"v": [1]}`, "")
	require.NoError(t, err)
	require.IsType(t, true, got)
	assert.False(t, got.(bool), "a string never equals a number")
}

func TestArrayRangeCountsDown(t *testing.T) {
	t.Parallel()
	got, err := evalExpr(t, "States.ArrayRange(9, 1, -2)", ``, "")
	require.NoError(t, err)
	assert.Equal(t, []any{int64(9), int64(7), int64(5), int64(3), int64(1)}, got)

	got, err = evalExpr(t, "States.ArrayRange(1, 9, -1)", ``, "")
	require.NoError(t, err)
	assert.Equal(t, []any{}, got, "a step away from last gives an empty array")

	got, err = evalExpr(t, "States.ArrayRange(1, 1000, 1)", ``, "")
	require.NoError(t, err)
	assert.Len(t, got, maxRangeItems, "exactly 1000 items is allowed")
}

func TestResultsDoNotAliasInputArrays(t *testing.T) {
	t.Parallel()
	items := []any{int64(1), int64(2), int64(3)}
	c, err := Parse("States.ArrayPartition($.v, 2)")
	require.NoError(t, err)
	got, err := c.Eval(func(string) (any, error) { return items, nil })
	require.NoError(t, err)
	chunks := got.([]any)
	chunks[0].([]any)[0] = "changed"
	assert.Equal(t, int64(1), items[0])
}
