package asl

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aws/aws-lambda-go/lambda"
)

const echoARN = "arn:aws:lambda:us-east-1:123456789012:function:Echo"

func echoTasks() map[string]TaskHandler {
	return map[string]TaskHandler{"Echo": lambda.NewHandler(func(in any) (any, error) { return in, nil })}
}

// JSONata states as the developer guide's "Transforming data with JSONata
// in Step Functions" and "Passing data between states with variables"
// describe them, with their documented examples where the guide gives an
// input and an output.
func TestJSONataStates(t *testing.T) {
	tests := []struct {
		name, def, input, output string
	}{
		{
			// The guide's conversion example: given the input
			// {"title":"Doctor"} and customerName assigned "María", the
			// JSONata Arguments produce the same JSON as the JSONPath
			// Parameters; a string without {% %} is not evaluated.
			name: "Arguments: the guide's JSONPath-to-JSONata conversion",
			def: `{"QueryLanguage":"JSONata","StartAt":"Init","States":{
			  "Init":{"Type":"Pass","Assign":{"customerName":"María"},"Next":"Call"},
			  "Call":{"Type":"Task","Resource":"` + echoARN + `","Arguments":{
			    "static":"Hello","title":"{% $states.input.title %}","name":"{% $customerName %}","not-evaluated":"$customerName"},"End":true}}}`,
			input:  `{"title":"Doctor"}`,
			output: `{"static":"Hello","title":"Doctor","name":"María","not-evaluated":"$customerName"}`,
		},
		{
			name: "Output defaults to the input in a Pass state and to $states.result in a Task state",
			def: `{"QueryLanguage":"JSONata","StartAt":"P","States":{
			  "P":{"Type":"Pass","Next":"T"},
			  "T":{"Type":"Task","Resource":"` + echoARN + `","Arguments":{"echoed":"{% $states.input.a %}"},"End":true}}}`,
			input:  `{"a":1}`,
			output: `{"echoed":1}`,
		},
		{
			name: "Output reads $states.input and $states.result",
			def: `{"QueryLanguage":"JSONata","StartAt":"T","States":{
			  "T":{"Type":"Task","Resource":"` + echoARN + `","Arguments":{"n":"{% $states.input.n * 2 %}"},
			    "Output":{"in":"{% $states.input.n %}","out":"{% $states.result.n %}"},"End":true}}}`,
			input:  `{"n":21}`,
			output: `{"in":21,"out":42}`,
		},
		{
			name: "Output may be a whole expression",
			def: `{"QueryLanguage":"JSONata","StartAt":"P","States":{
			  "P":{"Type":"Pass","Output":"{% $sum($states.input.items.price) %}","End":true}}}`,
			input:  `{"items":[{"price":2},{"price":3.5}]}`,
			output: `5.5`,
		},
		{
			name: "Assign sees the result; every expression sees the old values (swap); Output sees the old values",
			def: `{"QueryLanguage":"JSONata","StartAt":"Init","States":{
			  "Init":{"Type":"Pass","Assign":{"x":1,"y":2},"Next":"Swap"},
			  "Swap":{"Type":"Task","Resource":"` + echoARN + `","Arguments":{"r":7},
			    "Assign":{"x":"{% $y %}","y":"{% $x %}","r":"{% $states.result.r %}"},"Output":{"xBefore":"{% $x %}"},"Next":"Show"},
			  "Show":{"Type":"Pass","Output":{"x":"{% $x %}","y":"{% $y %}","r":"{% $r %}","in":"{% $states.input %}"},"End":true}}}`,
			input:  `{}`,
			output: `{"x":2,"y":1,"r":7,"in":{"xBefore":1}}`,
		},
		{
			name: "Choice: the first true Condition decides, its Output and Assign apply (Output sees the variables from before)",
			def: `{"QueryLanguage":"JSONata","StartAt":"C","States":{
			  "C":{"Type":"Choice","Choices":[
			    {"Condition":"{% $states.input.type = 'Private' %}","Next":"Done","Output":{"kind":"private"}},
			    {"Condition":"{% $states.input.value > 20 and $states.input.value < 30 %}","Next":"Done","Assign":{"band":"20s"},"Output":{"value":"{% $states.input.value %}"}}],
			    "Default":"Other"},
			  "Done":{"Type":"Pass","Output":{"seen":"{% $states.input %}","band":"{% $exists($band) ? $band : 'none' %}"},"End":true},
			  "Other":{"Type":"Fail","Error":"Other"}}}`,
			input:  `{"type":"Public","value":25}`,
			output: `{"seen":{"value":25},"band":"20s"}`,
		},
		{
			name: "Choice: Default keeps the input and applies the state's Assign",
			def: `{"QueryLanguage":"JSONata","StartAt":"C","States":{
			  "C":{"Type":"Choice","Choices":[{"Condition":"{% $states.input.n > 1 %}","Next":"A"}],"Default":"B","Assign":{"d":true}},
			  "A":{"Type":"Fail","Error":"A"},
			  "B":{"Type":"Pass","Output":{"in":"{% $states.input %}","d":"{% $d %}"},"End":true}}}`,
			input:  `{"n":0}`,
			output: `{"in":{"n":0},"d":true}`,
		},
		{
			name: "Map: Items and ItemSelector with $states.context.Map.Item",
			def: `{"QueryLanguage":"JSONata","StartAt":"M","States":{
			  "M":{"Type":"Map","Items":"{% $states.input.orders %}",
			    "ItemSelector":{"index":"{% $states.context.Map.Item.Index %}","id":"{% $states.context.Map.Item.Value.id %}","customer":"{% $states.input.customer %}"},
			    "ItemProcessor":{"StartAt":"Echo","States":{"Echo":{"Type":"Task","Resource":"` + echoARN + `","End":true}}},
			    "Output":"{% $states.result %}","End":true}}}`,
			input:  `{"customer":"c1","orders":[{"id":"o1"},{"id":"o2"}]}`,
			output: `[{"index":0,"id":"o1","customer":"c1"},{"index":1,"id":"o2","customer":"c1"}]`,
		},
		{
			name: "Map: Items as a literal array; the input is every item's default",
			def: `{"QueryLanguage":"JSONata","StartAt":"M","States":{
			  "M":{"Type":"Map","Items":[1,"{% $states.input.two %}",3],
			    "ItemProcessor":{"StartAt":"P","States":{"P":{"Type":"Pass","Output":"{% $states.input * 10 %}","End":true}}},"End":true}}}`,
			input:  `{"two":2}`,
			output: `[10,20,30]`,
		},
		{
			name: "Parallel: Arguments feed every branch, Output shapes the result",
			def: `{"QueryLanguage":"JSONata","StartAt":"Par","States":{
			  "Par":{"Type":"Parallel","Arguments":{"n":"{% $states.input.n %}"},"Branches":[
			    {"StartAt":"A","States":{"A":{"Type":"Pass","Output":"{% $states.input.n + 1 %}","End":true}}},
			    {"StartAt":"B","States":{"B":{"Type":"Pass","Output":"{% $states.input.n + 2 %}","End":true}}}],
			    "Output":{"sum":"{% $sum($states.result) %}"},"End":true}}}`,
			input:  `{"n":10}`,
			output: `{"sum":23}`,
		},
		{
			name: "Catch: Output defaults to $states.errorOutput",
			def: `{"QueryLanguage":"JSONata","StartAt":"F","States":{
			  "F":{"Type":"Parallel","Branches":[{"StartAt":"X","States":{"X":{"Type":"Fail","Error":"Boom","Cause":"bad"}}}],
			    "Catch":[{"ErrorEquals":["Boom"],"Next":"Show"}],"End":true},
			  "Show":{"Type":"Pass","End":true}}}`,
			input:  `{"keep":1}`,
			output: `{"Error":"Boom","Cause":"bad"}`,
		},
		{
			name: "Catch: Output and Assign read $states.errorOutput and $states.input",
			def: `{"QueryLanguage":"JSONata","StartAt":"F","States":{
			  "F":{"Type":"Parallel","Branches":[{"StartAt":"X","States":{"X":{"Type":"Fail","Error":"Boom","Cause":"bad"}}}],
			    "Catch":[{"ErrorEquals":["States.ALL"],"Assign":{"err":"{% $states.errorOutput.Error %}"},
			      "Output":{"input":"{% $states.input %}","cause":"{% $states.errorOutput.Cause %}"},"Next":"Show"}],"End":true},
			  "Show":{"Type":"Pass","Output":{"in":"{% $states.input %}","err":"{% $err %}"},"End":true}}}`,
			input:  `{"keep":1}`,
			output: `{"in":{"input":{"keep":1},"cause":"bad"},"err":"Boom"}`,
		},
		{
			name: "Wait: Seconds and Timestamp as expressions",
			def: `{"QueryLanguage":"JSONata","StartAt":"W1","States":{
			  "W1":{"Type":"Wait","Seconds":"{% $states.input.delay %}","Next":"W2"},
			  "W2":{"Type":"Wait","Timestamp":"{% $states.input.until %}","Output":{"waited":true},"End":true}}}`,
			input:  `{"delay":30,"until":"2024-01-02T03:10:00Z"}`,
			output: `{"waited":true}`,
		},
		{
			name: "the context object: $states.context",
			def: `{"QueryLanguage":"JSONata","StartAt":"P","States":{
			  "P":{"Type":"Pass","Output":{"state":"{% $states.context.State.Name %}","name":"{% $states.context.Execution.Name %}","input":"{% $states.context.Execution.Input.a %}"},"End":true}}}`,
			input:  `{"a":5}`,
			output: `{"state":"P","name":"run-1","input":5}`,
		},
		{
			name: "Step Functions' functions: $partition, $range, $hash, $parse",
			def: `{"QueryLanguage":"JSONata","StartAt":"P","States":{
			  "P":{"Type":"Pass","Output":{
			    "partition":"{% $partition([1,2,3,4], 2) %}","range":"{% $range(0, 10, 2) %}",
			    "hash":"{% $hash('input data', 'SHA-1') %}","parse":"{% $parse($states.input.text) %}"},"End":true}}}`,
			input:  `{"text":"{\"foo\":\"bar\"}"}`,
			output: `{"partition":[[1,2],[3,4]],"range":[0,2,4,6,8,10],"hash":"aaff4a450a104cd177d28d18d74485e8cae074b7","parse":{"foo":"bar"}}`,
		},
		{
			// A JSONPath machine may hold JSONata states; variables cross
			// between them.
			name: "mixing: a JSONata state in a JSONPath machine reads a JSONPath state's variable",
			def: `{"StartAt":"A","States":{
			  "A":{"Type":"Pass","Parameters":{"v.$":"$.x"},"Assign":{"fromPath.$":"$.v"},"Next":"B"},
			  "B":{"Type":"Pass","QueryLanguage":"JSONata","Assign":{"fromJSONata":"{% $fromPath & '!' %}"},"Output":{"b":"{% $fromPath %}","in":"{% $states.input.v %}"},"Next":"C"},
			  "C":{"Type":"Pass","Parameters":{"c.$":"$.b","j.$":"$fromJSONata"},"End":true}}}`,
			input:  `{"x":"hi"}`,
			output: `{"c":"hi","j":"hi!"}`,
		},
		{
			name:   "Succeed: Output",
			def:    `{"QueryLanguage":"JSONata","StartAt":"S","States":{"S":{"Type":"Succeed","Output":{"done":"{% $states.input.id %}"}}}}`,
			input:  `{"id":"x1"}`,
			output: `{"done":"x1"}`,
		},
		{
			// jsonata 2.0's parent (%), focus (@) and index (#) operators,
			// which Step Functions' jsonata 2.0.6 has: accepted by
			// validation and evaluated.
			name: "the parent, focus and index operators",
			def: `{"QueryLanguage":"JSONata","StartAt":"P","States":{"P":{"Type":"Pass","Output":{
			  "parent":"{% $states.input.racks.nodes.{'rack': %.name, 'node': $} %}",
			  "index":"{% $states.input.racks#$i.{'i': $i, 'rack': name} %}",
			  "join":"{% $states.input.racks@$r.($states.input.owners)@$o[$o.rack = $r.name].{'rack': $r.name, 'owner': $o.team} %}"},"End":true}}}`,
			input: `{"racks":[{"name":"r1","nodes":["a","b"]},{"name":"r2","nodes":["c"]}],"owners":[{"rack":"r2","team":"gpu"}]}`,
			output: `{"parent":[{"rack":"r1","node":"a"},{"rack":"r1","node":"b"},{"rack":"r2","node":"c"}],
			  "index":[{"i":0,"rack":"r1"},{"i":1,"rack":"r2"}],"join":{"rack":"r2","owner":"gpu"}}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.def, tc.input, echoTasks())
			require.Equal(t, StatusSucceeded, r.Exec.Status, "%s: %s", r.Exec.Error, r.Exec.Cause)
			assert.JSONEq(t, tc.output, r.Exec.Output)
		})
	}
}

// Failures of JSONata states, worded as AWS words them.
func TestJSONataFailures(t *testing.T) {
	tests := []struct {
		name, def, input, errName, cause string
	}{
		{
			// Recorded from AWS: a state entered at event #6 whose
			// Arguments read a field the input does not have.
			name: "an undefined value in Arguments",
			def: `{"QueryLanguage":"JSONata","StartAt":"One","States":{
			  "One":{"Type":"Pass","Next":"Two"},
			  "Two":{"Type":"Pass","Next":"Run S3 Data Push"},
			  "Run S3 Data Push":{"Type":"Task","Resource":"` + echoARN + `","Arguments":{"Input":{"pushLocation":"{% $states.input.pushLocation %}"}},"End":true}}}`,
			input:   `{}`,
			errName: "States.QueryEvaluationError",
			cause:   `An error occurred while executing the state 'Run S3 Data Push' (entered at the event id #6). The JSONata expression '$states.input.pushLocation' specified for the field 'Arguments/Input/pushLocation' returned nothing (undefined).`,
		},
		{
			// Recorded from AWS: a variable no state assigns is not refused
			// when the state machine is created; the state fails.
			name: "a variable no state assigns",
			def: `{"QueryLanguage":"JSONata","StartAt":"State0","States":{
			  "State0":{"Type":"Pass","Assign":{"result":"{% $doesNotExist %}"},"End":true}}}`,
			input:   `{}`,
			errName: "States.QueryEvaluationError",
			cause:   `An error occurred while executing the state 'State0' (entered at the event id #2). The JSONata expression '$doesNotExist' specified for the field 'Assign/result' returned nothing (undefined).`,
		},
		{
			name: "an undefined Output",
			def: `{"QueryLanguage":"JSONata","StartAt":"P","States":{
			  "P":{"Type":"Pass","Output":"{% $states.input.absent %}","End":true}}}`,
			input:   `{}`,
			errName: "States.QueryEvaluationError",
			cause:   `An error occurred while executing the state 'P' (entered at the event id #2). The JSONata expression '$states.input.absent' specified for the field 'Output' returned nothing (undefined).`,
		},
		{
			name: "a Condition that is not a boolean",
			def: `{"QueryLanguage":"JSONata","StartAt":"C","States":{
			  "C":{"Type":"Choice","Choices":[{"Condition":"{% $states.input.n %}","Next":"D"}]},"D":{"Type":"Succeed"}}}`,
			input:   `{"n":3}`,
			errName: "States.QueryEvaluationError",
			cause:   `An error occurred while executing the state 'C' (entered at the event id #2). The JSONata expression '$states.input.n' specified for the field 'Choices[0]/Condition' returned an unexpected result type. Expected 'boolean', but was 'number' for value: 3`,
		},
		{
			// Recorded from AWS (LocalStack's snapshot of a JSONata Map
			// whose Items is a variable holding a string).
			name: "Items that is not an array",
			def: `{"QueryLanguage":"JSONata","StartAt":"Start","States":{
			  "Start":{"Type":"Pass","Assign":{"ItemsVar":"{% $states.input.v %}"},"Next":"MapIterateState"},
			  "MapIterateState":{"Type":"Map","Items":"{% $ItemsVar %}","ItemProcessor":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`,
			input:   `{"v":"string"}`,
			errName: "States.QueryEvaluationError",
			cause:   `An error occurred while executing the state 'MapIterateState' (entered at the event id #4). The JSONata expression '$ItemsVar' specified for the field 'Items' returned an unexpected result type. Expected 'array', but was 'string' for value: "string"`,
		},
		{
			name: "Items as an object literal expression",
			def: `{"QueryLanguage":"JSONata","StartAt":"MapIterateState","States":{
			  "MapIterateState":{"Type":"Map","Items":"{% {'foo': 'bar'} %}","ItemProcessor":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`,
			input:   `{}`,
			errName: "States.QueryEvaluationError",
			cause:   `An error occurred while executing the state 'MapIterateState' (entered at the event id #2). The JSONata expression '{'foo': 'bar'}' specified for the field 'Items' returned an unexpected result type. Expected 'array', but was 'object' for value: {"foo":"bar"}`,
		},
		{
			name: "Items that is a function",
			def: `{"QueryLanguage":"JSONata","StartAt":"MapIterateState","States":{
			  "MapIterateState":{"Type":"Map","Items":"{% $fn := function($x){$x} %}","ItemProcessor":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`,
			input:   `{}`,
			errName: "States.QueryEvaluationError",
			cause:   `An error occurred while executing the state 'MapIterateState' (entered at the event id #2). The JSONata expression '$fn := function($x){$x}' specified for the field 'Items' returned an unsupported result type.`,
		},
		{
			name: "a Map without Items whose input is not an array",
			def: `{"QueryLanguage":"JSONata","StartAt":"Start","States":{
			  "Start":{"Type":"Pass","Output":"string","Next":"MapIterateState"},
			  "MapIterateState":{"Type":"Map","ItemProcessor":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`,
			input:   `{}`,
			errName: "States.QueryEvaluationError",
			cause:   `An error occurred while executing the state 'MapIterateState' (entered at the event id #4). Map state input must be an array but was: "string"`,
		},
		{
			// AWS accepts $eval in a definition and fails the state when it
			// runs; jsonata's code and message follow AWS's sentence.
			name: "$eval is not a function",
			def: `{"QueryLanguage":"JSONata","StartAt":"E","States":{
			  "E":{"Type":"Pass","Output":{"r":"{% $eval('1+1') %}"},"End":true}}}`,
			input:   `{}`,
			errName: "States.QueryEvaluationError",
			cause:   `An error occurred while executing the state 'E' (entered at the event id #2). The JSONata expression '$eval('1+1')' specified for the field 'Output/r' threw an error during evaluation. T1006: Attempted to invoke a non-function`,
		},
		{
			name: "Fail: Error and Cause as expressions",
			def: `{"QueryLanguage":"JSONata","StartAt":"F","States":{
			  "F":{"Type":"Fail","Error":"{% $states.input.code %}","Cause":"{% 'failed on ' & $states.input.host %}"}}}`,
			input:   `{"code":"HostDown","host":"h1"}`,
			errName: "HostDown",
			cause:   `failed on h1`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.def, tc.input, echoTasks())
			require.Equal(t, StatusFailed, r.Exec.Status, r.Exec.Output)
			assert.Equal(t, tc.errName, r.Exec.Error)
			assert.Equal(t, tc.cause, r.Exec.Cause)
		})
	}
}

