package asl

import (
	"testing"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The cases below are the developer guide's documented input/output
// processing examples, with the Lambda function of "Creating a Lambda State
// Machine" (it answers "Hello, <who>!") played by a Go handler.

func helloHandler() lambda.Handler {
	return lambda.NewHandler(func(in map[string]any) (string, error) {
		who, _ := in["who"].(string)
		return "Hello, " + who + "!", nil
	})
}

func TestDocumentedInputOutputProcessing(t *testing.T) {
	hello := map[string]TaskHandler{"HelloFunction": helloHandler()}
	const helloARN = "arn:aws:lambda:us-east-1:123456789012:function:HelloFunction"
	task := func(fields string) string {
		return `{"StartAt":"HelloWorld","States":{"HelloWorld":{"Type":"Task","Resource":"` + helloARN + `",` + fields + `"End":true}}}`
	}
	tests := []struct {
		name   string
		def    string
		input  string
		output string
	}{
		{
			name:   "InputPath, ResultPath and OutputPath example",
			def:    task(`"InputPath":"$.lambda","ResultPath":"$.data.lambdaresult","OutputPath":"$.data",`),
			input:  `{"comment":"An input comment.","data":{"val1":23,"val2":17},"extra":"foo","lambda":{"who":"AWS Step Functions"}}`,
			output: `{"val1":23,"val2":17,"lambdaresult":"Hello, AWS Step Functions!"}`,
		},
		{
			name:   "ResultPath default replaces the input",
			def:    task(``),
			input:  `{"comment":"This is a test of the input and output of a Task state.","details":"Default example","who":"AWS Step Functions"}`,
			output: `"Hello, AWS Step Functions!"`,
		},
		{
			name:   "ResultPath includes the result with the input",
			def:    task(`"ResultPath":"$.taskresult",`),
			input:  `{"comment":"This is a test of the input and output of a Task state.","details":"Default example","who":"AWS Step Functions"}`,
			output: `{"comment":"This is a test of the input and output of a Task state.","details":"Default example","who":"AWS Step Functions","taskresult":"Hello, AWS Step Functions!"}`,
		},
		{
			name:   "ResultPath inserts into a child node",
			def:    task(`"ResultPath":"$.strings.lambdaresult",`),
			input:  `{"comment":"An input comment.","strings":{"string1":"foo","string2":"bar","string3":"baz"},"who":"AWS Step Functions"}`,
			output: `{"comment":"An input comment.","strings":{"string1":"foo","string2":"bar","string3":"baz","lambdaresult":"Hello, AWS Step Functions!"},"who":"AWS Step Functions"}`,
		},
		{
			name:   "ResultPath updates an existing node",
			def:    task(`"ResultPath":"$.comment",`),
			input:  `{"comment":"This is a test of the input and output of a Task state.","details":"Default example","who":"AWS Step Functions"}`,
			output: `{"comment":"Hello, AWS Step Functions!","details":"Default example","who":"AWS Step Functions"}`,
		},
		{
			name:   "ResultPath null discards the result and keeps the input",
			def:    task(`"ResultPath":null,`),
			input:  `{"comment":"This is a test","details":"Default example","who":"Step Functions"}`,
			output: `{"comment":"This is a test","details":"Default example","who":"Step Functions"}`,
		},
		{
			name:   "ResultPath creates missing intermediate objects",
			def:    task(`"ResultPath":"$.a.b.c",`),
			input:  `{"who":"x"}`,
			output: `{"who":"x","a":{"b":{"c":"Hello, x!"}}}`,
		},
		{
			name:   "InputPath null gives an empty object, OutputPath null too",
			def:    `{"StartAt":"P","States":{"P":{"Type":"Pass","InputPath":null,"ResultPath":"$.seen","Next":"Q"},"Q":{"Type":"Pass","OutputPath":null,"End":true}}}`,
			input:  `{"x":1}`,
			output: `{}`,
		},
		{
			name:   "a path can select a slice",
			def:    `{"StartAt":"P","States":{"P":{"Type":"Pass","InputPath":"$.a[0:2]","End":true}}}`,
			input:  `{"a":[1,2,3,4]}`,
			output: `[1,2]`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.def, tc.input, hello)
			require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
			assert.JSONEq(t, tc.output, r.Exec.Output)
		})
	}
}

