package asl

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidationNamesStateAndField(t *testing.T) {
	tests := []struct {
		name  string
		def   string
		state string
		field string
		msg   string
	}{
		{"one name in two Parallel branches", `{"StartAt":"P","States":{"P":{"Type":"Parallel","End":true,"Branches":[{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}},{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}]}}}`, "P/Branch 1/A", "", `"A" is already used (in P/Branch 0)`},
		{"a branch state named like a top-level one", `{"StartAt":"P","States":{"P":{"Type":"Parallel","Next":"A","Branches":[{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}]},"A":{"Type":"Pass","End":true}}}`, "P/Branch 0/A", "", `"A" is already used (in the top level)`},
		{"unknown state type", `{"StartAt":"A","States":{"A":{"Type":"Magic","End":true}}}`, "A", "Type", "unknown state type"},
		{"missing type", `{"StartAt":"A","States":{"A":{"End":true}}}`, "A", "Type", "required"},
		{"Next to a missing state", `{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"B"}}}`, "A", "Next", `missing state "B"`},
		{"StartAt missing state", `{"StartAt":"Z","States":{"A":{"Type":"Pass","End":true}}}`, "", "StartAt", `missing state "Z"`},
		{"no terminal state", `{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"B"},"B":{"Type":"Pass","Next":"A"}}}`, "", "States", "no terminal state"},
		{"unreachable state", `{"StartAt":"A","States":{"A":{"Type":"Pass","End":true},"B":{"Type":"Pass","End":true}}}`, "B", "", "unreachable"},
		{"neither Next nor End", `{"StartAt":"A","States":{"A":{"Type":"Pass"}}}`, "A", "Next", "needs Next"},
		{"both Next and End", `{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"A","End":true}}}`, "A", "Next", "exactly one"},
		{"malformed JSONPath", `{"StartAt":"A","States":{"A":{"Type":"Pass","InputPath":"$.a[","End":true}}}`, "A", "InputPath", "not a valid JSONPath"},
		{"path without $", `{"StartAt":"A","States":{"A":{"Type":"Pass","OutputPath":"a.b","End":true}}}`, "A", "OutputPath", "must start with '$'"},
		{"ResultPath not a reference path", `{"StartAt":"A","States":{"A":{"Type":"Pass","ResultPath":"$.a[*]","End":true}}}`, "A", "ResultPath", "not a reference path"},
		{"Catch ResultPath not a reference path", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:1:function:f","Catch":[{"ErrorEquals":["States.ALL"],"ResultPath":"$..x","Next":"B"}],"End":true},"B":{"Type":"Pass","End":true}}}`, "A", "Catch[0].ResultPath", "not a reference path"},
		{"Parameters path", `{"StartAt":"A","States":{"A":{"Type":"Pass","Parameters":{"x.$":"nope"},"End":true}}}`, "A", "Parameters", "x.$"},
		{"Retry on Pass", `{"StartAt":"A","States":{"A":{"Type":"Pass","Retry":[{"ErrorEquals":["States.ALL"]}],"End":true}}}`, "A", "Retry", "not allowed in a Pass state"},
		{"Catch on Choice", `{"StartAt":"A","States":{"A":{"Type":"Choice","Choices":[{"Variable":"$.a","IsPresent":true,"Next":"B"}],"Catch":[]},"B":{"Type":"Succeed"}}}`, "A", "Catch", "not allowed in a Choice state"},
		{"States.ALL not alone", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Retry":[{"ErrorEquals":["States.ALL","X"]}],"End":true}}}`, "A", "Retry[0].ErrorEquals", "alone"},
		{"States.ALL not last", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Retry":[{"ErrorEquals":["States.ALL"]},{"ErrorEquals":["X"]}],"End":true}}}`, "A", "Retry[0].ErrorEquals", "last retrier"},
		{"unknown States. name", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Retry":[{"ErrorEquals":["States.Nope"]}],"End":true}}}`, "A", "Retry[0].ErrorEquals", "not a reserved error name"},
		{"BackoffRate below 1", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Retry":[{"ErrorEquals":["X"],"BackoffRate":0.5}],"End":true}}}`, "A", "Retry[0].BackoffRate", "greater than or equal to 1.0"},
		{"IntervalSeconds below 1", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Retry":[{"ErrorEquals":["X"],"IntervalSeconds":0}],"End":true}}}`, "A", "Retry[0].IntervalSeconds", "must be an integer from 1 to 99999999"},
		{"MaxAttempts negative", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Retry":[{"ErrorEquals":["X"],"MaxAttempts":-1}],"End":true}}}`, "A", "Retry[0].MaxAttempts", "must be an integer from 0 to 99999999"},
		{"MaxDelaySeconds too large", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Retry":[{"ErrorEquals":["X"],"MaxDelaySeconds":31622402}],"End":true}}}`, "A", "Retry[0].MaxDelaySeconds", "must be an integer from 1 to 31622401"},
		{"Retry not an array", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Retry":{"ErrorEquals":["X"]},"End":true}}}`, "A", "Retry", "must be an array of retriers"},
		{"Catch element not an object", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Catch":["X"],"End":true}}}`, "A", "Catch[0]", "must be an object"},
		{"States.ALL catcher not last", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Catch":[{"ErrorEquals":["States.ALL"],"Next":"B"},{"ErrorEquals":["X"],"Next":"B"}],"End":true},"B":{"Type":"Pass","End":true}}}`, "A", "Catch[0].ErrorEquals", "last catcher"},
		{"JitterStrategy", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Retry":[{"ErrorEquals":["X"],"JitterStrategy":"SOME"}],"End":true}}}`, "A", "Retry[0].JitterStrategy", "FULL"},
		{"Catch Next missing", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Catch":[{"ErrorEquals":["X"],"Next":"Nope"}],"End":true}}}`, "A", "Catch[0].Next", `missing state "Nope"`},
		{"JSONPath state in a JSONata machine", `{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Pass","QueryLanguage":"JSONPath","End":true}}}`, "A", "QueryLanguage", "cannot use JSONPath when the state machine's QueryLanguage is JSONata"},
		{"unknown QueryLanguage", `{"StartAt":"A","States":{"A":{"Type":"Pass","QueryLanguage":"XPath","End":true}}}`, "A", "QueryLanguage", `must be "JSONPath" or "JSONata"`},
		{"Parameters in a JSONata state", `{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Parameters":{"a":1},"End":true}}}`, "A", "Parameters", "JSONPath field, not allowed in a JSONata state"},
		{"ResultPath in a JSONata state", `{"StartAt":"A","States":{"A":{"Type":"Pass","QueryLanguage":"JSONata","ResultPath":"$.x","End":true}}}`, "A", "ResultPath", "JSONPath field, not allowed in a JSONata state"},
		{"InputPath in a JSONata state", `{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Wait","Seconds":1,"InputPath":"$.x","End":true}}}`, "A", "InputPath", "JSONPath field"},
		{"OutputPath in a JSONata state", `{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Succeed","OutputPath":"$.x"}}}`, "A", "OutputPath", "JSONPath field"},
		{"ResultSelector in a JSONata state", `{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","ResultSelector":{"a":1},"End":true}}}`, "A", "ResultSelector", "JSONPath field"},
		{"ItemsPath in a JSONata state", `{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Map","ItemsPath":"$.x","ItemProcessor":{"StartAt":"B","States":{"B":{"Type":"Succeed"}}},"End":true}}}`, "A", "ItemsPath", "JSONPath field"},
		{"Catch ResultPath in a JSONata state", `{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Catch":[{"ErrorEquals":["States.ALL"],"ResultPath":"$.e","Next":"B"}],"End":true},"B":{"Type":"Succeed"}}}`, "A", "Catch[0].ResultPath", "JSONPath field"},
		{"Arguments in a JSONPath state", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","Arguments":{"a":1},"End":true}}}`, "A", "Arguments", "JSONata field, allowed only when"},
		{"Output in a JSONPath state", `{"StartAt":"A","States":{"A":{"Type":"Pass","Output":{"a":1},"End":true}}}`, "A", "Output", "JSONata field, allowed only when"},
		{"JSONata Choice rule without Condition", `{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Choice","Choices":[{"Next":"B"}]},"B":{"Type":"Succeed"}}}`, "A", "Choices[0].Condition", "required"},
		{"JSONPath Choice rule in a JSONata state", `{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Choice","Choices":[{"Variable":"$.a","IsPresent":true,"Condition":"{% true %}","Next":"B"}]},"B":{"Type":"Succeed"}}}`, "A", "Choices[0].Variable", "not a field of a JSONata Choice rule"},
		{"invalid JSONata expression", `{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Pass","Output":{"a":"{% $states.input.( %}"},"End":true}}}`, "A", "Output/a", "is invalid"},
		{"JSONata Assign with .$", `{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Pass","Assign":{"x.$":"$.a"},"End":true}}}`, "A", "Assign", "not a valid variable name"},
		{"JSONata Items not an array", `{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Map","Items":{"a":1},"ItemProcessor":{"StartAt":"B","States":{"B":{"Type":"Succeed"}}},"End":true}}}`, "A", "Items", "JSON array or a JSONata expression"},
		{"Assign not an object", `{"StartAt":"A","States":{"A":{"Type":"Pass","Assign":[1],"End":true}}}`, "A", "Assign", "must be an object"},
		{"Assign bad variable name", `{"StartAt":"A","States":{"A":{"Type":"Pass","Assign":{"1x":1},"End":true}}}`, "A", "Assign", "not a valid variable name"},
		{"Assign reserved name states", `{"StartAt":"A","States":{"A":{"Type":"Pass","Assign":{"states":1},"End":true}}}`, "A", "Assign", "not a valid variable name"},
		{"ResultPath to a variable", `{"StartAt":"A","States":{"A":{"Type":"Pass","ResultPath":"$x","End":true}}}`, "A", "ResultPath", "cannot address a variable"},
		{"Assign on Succeed", `{"StartAt":"A","States":{"A":{"Type":"Succeed","Assign":{"x":1}}}}`, "A", "Assign", "not allowed"},
		{"Task without Resource", `{"StartAt":"A","States":{"A":{"Type":"Task","End":true}}}`, "A", "Resource", "required"},
		{"heartbeat not below timeout", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","TimeoutSeconds":10,"HeartbeatSeconds":10,"End":true}}}`, "A", "HeartbeatSeconds", "smaller than TimeoutSeconds"},
		{"Timeout both forms", `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"r","TimeoutSeconds":10,"TimeoutSecondsPath":"$.t","End":true}}}`, "A", "TimeoutSeconds", "mutually exclusive"},
		{"Choice rule without Next", `{"StartAt":"A","States":{"A":{"Type":"Choice","Choices":[{"Variable":"$.a","IsPresent":true}],"Default":"B"},"B":{"Type":"Succeed"}}}`, "A", "Choices[0]", "Next is required"},
		{"Choice unknown operator", `{"StartAt":"A","States":{"A":{"Type":"Choice","Choices":[{"Variable":"$.a","StringLike":"x","Next":"B"}]},"B":{"Type":"Succeed"}}}`, "A", "Choices[0]", "unknown comparison operator"},
		{"Choice wrong operand type", `{"StartAt":"A","States":{"A":{"Type":"Choice","Choices":[{"Variable":"$.a","NumericEquals":"1","Next":"B"}]},"B":{"Type":"Succeed"}}}`, "A", "Choices[0]", "must be a number"},
		{"Choice bad timestamp", `{"StartAt":"A","States":{"A":{"Type":"Choice","Choices":[{"Variable":"$.a","TimestampEquals":"2016-12-05 21:29:29Z","Next":"B"}]},"B":{"Type":"Succeed"}}}`, "A", "Choices[0]", "ISO-8601"},
		{"Choice nested Next", `{"StartAt":"A","States":{"A":{"Type":"Choice","Choices":[{"Not":{"Variable":"$.a","IsPresent":true,"Next":"B"},"Next":"B"}]},"B":{"Type":"Succeed"}}}`, "A", "Choices[0].Not", "only allowed on a top-level rule"},
		{"Choice Default missing", `{"StartAt":"A","States":{"A":{"Type":"Choice","Choices":[{"Variable":"$.a","IsPresent":true,"Next":"B"}],"Default":"Z"},"B":{"Type":"Succeed"}}}`, "A", "Default", `missing state "Z"`},
		{"Choice with End", `{"StartAt":"A","States":{"A":{"Type":"Choice","End":true,"Choices":[{"Variable":"$.a","IsPresent":true,"Next":"B"}]},"B":{"Type":"Succeed"}}}`, "A", "End", "must not have End"},
		{"Wait two forms", `{"StartAt":"A","States":{"A":{"Type":"Wait","Seconds":1,"Timestamp":"2016-03-14T01:59:00Z","End":true}}}`, "A", "Seconds", "exactly one"},
		{"Wait invalid timestamp", `{"StartAt":"A","States":{"A":{"Type":"Wait","Timestamp":"2016-03-14T01:59:00","End":true}}}`, "A", "Timestamp", "ISO-8601"},
		{"Fail Error and ErrorPath", `{"StartAt":"A","States":{"A":{"Type":"Fail","Error":"x","ErrorPath":"$.e"}}}`, "A", "Error", "mutually exclusive"},
		{"Fail with Next", `{"StartAt":"A","States":{"A":{"Type":"Fail","Next":"A"}}}`, "A", "Next", "must not have Next"},
		{"Parallel branch problem", `{"StartAt":"P","States":{"P":{"Type":"Parallel","End":true,"Branches":[{"StartAt":"X","States":{"X":{"Type":"Pass","Next":"Y"}}}]}}}`, "P/Branch 0/X", "Next", `missing state "Y"`},
		{"Parallel branch cannot reach outside", `{"StartAt":"P","States":{"P":{"Type":"Parallel","Next":"Out","Branches":[{"StartAt":"X","States":{"X":{"Type":"Pass","Next":"Out"}}}]},"Out":{"Type":"Succeed"}}}`, "P/Branch 0/X", "Next", `missing state "Out"`},
		{"Map without processor", `{"StartAt":"M","States":{"M":{"Type":"Map","End":true}}}`, "M", "ItemProcessor", "required"},
		{"unknown Map mode", `{"StartAt":"M","States":{"M":{"Type":"Map","ItemProcessor":{"ProcessorConfig":{"Mode":"REMOTE"},"StartAt":"X","States":{"X":{"Type":"Pass","End":true}}},"End":true}}}`, "M", "ItemProcessor.ProcessorConfig.Mode", "INLINE"},
		{"ItemReader on an inline Map", `{"StartAt":"M","States":{"M":{"Type":"Map","ItemReader":{},"ItemProcessor":{"StartAt":"X","States":{"X":{"Type":"Pass","End":true}}},"End":true}}}`, "M", "ItemReader", "only in a distributed Map"},
		{"Map processor problem", `{"StartAt":"M","States":{"M":{"Type":"Map","ItemProcessor":{"StartAt":"X","States":{"X":{"Type":"Bogus","End":true}}},"End":true}}}`, "M/ItemProcessor/X", "Type", "unknown state type"},
		{"unknown field", `{"StartAt":"A","States":{"A":{"Type":"Pass","Color":"red","End":true}}}`, "A", "Color", "not allowed"},
		{"unknown top-level field", `{"StartAt":"A","Bogus":1,"States":{"A":{"Type":"Pass","End":true}}}`, "", "Bogus", "unknown field"},
		{"state name too long", `{"StartAt":"` + longName + `","States":{"` + longName + `":{"Type":"Pass","End":true}}}`, longName, "", "at most 80 characters"},
		{"bad intrinsic", `{"StartAt":"A","States":{"A":{"Type":"Pass","Parameters":{"x.$":"States.Nope(1)"},"End":true}}}`, "A", "Parameters", "x.$"},
		{"TimeoutSeconds top level", `{"TimeoutSeconds":0,"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`, "", "TimeoutSeconds", "positive integer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.def), nil)
			var de *DefinitionError
			require.ErrorAs(t, err, &de)
			found := false
			for _, p := range de.Problems {
				if p.State == tc.state && p.Field == tc.field && strings.Contains(p.Message, tc.msg) {
					found = true
				}
			}
			assert.True(t, found, "want state %q field %q message containing %q; got %v", tc.state, tc.field, tc.msg, de.Problems)
		})
	}
}

const longName = "A123456789B123456789C123456789D123456789E123456789F123456789G123456789H123456789I"

func TestValidationReportsEveryProblem(t *testing.T) {
	_, err := Parse([]byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"B","InputPath":"x"},"C":{"Type":"Nope"}}}`), nil)
	var de *DefinitionError
	require.ErrorAs(t, err, &de)
	assert.GreaterOrEqual(t, len(de.Problems), 3)
	assert.Contains(t, err.Error(), `state "A": field "Next"`)
}

func TestNotJSON(t *testing.T) {
	_, err := Parse([]byte(`{`), nil)
	var de *DefinitionError
	require.ErrorAs(t, err, &de)
	assert.Contains(t, de.Problems[0].Message, "not valid JSON")
}

func TestSubstitutions(t *testing.T) {
	def := `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"${WorkerArn}","Parameters":{"x":"${Unknown}","n":${Count}},"End":true}}}`
	sm, err := Parse([]byte(def), map[string]string{"WorkerArn": "arn:aws:lambda:us-east-1:123456789012:function:W", "Count": "3"})
	require.NoError(t, err)
	assert.Contains(t, sm.Definition(), `"Resource":"arn:aws:lambda:us-east-1:123456789012:function:W"`)
	assert.Contains(t, sm.Definition(), `"x":"${Unknown}"`, "a placeholder without a value is left as is")
	assert.Contains(t, sm.Definition(), `"n":3`)
	assert.Equal(t, []string{"A"}, sm.StateNames())
}

func TestValidDefinitionsParse(t *testing.T) {
	defs := []string{
		`{"Comment":"c","Version":"1.0","TimeoutSeconds":60,"QueryLanguage":"JSONPath","StartAt":"A","States":{"A":{"Type":"Pass","Comment":"x","End":true}}}`,
		`{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"f","Payload.$":"$"},"TimeoutSecondsPath":"$.t","HeartbeatSecondsPath":"$.h","ResultSelector":{"p.$":"$.Payload"},"Retry":[{"ErrorEquals":["Lambda.ServiceException"],"IntervalSeconds":2,"MaxAttempts":6,"BackoffRate":2,"MaxDelaySeconds":30,"JitterStrategy":"FULL"}],"Catch":[{"ErrorEquals":["States.TaskFailed"],"ResultPath":"$.e","Next":"B"}],"End":true},"B":{"Type":"Fail","ErrorPath":"$.e.Error","CausePath":"States.Format('x {}', $.e.Cause)"}}}`,
		`{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items","ItemSelector":{"i.$":"$$.Map.Item.Index"},"MaxConcurrencyPath":"$.c","ToleratedFailurePercentage":10,"ItemProcessor":{"ProcessorConfig":{"Mode":"INLINE"},"StartAt":"X","States":{"X":{"Type":"Succeed"}}},"End":true}}}`,
	}
	for _, d := range defs {
		_, err := Parse([]byte(d), nil)
		assert.NoError(t, err)
	}
}