// A States.QueryEvaluationError can be caught, unlike States.Runtime.
func TestJSONataQueryEvaluationErrorIsCaught(t *testing.T) {
	def := `{"QueryLanguage":"JSONata","StartAt":"T","States":{
	  "T":{"Type":"Task","Resource":"` + echoARN + `","Arguments":"{% $states.input.absent %}",
	    "Catch":[{"ErrorEquals":["States.QueryEvaluationError"],"Next":"H"}],"End":true},
	  "H":{"Type":"Pass","End":true}}}`
	r := run(t, def, `{}`, echoTasks())
	require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
	var out map[string]string
	require.NoError(t, jsonUnmarshal(r.Exec.Output, &out))
	assert.Equal(t, "States.QueryEvaluationError", out["Error"])
	assert.Contains(t, out["Cause"], "specified for the field 'Arguments' returned nothing (undefined).")
}

// The history of a failed JSONata expression, as AWS recorded it: an
// EvaluationFailed event naming the state and the field, following the
// event before the state was entered, then ExecutionFailed.
func TestJSONataEvaluationFailedEvent(t *testing.T) {
	def := `{"QueryLanguage":"JSONata","StartAt":"State0","States":{"State0":{"Type":"Pass","Output":"{% $doesNotExist %}","End":true}}}`
	r := run(t, def, `{}`, nil)
	require.Equal(t, StatusFailed, r.Exec.Status)
	cause := `An error occurred while executing the state 'State0' (entered at the event id #2). The JSONata expression '$doesNotExist' specified for the field 'Output' returned nothing (undefined).`
	assert.Equal(t, cause, r.Exec.Cause)
	require.Equal(t, []string{"ExecutionStarted", "PassStateEntered", "EvaluationFailed", "ExecutionFailed"}, r.types())
	ev := r.History[2]
	assert.Equal(t, int64(3), ev.ID)
	assert.Equal(t, int64(0), ev.PreviousEventID)
	b, err := ev.MarshalJSON()
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, jsonUnmarshal(string(b), &got))
	assert.Equal(t, map[string]any{"cause": cause, "error": "States.QueryEvaluationError", "location": "Output", "state": "State0"}, got["evaluationFailedEventDetails"])
	assert.Equal(t, int64(3), r.History[3].PreviousEventID)
}

