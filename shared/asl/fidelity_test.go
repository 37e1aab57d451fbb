package asl

import (
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Error and Cause texts as AWS recorded them in executions made public
// (the Step Functions workshop's "Check Address" failure, published
// execution failures of a Choice and an OutputPath, and LocalStack's
// snapshots recorded against AWS for States.DataLimitExceeded). The state
// names and event ids reproduce the recorded executions.
func TestFailureTextsAsAWSRecordsThem(t *testing.T) {
	const fn = "arn:aws:lambda:us-east-1:123456789012:function:"
	// task runs a direct Lambda task first, so the state under test is
	// entered after the same number of events as in the recording.
	notFlagged := lambda.NewHandler(func(map[string]any) (map[string]any, error) { return map[string]any{"flagged": false}, nil })
	huge := lambda.NewHandler(func(map[string]any) (string, error) { return strings.Repeat("x", MaxPayloadBytes), nil })
	tasks := map[string]TaskHandler{"check-name": notFlagged, "big": huge}
	passes := `"P1":{"Type":"Pass","Next":"P2"},"P2":{"Type":"Pass","Next":"P3"},"P3":{"Type":"Pass","Next":"X"}`
	tests := []struct {
		name, def, input, err, cause string
	}{
		{"Parameters path not found (the workshop's Check Address)",
			`{"StartAt":"Check Name","States":{"Check Name":{"Type":"Task","Resource":"` + fn + `check-name","Next":"Check Address"},
			  "Check Address":{"Type":"Task","Resource":"` + fn + `check-name","Parameters":{"address.$":"$.application.address"},"End":true}}}`,
			`{}`, ErrRuntime,
			`An error occurred while executing the state 'Check Address' (entered at the event id #7). The JSONPath '$.application.address' specified for the field 'address.$' could not be found in the input '{"flagged":false}'`},
		{"Choice Variable not found",
			`{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"` + fn + `check-name","ResultPath":"$.t","Next":"P1"},` + strings.Replace(passes, `"Next":"X"`, `"Next":"AllDone"`, 1) + `,
			  "AllDone":{"Type":"Choice","Choices":[{"Variable":"$.jobs[0].done","BooleanEquals":true,"Next":"E"}],"Default":"E"},"E":{"Type":"Succeed"}}}`,
			`{"jobs":[{"input":"First job"}]}`, ErrRuntime,
			`An error occurred while executing the state 'AllDone' (entered at the event id #13). Invalid path '$.jobs[0].done': The choice state's condition path references an invalid value.`},
		{"OutputPath not found",
			`{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"` + fn + `check-name","Next":"P1"},` + strings.Replace(passes, `"Next":"X"`, `"Next":"AggregateIdentityResults"`, 1) + `,
			  "AggregateIdentityResults":{"Type":"Pass","OutputPath":"$.Payload","End":true}}}`,
			`{}`, ErrRuntime,
			`An error occurred while executing the state 'AggregateIdentityResults' (entered at the event id #13). Invalid path '$.Payload' : No results for path: $['Payload']`},
		{"oversized lambda:invoke result",
			`{"StartAt":"InvokeLambda","States":{"InvokeLambda":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"big","Payload":null},"End":true}}}`,
			`{}`, ErrDataLimitExceeded,
			`The state/task 'lambda' returned a result with a size exceeding the maximum number of bytes service limit.`},
		{"oversized direct Lambda result",
			`{"StartAt":"InvokeLambda","States":{"InvokeLambda":{"Type":"Task","Resource":"` + fn + `big","End":true}}}`,
			`{}`, ErrDataLimitExceeded,
			`The state/task '` + fn + `big' returned a result with a size exceeding the maximum number of bytes service limit.`},
		{"oversized Pass output",
			`{"StartAt":"State_1","States":{"State_1":{"Type":"Pass","Result":"` + strings.Repeat("x", MaxPayloadBytes) + `","End":true}}}`,
			`{}`, ErrDataLimitExceeded,
			`The state/task 'State_1' returned a result with a size exceeding the maximum number of bytes service limit.`},
		{"MaxConcurrencyPath not a number (LocalStack's snapshot against AWS)",
			mapWith(`"MaxConcurrencyPath":"$.MaxConcurrencyValue"`), `{"Values":[1],"MaxConcurrencyValue":"NoNumber"}`, ErrRuntime,
			`An error occurred while executing the state 'MapState' (entered at the event id #2). The MaxConcurrencyPath field refers to value "NoNumber" which is not a valid integer: $.MaxConcurrencyValue`},
		{"MaxConcurrencyPath an object",
			mapWith(`"MaxConcurrencyPath":"$.MaxConcurrencyValue"`), `{"Values":[1],"MaxConcurrencyValue":{}}`, ErrRuntime,
			`An error occurred while executing the state 'MapState' (entered at the event id #2). The MaxConcurrencyPath field refers to value "{}" which is not a valid integer: $.MaxConcurrencyValue`},
		{"ToleratedFailureCountPath not a number",
			mapWith(`"ToleratedFailureCountPath":"$.ToleratedFailureCount"`), `{"Values":[1],"ToleratedFailureCount":"NoNumber"}`, ErrRuntime,
			`An error occurred while executing the state 'MapState' (entered at the event id #2). The ToleratedFailureCountPath field refers to value "NoNumber" which is not a valid integer: $.ToleratedFailureCount`},
		{"ToleratedFailurePercentagePath not a number",
			mapWith(`"ToleratedFailurePercentagePath":"$.ToleratedFailurePercentage"`), `{"Values":[1],"ToleratedFailurePercentage":{}}`, ErrRuntime,
			`An error occurred while executing the state 'MapState' (entered at the event id #2). The ToleratedFailurePercentagePath field refers to value "{}" which is not a valid float: $.ToleratedFailurePercentage`},
		{"ToleratedFailureCountPath negative",
			mapWith(`"ToleratedFailureCountPath":"$.ToleratedFailureCount"`), `{"Values":[1],"ToleratedFailureCount":-1}`, ErrRuntime,
			`An error occurred while executing the state 'MapState' (entered at the event id #2). ToleratedFailureCount cannot be negative.`},
		{"ToleratedFailurePercentagePath above 100",
			mapWith(`"ToleratedFailurePercentagePath":"$.ToleratedFailurePercentage"`), `{"Values":[1],"ToleratedFailurePercentage":101}`, ErrRuntime,
			`An error occurred while executing the state 'MapState' (entered at the event id #2). ToleratedFailurePercentage must be between 0 and 100.`},
		{"tolerated failure threshold exceeded",
			`{"StartAt":"MapState","States":{"MapState":{"Type":"Map","ItemsPath":"$.Values","ToleratedFailureCount":0,
			  "ItemProcessor":{"StartAt":"F","States":{"F":{"Type":"Fail","Error":"E"}}},"End":true}}}`,
			`{"Values":[1]}`, ErrExceedToleratedFailureThreshold,
			`The specified tolerated failure threshold was exceeded`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.def, tc.input, tasks)
			require.Equal(t, StatusFailed, r.Exec.Status)
			assert.Equal(t, tc.err, r.Exec.Error)
			assert.Equal(t, tc.cause, r.Exec.Cause)
		})
	}
}

// A States.Runtime failure inside a Map iteration names the inner state
// once: the Map passes the iteration's failure on unchanged.
func TestRuntimeCauseNamesTheInnerState(t *testing.T) {
	def := `{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items","ItemProcessor":{"StartAt":"In","States":{"In":{"Type":"Pass","InputPath":"$.nope","End":true}}},"End":true}}}`
	r := run(t, def, `{"items":[{}]}`, nil)
	require.Equal(t, StatusFailed, r.Exec.Status)
	assert.Equal(t, ErrRuntime, r.Exec.Error)
	assert.Equal(t, `An error occurred while executing the state 'In' (entered at the event id #5). Invalid path '$.nope' : No results for path: $['nope']`, r.Exec.Cause)
}

// mapWith is a Map state named as in LocalStack's recordings, with extra
// fields.
func mapWith(fields string) string {
	return `{"StartAt":"MapState","States":{"MapState":{"Type":"Map","ItemsPath":"$.Values",` + fields + `,
	  "ItemProcessor":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`
}
