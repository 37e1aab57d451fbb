package asl

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Workflow variables in JSONPath states, as the developer guide's page
// "Passing data between states with variables"
// (https://docs.aws.amazon.com/step-functions/latest/dg/workflow-variables.html)
// describes them: Assign is evaluated against the state's result, every
// expression of one Assign sees the values from before the state (so a
// swap works), later states read them as $name, Parallel branches and Map
// iterations read outer variables and cannot write them back.
func TestVariablesJSONPath(t *testing.T) {
	tests := []struct {
		name   string
		def    string
		input  string
		output string
	}{
		{
			name: "a later state reads an assigned variable",
			def: `{"StartAt":"A","States":{
			  "A":{"Type":"Pass","Assign":{"productName.$":"$.product.name","count":3},"Next":"B"},
			  "B":{"Type":"Pass","Parameters":{"name.$":"$productName","n.$":"$count"},"End":true}}}`,
			input:  `{"product":{"name":"widget"}}`,
			output: `{"name":"widget","n":3}`,
		},
		{
			name: "Assign sees the Pass state's Result, not its input",
			def: `{"StartAt":"A","States":{
			  "A":{"Type":"Pass","Result":{"a":1},"ResultPath":"$.r","Assign":{"v.$":"$.a"},"Next":"B"},
			  "B":{"Type":"Pass","Parameters":{"v.$":"$v"},"End":true}}}`,
			input:  `{"a":99}`,
			output: `{"v":1}`,
		},
		{
			name: "all assignments of one Assign see the old values (swap)",
			def: `{"StartAt":"Init","States":{
			  "Init":{"Type":"Pass","Assign":{"x":1,"y":2},"Next":"Swap"},
			  "Swap":{"Type":"Pass","Assign":{"x.$":"$y","y.$":"$x"},"Next":"Show"},
			  "Show":{"Type":"Pass","Parameters":{"x.$":"$x","y.$":"$y"},"End":true}}}`,
			input:  `{}`,
			output: `{"x":2,"y":1}`,
		},
		{
			name: "the state's own Parameters see the value from before the state",
			def: `{"StartAt":"Init","States":{
			  "Init":{"Type":"Pass","Assign":{"x":"old"},"Next":"Set"},
			  "Set":{"Type":"Pass","Parameters":{"x.$":"$x"},"Assign":{"x":"new"},"Next":"Show"},
			  "Show":{"Type":"Pass","Parameters":{"before.$":"$.x","after.$":"$x"},"End":true}}}`,
			input:  `{}`,
			output: `{"before":"old","after":"new"}`,
		},
		{
			name: "a variable path can go into the value and use an intrinsic",
			def: `{"StartAt":"A","States":{
			  "A":{"Type":"Pass","Assign":{"cfg":{"hosts":["a","b","c"]}},"Next":"B"},
			  "B":{"Type":"Pass","Parameters":{"second.$":"$cfg.hosts[1]","n.$":"States.ArrayLength($cfg.hosts)"},"End":true}}}`,
			input:  `{}`,
			output: `{"second":"b","n":3}`,
		},
		{
			name: "a Choice rule tests a variable; the matched rule's Assign applies",
			def: `{"StartAt":"A","States":{
			  "A":{"Type":"Pass","Assign":{"limit":5},"Next":"C"},
			  "C":{"Type":"Choice","Assign":{"seen":"default"},"Choices":[{"Variable":"$limit","NumericGreaterThanPath":"$.v","Assign":{"seen.$":"$.v"},"Next":"Low"}],"Default":"High"},
			  "Low":{"Type":"Pass","Parameters":{"low.$":"$seen"},"End":true},
			  "High":{"Type":"Pass","Parameters":{"high.$":"$seen"},"End":true}}}`,
			input:  `{"v":3}`,
			output: `{"low":3}`,
		},
		{
			name: "the Choice state's Assign applies when Default is taken",
			def: `{"StartAt":"A","States":{
			  "A":{"Type":"Pass","Assign":{"limit":5},"Next":"C"},
			  "C":{"Type":"Choice","Assign":{"seen":"default"},"Choices":[{"Variable":"$limit","NumericGreaterThanPath":"$.v","Assign":{"seen.$":"$.v"},"Next":"Low"}],"Default":"High"},
			  "Low":{"Type":"Pass","Parameters":{"low.$":"$seen"},"End":true},
			  "High":{"Type":"Pass","Parameters":{"high.$":"$seen"},"End":true}}}`,
			input:  `{"v":9}`,
			output: `{"high":"default"}`,
		},
		{
			name: "Parallel branches read outer variables and cannot write them back",
			def: `{"StartAt":"A","States":{
			  "A":{"Type":"Pass","Assign":{"x":1},"Next":"P"},
			  "P":{"Type":"Parallel","Branches":[
			    {"StartAt":"B1","States":{"B1":{"Type":"Pass","Assign":{"x":2},"Next":"B2"},"B2":{"Type":"Pass","Parameters":{"inner.$":"$x"},"End":true}}},
			    {"StartAt":"C1","States":{"C1":{"Type":"Pass","Parameters":{"outer.$":"$x"},"End":true}}}],
			   "ResultPath":"$.branches","Next":"Show"},
			  "Show":{"Type":"Pass","Parameters":{"branches.$":"$.branches","x.$":"$x"},"End":true}}}`,
			input:  `{}`,
			output: `{"branches":[{"inner":2},{"outer":1}],"x":1}`,
		},
		{
			name: "Map iterations read outer variables; the Map's Assign sees its result",
			def: `{"StartAt":"A","States":{
			  "A":{"Type":"Pass","Assign":{"prefix":"node-"},"Next":"M"},
			  "M":{"Type":"Map","ItemsPath":"$.ids","Assign":{"all.$":"$"},
			   "ItemProcessor":{"StartAt":"I","States":{"I":{"Type":"Pass","Parameters":{"name.$":"States.Format('{}{}', $prefix, $)"},"Assign":{"prefix":"changed"},"End":true}}},
			   "Next":"Show"},
			  "Show":{"Type":"Pass","Parameters":{"all.$":"$all","prefix.$":"$prefix"},"End":true}}}`,
			input:  `{"ids":["a","b"]}`,
			output: `{"all":[{"name":"node-a"},{"name":"node-b"}],"prefix":"node-"}`,
		},
		{
			name: "a catcher's Assign sees the error output; the failed state's Assign is not applied",
			def: `{"StartAt":"A","States":{
			  "A":{"Type":"Pass","Assign":{"x":"before"},"Next":"M"},
			  "M":{"Type":"Map","ItemsPath":"$.items","Assign":{"x":"not applied"},
			   "ItemProcessor":{"StartAt":"F","States":{"F":{"Type":"Fail","Error":"Boom","Cause":"it broke"}}},
			   "Catch":[{"ErrorEquals":["States.ALL"],"Assign":{"err.$":"$.Error"},"ResultPath":null,"Next":"Show"}],"End":true},
			  "Show":{"Type":"Pass","Parameters":{"err.$":"$err","x.$":"$x"},"End":true}}}`,
			input:  `{"items":[1]}`,
			output: `{"err":"Boom","x":"before"}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.def, tc.input, nil)
			require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Error+": "+r.Exec.Cause)
			assert.JSONEq(t, tc.output, r.Exec.Output)
		})
	}
}

func TestVariableFailures(t *testing.T) {
	tests := []struct {
		name, def, input, errName, cause string
	}{
		{
			name:    "an undefined variable fails the state with States.Runtime",
			def:     `{"StartAt":"A","States":{"A":{"Type":"Pass","Parameters":{"v.$":"$nope"},"End":true}}}`,
			input:   `{}`,
			errName: ErrRuntime,
			cause:   "nope",
		},
		{
			name:    "a variable larger than 256 KiB fails with States.Runtime",
			def:     `{"StartAt":"A","States":{"A":{"Type":"Pass","Assign":{"v.$":"States.Array($.s, $.s)"},"End":true}}}`,
			input:   `{"s":"` + string(repeatByte('a', MaxVariableBytes/2)) + `"}`,
			errName: ErrRuntime,
			cause:   "The variable 'v' assigned in state 'A' has a size of",
		},
		{
			name:    "variables larger than 256 KiB together fail with States.Runtime",
			def:     `{"StartAt":"A","States":{"A":{"Type":"Pass","Assign":{"a.$":"$.s","b.$":"$.s","c.$":"$.s"},"End":true}}}`,
			input:   `{"s":"` + string(repeatByte('a', MaxVariableBytes/3+10)) + `"}`,
			errName: ErrRuntime,
			cause:   "The variables assigned in state 'A' have a combined size of",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.def, tc.input, nil)
			require.Equal(t, StatusFailed, r.Exec.Status)
			assert.Equal(t, tc.errName, r.Exec.Error)
			assert.Contains(t, r.Exec.Cause, tc.cause)
		})
	}
}

func repeatByte(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}