// Number fields written as expressions: a Task's TimeoutSeconds and
// HeartbeatSeconds, a Map's MaxConcurrency and tolerated failures.
func TestJSONataNumberFields(t *testing.T) {
	def := `{"QueryLanguage":"JSONata","StartAt":"T","States":{
	  "T":{"Type":"Task","Resource":"` + echoARN + `","TimeoutSeconds":"{% $states.input.t %}","Next":"M"},
	  "M":{"Type":"Map","Items":"{% $states.input.items %}","MaxConcurrency":"{% $states.input.c %}","ToleratedFailureCount":"{% $states.input.tol %}",
	    "ItemProcessor":{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Condition":"{% $states.input = 2 %}","Next":"F"}],"Default":"S"},
	      "F":{"Type":"Fail","Error":"Two"},"S":{"Type":"Succeed"}}},"Output":{"n":"{% $count($states.result) %}"},"End":true}}}`
	r := run(t, def, `{"t":30,"items":[1,2,3],"c":1,"tol":1}`, echoTasks())
	require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
	assert.JSONEq(t, `{"n":3}`, r.Exec.Output)
	var scheduled *EventDetails
	for _, h := range r.History {
		if h.Type == "LambdaFunctionScheduled" {
			scheduled = h.Details
		}
	}
	require.NotNil(t, scheduled)
	assert.Equal(t, int64(30), scheduled.TimeoutInSeconds)

	r = run(t, def, `{"t":"soon","items":[],"c":1,"tol":1}`, echoTasks())
	require.Equal(t, StatusFailed, r.Exec.Status)
	assert.Equal(t, `An error occurred while executing the state 'T' (entered at the event id #2). The JSONata expression '$states.input.t' specified for the field 'TimeoutSeconds' returned an unexpected result type. Expected 'integer from 1 to 99999999', but was 'string' for value: "soon"`, r.Exec.Cause)

	r = run(t, def, `{"t":30,"items":[1,2,3],"c":1,"tol":0}`, echoTasks())
	require.Equal(t, StatusFailed, r.Exec.Status)
	assert.Equal(t, ErrExceedToleratedFailureThreshold, r.Exec.Error)
}

