package asl

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests exercise the intrinsic functions through the interpreter:
// where they may appear, how their paths resolve (input and context object)
// and how their failures are named. The functions' own documented results
// are tested in the intrinsic package.

func TestIntrinsicsInParameters(t *testing.T) {
	def := `{"StartAt":"P","States":{"P":{"Type":"Pass","Parameters":{
	  "greeting.$":"States.Format('Hello, {}! You are in {}.', $.name, $$.State.Name)",
	  "arr.$":"States.Array($.a, $.b)",
	  "len.$":"States.ArrayLength($.list)",
	  "json.$":"States.StringToJson($.text)",
	  "nested":{"sum.$":"States.MathAdd($.a, $.b)"}},"End":true}}}`
	r := run(t, def, `{"name":"maas","a":1,"b":2,"list":[1,2,3],"text":"{\"k\":true}"}`, nil)
	require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
	assert.JSONEq(t, `{"greeting":"Hello, maas! You are in P.","arr":[1,2],"len":3,"json":{"k":true},"nested":{"sum":3}}`, r.Exec.Output)
}

func TestIntrinsicInResultSelectorAndFailPaths(t *testing.T) {
	def := `{"StartAt":"P","States":{"P":{"Type":"Parallel","ResultSelector":{"joined.$":"States.JsonToString($)"},"Next":"F","Branches":[
	  {"StartAt":"A","States":{"A":{"Type":"Pass","Result":"a","End":true}}}]},
	  "F":{"Type":"Fail","ErrorPath":"States.Format('E.{}', $.joined)","CausePath":"$.joined"}}}`
	r := run(t, def, `{}`, nil)
	assert.Equal(t, StatusFailed, r.Exec.Status)
	assert.Equal(t, `E.["a"]`, r.Exec.Error)
	assert.Equal(t, `["a"]`, r.Exec.Cause)
}

func TestIntrinsicFailureIsCatchable(t *testing.T) {
	def := `{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items","ItemProcessor":{"StartAt":"P","States":{
	  "P":{"Type":"Pass","Parameters":{"x.$":"States.ArrayGetItem($.arr, 5)"},"End":true}}},
	  "ItemSelector":{"arr.$":"$$.Map.Item.Value"},
	  "Catch":[{"ErrorEquals":["States.IntrinsicFailure"],"ResultPath":"$.err","Next":"Done"}],"End":true},
	  "Done":{"Type":"Pass","OutputPath":"$.err.Error","End":true}}}`
	r := run(t, def, `{"items":[[1,2]]}`, nil)
	require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
	assert.Equal(t, `"States.IntrinsicFailure"`, r.Exec.Output)
}

func TestIntrinsicMissingPathIsRuntime(t *testing.T) {
	def := `{"StartAt":"P","States":{"P":{"Type":"Pass","Parameters":{"x.$":"States.Format('{}', $.nope)"},"End":true}}}`
	r := run(t, def, `{"a":1}`, nil)
	assert.Equal(t, StatusFailed, r.Exec.Status)
	assert.Equal(t, ErrRuntime, r.Exec.Error)
	assert.Contains(t, r.Exec.Cause, "$.nope")
}

func TestIntrinsicSyntaxErrorIsADefinitionError(t *testing.T) {
	_, err := Parse([]byte(`{"StartAt":"P","States":{"P":{"Type":"Pass","Parameters":{"x.$":"States.Format('{}', $.a"},"End":true}}}`), nil)
	var de *DefinitionError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "P", de.Problems[0].State)
	assert.Equal(t, "Parameters", de.Problems[0].Field)
}