func TestDocumentedParameters(t *testing.T) {
	def := `{"StartAt":"P","States":{"P":{"Type":"Pass","Parameters":{
	  "comment":"Selecting what I care about.",
	  "MyDetails":{"size.$":"$.product.details.size","exists.$":"$.product.availability","StaticValue":"foo"}},"End":true}}}`
	input := `{"comment":"Example for Parameters.","product":{"details":{"color":"blue","size":"small","material":"cotton"},"availability":"in stock","sku":"2317","cost":"$23"}}`
	r := run(t, def, input, nil)
	require.Equal(t, StatusSucceeded, r.Exec.Status)
	assert.JSONEq(t, `{"comment":"Selecting what I care about.","MyDetails":{"size":"small","exists":"in stock","StaticValue":"foo"}}`, r.Exec.Output)
}

func TestDocumentedInputPath(t *testing.T) {
	def := `{"StartAt":"P","States":{"P":{"Type":"Pass","InputPath":"$.dataset2","End":true}}}`
	r := run(t, def, `{"comment":"Example for InputPath.","dataset1":{"val1":1,"val2":2,"val3":3},"dataset2":{"val1":"a","val2":"b","val3":"c"}}`, nil)
	assert.JSONEq(t, `{"val1":"a","val2":"b","val3":"c"}`, r.Exec.Output)
}

func TestDocumentedResultSelector(t *testing.T) {
	// The guide's ResultSelector example: a task result with an output
	// object; ResultSelector keeps ClusterId and resourceType, ResultPath
	// places them under EMROutput.
	emr := lambda.NewHandler(func() (map[string]any, error) {
		return map[string]any{
			"resourceType": "elasticmapreduce",
			"resource":     "createCluster.sync",
			"output": map[string]any{
				"SdkHttpMetadata":     map[string]any{"HttpStatusCode": 200},
				"SdkResponseMetadata": map[string]any{"RequestId": "1234-5678-9012"},
				"ClusterId":           "AKIAIOSFODNN7EXAMPLE",
			},
		}, nil
	})
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:Emr",
	  "ResultSelector":{"ClusterId.$":"$.output.ClusterId","ResourceType.$":"$.resourceType"},
	  "ResultPath":"$.EMROutput","End":true}}}`
	r := run(t, def, `{"OtherDataFromInput":{}}`, map[string]TaskHandler{"Emr": emr})
	require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
	assert.JSONEq(t, `{"OtherDataFromInput":{},"EMROutput":{"ClusterId":"AKIAIOSFODNN7EXAMPLE","ResourceType":"elasticmapreduce"}}`, r.Exec.Output)
}

func TestResultSelectorFlattensParallelOutput(t *testing.T) {
	def := `{"StartAt":"P","States":{"P":{"Type":"Parallel","ResultSelector":{"flat.$":"$[*][*]"},"End":true,"Branches":[
	  {"StartAt":"A","States":{"A":{"Type":"Pass","Result":[1,2],"End":true}}},
	  {"StartAt":"B","States":{"B":{"Type":"Pass","Result":[3],"End":true}}}]}}}`
	r := run(t, def, `{}`, nil)
	assert.JSONEq(t, `{"flat":[1,2,3]}`, r.Exec.Output)
}

func TestDataFlowOrder(t *testing.T) {
	// InputPath → Parameters → task → ResultSelector → ResultPath (into the
	// raw input) → OutputPath.
	var got map[string]any
	h := lambda.NewHandler(func(in map[string]any) (map[string]any, error) {
		got = in
		return map[string]any{"sum": in["a"].(float64) + in["b"].(float64), "noise": true}, nil
	})
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:Add",
	  "InputPath":"$.numbers","Parameters":{"a.$":"$.x","b.$":"$.y","tag":"static"},
	  "ResultSelector":{"total.$":"$.sum"},"ResultPath":"$.result","OutputPath":"$.result","End":true}}}`
	r := run(t, def, `{"numbers":{"x":2,"y":3},"other":true}`, map[string]TaskHandler{"Add": h})
	require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
	assert.Equal(t, map[string]any{"a": 2.0, "b": 3.0, "tag": "static"}, got)
	assert.JSONEq(t, `{"total":5}`, r.Exec.Output)
}

func TestPassResultIsLiteral(t *testing.T) {
	def := `{"StartAt":"P","States":{"P":{"Type":"Pass","Result":{"TestResult.$":"ConditionTrue","n":1},"ResultPath":"$.r","End":true}}}`
	r := run(t, def, `{"a":1}`, nil)
	assert.JSONEq(t, `{"a":1,"r":{"TestResult.$":"ConditionTrue","n":1}}`, r.Exec.Output)
}