// A distributed Map in a JSONata state: ItemReader and ResultWriter take
// Arguments with expressions, ItemBatcher's BatchInput holds expressions.
func TestJSONataDistributedMap(t *testing.T) {
	dir := t.TempDir()
	writeObject(t, dir, "data", "rows.csv", "a,b\n1,2\n3,4\n5,6\n")
	def := `{"QueryLanguage":"JSONata","StartAt":"M","States":{"M":{"Type":"Map","Label":"Rows",
	  "ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"CSV","CSVHeaderLocation":"FIRST_ROW"},
	    "Arguments":{"Bucket":"data","Key":"{% $states.input.key %}"}},
	  "ItemBatcher":{"MaxItemsPerBatch":"{% $states.input.perBatch %}","BatchInput":{"site":"{% $states.input.site %}"}},
	  "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"EXPRESS"},"StartAt":"P",
	    "States":{"P":{"Type":"Pass","Output":{"site":"{% $states.input.BatchInput.site %}","n":"{% $count($states.input.Items) %}"},"End":true}}},
	  "End":true}}}`
	r := runOpts(t, def, `{"key":"rows.csv","site":"ams1","perBatch":2}`, Options{BucketDir: dir})
	require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
	assert.JSONEq(t, `[{"site":"ams1","n":2},{"site":"ams1","n":1}]`, r.Exec.Output)

	withMax := strings.Replace(def, `"CSVHeaderLocation":"FIRST_ROW"`, `"CSVHeaderLocation":"FIRST_ROW","MaxItems":"{% $states.input.max %}"`, 1)
	r = runOpts(t, withMax, `{"key":"rows.csv","site":"ams1","perBatch":1,"max":2}`, Options{BucketDir: dir})
	require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
	assert.JSONEq(t, `[{"site":"ams1","n":1},{"site":"ams1","n":1}]`, r.Exec.Output)

	withWriter := strings.Replace(def, `"Label":"Rows",`, `"Label":"Rows","ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Arguments":{"Bucket":"results","Prefix":"{% $states.input.site %}"}},`, 1)
	r = runOpts(t, withWriter, `{"key":"rows.csv","site":"ams1","perBatch":2}`, Options{BucketDir: dir})
	require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
	var out struct{ ResultWriterDetails struct{ Bucket, Key string } }
	require.NoError(t, jsonUnmarshal(r.Exec.Output, &out))
	assert.Equal(t, "results", out.ResultWriterDetails.Bucket)
	assert.True(t, strings.HasPrefix(out.ResultWriterDetails.Key, "ams1/"), out.ResultWriterDetails.Key)

	_, err := Parse([]byte(strings.Replace(def, `"Arguments":{"Bucket"`, `"Parameters":{"Bucket"`, 1)), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `field "ItemReader.Parameters": unknown field`)
}

