package asl

import (
	"encoding/json"
	"fmt"
	"strings"
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
			name:    "a variable read before any state assigned it fails the state with States.Runtime",
			def:     `{"StartAt":"A","States":{"A":{"Type":"Pass","Parameters":{"v.$":"$nope"},"Next":"B"},"B":{"Type":"Pass","Assign":{"nope":1},"End":true}}}`,
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

// Step Functions refuses, when the state machine is created, a reference
// to a variable that no state assigns; a $ inside an intrinsic's string
// literal, the input ($.x) and the context object ($$.x) are no variables.
func TestValidateUndefinedVariables(t *testing.T) {
	tests := []struct {
		name, def, state, field string
	}{
		{"Parameters", `{"StartAt":"A","States":{"A":{"Type":"Pass","Parameters":{"v.$":"$nope"},"End":true}}}`, "A", "Parameters"},
		{"intrinsic argument", `{"StartAt":"A","States":{"A":{"Type":"Pass","Assign":{"x":1},"Parameters":{"v.$":"States.Format('{}', $y)"},"End":true}}}`, "A", "Parameters"},
		{"Choice Variable", `{"StartAt":"A","States":{"A":{"Type":"Choice","Choices":[{"Variable":"$flag","BooleanEquals":true,"Next":"B"}],"Default":"B"},"B":{"Type":"Succeed"}}}`, "A", "Choices"},
		{"OutputPath in a branch", `{"StartAt":"P","States":{"P":{"Type":"Parallel","End":true,"Branches":[{"StartAt":"X","States":{"X":{"Type":"Pass","OutputPath":"$gone","End":true}}}]}}}`, "P/Branch 0/X", "OutputPath"},
		{"Assign reading another variable", `{"StartAt":"A","States":{"A":{"Type":"Pass","Assign":{"x.$":"$z"},"End":true}}}`, "A", "Assign"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.def), nil)
			var de *DefinitionError
			require.ErrorAs(t, err, &de)
			require.Len(t, de.Problems, 1, de.Problems)
			assert.Equal(t, tc.state, de.Problems[0].State)
			assert.Equal(t, tc.field, de.Problems[0].Field)
			assert.Contains(t, de.Problems[0].Message, "which no state assigns")
		})
	}
	valid := []string{
		`{"StartAt":"A","States":{"A":{"Type":"Pass","Assign":{"x":1},"Next":"B"},"B":{"Type":"Pass","Parameters":{"v.$":"States.Format('cost $x {}', $x)","c.$":"$$.Execution.Id","i.$":"$.in"},"End":true}}}`,
		`{"StartAt":"A","States":{"A":{"Type":"Pass","Result":{"v.$":"$never"},"End":true}}}`,
		`{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Catch":[{"ErrorEquals":["States.ALL"],"Assign":{"err.$":"$.Error"},"Next":"B"}],"End":true},"B":{"Type":"Pass","Parameters":{"e.$":"$err"},"End":true}}}`,
	}
	for i, d := range valid {
		_, err := Parse([]byte(d), nil)
		require.NoError(t, err, "definition %d", i)
	}
}

// *StateExited events carry the variables the state assigned, each as its
// JSON text, as stateExitedEventDetails.assignedVariables does on AWS.
func TestStateExitedAssignedVariables(t *testing.T) {
	def := `{"StartAt":"A","States":{"A":{"Type":"Pass","Assign":{"n":1,"who.$":"$.who"},"Next":"B"},"B":{"Type":"Pass","End":true}}}`
	r := run(t, def, `{"who":"ops"}`, nil)
	require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
	exitA, exitB := r.History[2], r.History[4]
	require.Equal(t, "PassStateExited", exitA.Type)
	assert.Equal(t, map[string]string{"n": "1", "who": `"ops"`}, exitA.Details.AssignedVariables)
	b, err := json.Marshal(exitA)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"assignedVariables":{"n":"1","who":"\"ops\""},"assignedVariablesDetails":{"truncated":false}`)
	require.Equal(t, "PassStateExited", exitB.Type)
	assert.Nil(t, exitB.Details.AssignedVariables)
}

// The variables one execution holds at once are limited to 10 MiB: the
// state whose Assign would pass it fails with States.Runtime; replacing a
// value counts only the difference.
func TestExecutionVariableTotal(t *testing.T) {
	big := string(repeatByte('a', MaxVariableBytes-100))
	var assigns []string
	for i := range 41 { // 41 × ~256 KiB > 10 MiB
		assigns = append(assigns, fmt.Sprintf(`"S%d":{"Type":"Pass","Assign":{"v%d.$":"$.s"},"Next":"S%d"}`, i, i, i+1))
	}
	def := `{"StartAt":"S0","States":{` + strings.Join(assigns, ",") + `,"S41":{"Type":"Succeed"}}}`
	r := run(t, def, `{"s":"`+big+`"}`, nil)
	require.Equal(t, StatusFailed, r.Exec.Status)
	assert.Equal(t, ErrRuntime, r.Exec.Error)
	assert.Contains(t, r.Exec.Cause, "The variables assigned in state 'S40' would bring the execution's variables to")

	// The same variable assigned 41 times stays well within the limit.
	for i := range 41 {
		assigns[i] = fmt.Sprintf(`"S%d":{"Type":"Pass","Assign":{"v.$":"$.s"},"Next":"S%d"}`, i, i+1)
	}
	def = `{"StartAt":"S0","States":{` + strings.Join(assigns, ",") + `,"S41":{"Type":"Succeed"}}}`
	r = run(t, def, `{"s":"`+big+`"}`, nil)
	require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
}