func TestPathFailures(t *testing.T) {
	tests := []struct {
		name  string
		state string
		input string
		err   string
		cause string
	}{
		{"InputPath matches nothing", `"Type":"Pass","InputPath":"$.X","End":true`, `{"a":1}`, ErrRuntime,
			"Invalid path '$.X' : No results for path: $['X']"},
		{"OutputPath matches nothing", `"Type":"Pass","OutputPath":"$.X","End":true`, `{"a":1}`, ErrRuntime,
			"Invalid path '$.X' : No results for path: $['X']"},
		{"Parameters path matches nothing", `"Type":"Pass","Parameters":{"value.$":"$.X"},"End":true`, `{"a":1}`, ErrRuntime,
			`The JSONPath '$.X' specified for the field 'value.$' could not be found in the input '{"a":1}'`},
		{"ResultPath through a string", `"Type":"Pass","Result":1,"ResultPath":"$.a.b","End":true`, `{"a":"str"}`, ErrResultPathMatchFailure,
			`Unable to apply ResultPath '$.a.b' to input '{"a":"str"}'`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, `{"StartAt":"S","States":{"S":{`+tc.state+`}}}`, tc.input, nil)
			assert.Equal(t, StatusFailed, r.Exec.Status)
			assert.Equal(t, tc.err, r.Exec.Error)
			want := tc.cause
			if tc.err == ErrRuntime {
				// AWS prefixes every States.Runtime cause with the state and
				// the id of its StateEntered event.
				want = "An error occurred while executing the state 'S' (entered at the event id #2). " + want
			}
			assert.Equal(t, want, r.Exec.Cause)
			assert.Equal(t, []string{"ExecutionStarted", "PassStateEntered", "ExecutionFailed"}, r.types())
		})
	}
}

func TestJSONPathSemantics(t *testing.T) {
	input := `{"detail":{"dest-code":9511,"shipped":[{"prod":"R31","q":1},{"prod":"S39","q":40}]},"a b":{"c":1}}`
	tests := []struct {
		path string
		want string
	}{
		{"$.detail.dest-code", `9511`},
		{"$.detail.shipped[1].prod", `"S39"`},
		{"$.detail.shipped[-1].q", `40`},
		{"$['a b'].c", `1`},
		{"$.detail.shipped[*].prod", `["R31","S39"]`},
		{"$..prod", `["R31","S39"]`},
		{"$.detail.shipped[?(@.q > 10)].prod", `["S39"]`},
		{"$.detail.missing[*]", `[]`},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			r := run(t, `{"StartAt":"P","States":{"P":{"Type":"Pass","Parameters":{"v.$":"`+tc.path+`"},"End":true}}}`, input, nil)
			require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
			assert.JSONEq(t, `{"v":`+tc.want+`}`, r.Exec.Output)
		})
	}
}

func TestContextObject(t *testing.T) {
	def := `{"StartAt":"P","States":{"P":{"Type":"Pass","Parameters":{"ctx.$":"$$","name.$":"$$.Execution.Name","state.$":"$$.State.Name"},"End":true}}}`
	r := run(t, def, `{"k":"v"}`, nil)
	require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
	want := `{"name":"run-1","state":"P","ctx":{
	  "Execution":{"Id":"arn:aws:states:us-east-1:123456789012:execution:test:run-1","Input":{"k":"v"},"Name":"run-1",
	    "RoleArn":"arn:aws:iam::123456789012:role/maasflow-local","StartTime":"2024-01-02T03:04:05.000Z","RedriveCount":0},
	  "StateMachine":{"Id":"arn:aws:states:us-east-1:123456789012:stateMachine:test","Name":"test"},
	  "State":{"Name":"P","EnteredTime":"2024-01-02T03:04:05.000Z"}}}`
	assert.JSONEq(t, want, r.Exec.Output)
}

func TestTaskContextHasRetryCount(t *testing.T) {
	var counts []any
	h := lambda.NewHandler(func(in map[string]any) (any, error) {
		counts = append(counts, in["retry"])
		if len(counts) < 3 {
			return nil, &DeployFailedError{}
		}
		return "ok", nil
	})
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"` + fnARN + `","Parameters":{"retry.$":"$$.State.RetryCount"},
	  "Retry":[{"ErrorEquals":["States.ALL"]}],"End":true}}}`
	r := run(t, def, `{}`, map[string]TaskHandler{"Worker": h})
	require.Equal(t, StatusSucceeded, r.Exec.Status)
	assert.Equal(t, []any{0.0, 1.0, 2.0}, counts)
}