// The callback pattern in JSONata: Arguments pass $states.context.Task.Token
// to the function, whose answer through the token is the task's result.
func TestJSONataTaskToken(t *testing.T) {
	const fn = "arn:aws:lambda:us-east-1:123456789012:function:Park"
	def := `{"QueryLanguage":"JSONata","StartAt":"Park","States":{"Park":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken",
	  "Arguments":{"FunctionName":"` + fn + `","Payload":{"token":"{% $states.context.Task.Token %}","node":"{% $states.input.node %}"}},
	  "TimeoutSeconds":"{% $states.context.Execution.Input.timeout %}",
	  "Output":{"node":"{% $states.input.node %}","answer":"{% $states.result.by %}"},"End":true}}}`
	vc := NewVirtualClock(epoch)
	var e *Engine
	park := lambda.NewHandler(func(_ context.Context, in map[string]any) error {
		token, _ := in["token"].(string)
		assert.NotEmpty(t, token)
		assert.Equal(t, "gpu-01", in["node"])
		vc.AfterFunc(30*time.Second, func() { assert.NoError(t, e.SendTaskSuccess(token, []byte(`{"by":"timer"}`))) })
		return nil
	})
	e = NewEngine(Options{Clock: vc, Tasks: map[string]TaskHandler{fn: park}, IdleTokenFunctions: map[string]bool{fn: true}})
	sm, err := Parse([]byte(def), nil)
	require.NoError(t, err)
	arn, err := e.CreateStateMachine("park", sm)
	require.NoError(t, err)
	x, err := e.StartExecution(context.Background(), arn, "run-1", []byte(`{"node":"gpu-01","timeout":600}`))
	require.NoError(t, err)
	ex, err := e.Wait(ctxT(t), x)
	require.NoError(t, err)
	require.Equal(t, StatusSucceeded, ex.Status, ex.Cause)
	assert.JSONEq(t, `{"node":"gpu-01","answer":"timer"}`, ex.Output)
}
