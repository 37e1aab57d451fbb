package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeFiles writes name → content into a temporary directory and returns
// the directory.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
	}
	return dir
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"asl"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

const onboardDef = `{"StartAt":"Commission","States":{
  "Commission":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:Commission",
    "Retry":[{"ErrorEquals":["MAASUnavailableError"],"IntervalSeconds":30,"MaxAttempts":2}],
    "Catch":[{"ErrorEquals":["States.ALL"],"ResultPath":"$.error","Next":"Manual"}],"ResultPath":"$.commission","Next":"Poll"},
  "Poll":{"Type":"Wait","Seconds":3600,"Next":"Enroll"},
  "Enroll":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken",
    "Parameters":{"FunctionName":"Enroll","Payload":{"token.$":"$$.Task.Token"}},"HeartbeatSeconds":60,"ResultPath":"$.enrolled","End":true},
  "Manual":{"Type":"Fail","Error":"ManualIntervention","Cause":"commissioning failed"}}}`

func TestASLValidate(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"good.asl.json": onboardDef,
		"bad.asl.json":  `{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"Missing"},"B":{"Type":"Wat"}}}`,
	})
	code, _, stderr := runCLI(t, "validate", filepath.Join(dir, "good.asl.json"))
	assert.Equal(t, 0, code)
	assert.Empty(t, stderr)

	code, _, stderr = runCLI(t, "validate", filepath.Join(dir, "good.asl.json"), filepath.Join(dir, "bad.asl.json"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `bad.asl.json: state "A": field "Next": names the missing state "Missing"`)
	assert.Contains(t, stderr, `bad.asl.json: state "B": field "Type": unknown state type "Wat"`)
	assert.NotContains(t, stderr, "good.asl.json")

	code, _, stderr = runCLI(t, "validate", filepath.Join(dir, "nope.json"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "nope.json")

	code, _, _ = runCLI(t, "validate")
	assert.Equal(t, 2, code)
}

type runOut struct {
	Status  string            `json:"status"`
	Output  json.RawMessage   `json:"output"`
	Error   *string           `json:"error"`
	Cause   *string           `json:"cause"`
	History []json.RawMessage `json:"history"`
}

func parseRun(t *testing.T, stdout string) runOut {
	t.Helper()
	var o runOut
	dec := json.NewDecoder(bytes.NewBufferString(stdout))
	require.NoError(t, dec.Decode(&o))
	assert.False(t, dec.More(), "exactly one JSON object on stdout")
	return o
}

func TestASLRun(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"onboard.asl.json": onboardDef,
		"input.json":       `{"node":"gpu-01"}`,
		"commission.json":  `{"system_id":"abc123"}`,
		"enroll.json":      `{"agent":"v1"}`,
		"unavailable.json": `{"$fail":{"error":"MAASUnavailableError","cause":"503 from region"}}`,
		"rejected.json":    `{"$fail":{"error":"EnrollmentRejected","cause":"bad cert"}}`,
	})
	f := func(n string) string { return filepath.Join(dir, n) }

	t.Run("succeeds with canned answers, in virtual time", func(t *testing.T) {
		code, stdout, stderr := runCLI(t, "run", "--definition", f("onboard.asl.json"), "--input", "@"+f("input.json"),
			"--task", "Commission=@"+f("commission.json"), "--task", "Enroll=@"+f("enroll.json"))
		require.Equal(t, 0, code, stderr)
		o := parseRun(t, stdout)
		assert.Equal(t, "SUCCEEDED", o.Status)
		assert.JSONEq(t, `{"node":"gpu-01","commission":{"system_id":"abc123"},"enrolled":{"agent":"v1"}}`, string(o.Output))
		assert.Nil(t, o.Error)
		assert.Nil(t, o.History)
	})

	t.Run("$fail answers every call, retries included, then Catch", func(t *testing.T) {
		code, stdout, _ := runCLI(t, "run", "--definition", f("onboard.asl.json"), "--input", `{"node":"gpu-02"}`,
			"--task", "arn:aws:lambda:us-east-1:123456789012:function:Commission=@"+f("unavailable.json"), "--history")
		require.Equal(t, 0, code)
		o := parseRun(t, stdout)
		assert.Equal(t, "FAILED", o.Status)
		require.NotNil(t, o.Error)
		assert.Equal(t, "ManualIntervention", *o.Error)
		assert.Equal(t, "commissioning failed", *o.Cause)
		failures := 0
		for _, h := range o.History {
			var ev struct {
				Type    string `json:"type"`
				Details struct {
					Error string `json:"error"`
					Cause string `json:"cause"`
				} `json:"lambdaFunctionFailedEventDetails"`
			}
			require.NoError(t, json.Unmarshal(h, &ev))
			if ev.Type == "LambdaFunctionFailed" {
				failures++
				assert.Equal(t, "MAASUnavailableError", ev.Details.Error)
				assert.Equal(t, "503 from region", ev.Details.Cause)
			}
		}
		assert.Equal(t, 3, failures, "the first call and two retries")
	})

	t.Run("$fail on a callback task", func(t *testing.T) {
		code, stdout, _ := runCLI(t, "run", "--definition", f("onboard.asl.json"),
			"--task", "Commission=@"+f("commission.json"), "--task", "Enroll=@"+f("rejected.json"))
		require.Equal(t, 0, code)
		o := parseRun(t, stdout)
		assert.Equal(t, "FAILED", o.Status)
		assert.Equal(t, "EnrollmentRejected", *o.Error)
		assert.Equal(t, "bad cert", *o.Cause)
	})

	t.Run("an unanswered task fails like a missing Lambda function", func(t *testing.T) {
		code, stdout, _ := runCLI(t, "run", "--definition", f("onboard.asl.json"))
		require.Equal(t, 0, code)
		o := parseRun(t, stdout)
		assert.Equal(t, "FAILED", o.Status)
		assert.Equal(t, "ManualIntervention", *o.Error)
	})

	t.Run("history", func(t *testing.T) {
		code, stdout, _ := runCLI(t, "run", "--definition", f("onboard.asl.json"), "--history",
			"--task", "Commission=@"+f("commission.json"), "--task", "Enroll=@"+f("enroll.json"))
		require.Equal(t, 0, code)
		o := parseRun(t, stdout)
		require.NotEmpty(t, o.History)
		var first, last struct {
			ID   int64  `json:"id"`
			Type string `json:"type"`
		}
		require.NoError(t, json.Unmarshal(o.History[0], &first))
		require.NoError(t, json.Unmarshal(o.History[len(o.History)-1], &last))
		assert.Equal(t, "ExecutionStarted", first.Type)
		assert.Equal(t, "ExecutionSucceeded", last.Type)
		assert.Equal(t, int64(len(o.History)), last.ID)
	})
}

func TestASLRunMisuse(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"ok.asl.json":  `{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`,
		"bad.asl.json": `{"StartAt":"A","States":{}}`,
		"notjson.json": `{nope`,
	})
	f := func(n string) string { return filepath.Join(dir, n) }
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"invalid definition", []string{"run", "--definition", f("bad.asl.json")}, 1, "States"},
		{"no definition", []string{"run"}, 2, "--definition"},
		{"missing definition file", []string{"run", "--definition", f("missing.json")}, 2, "missing.json"},
		{"input not JSON", []string{"run", "--definition", f("ok.asl.json"), "--input", "{nope"}, 2, "--input"},
		{"input file missing", []string{"run", "--definition", f("ok.asl.json"), "--input", "@" + f("none.json")}, 2, "--input"},
		{"task without @", []string{"run", "--definition", f("ok.asl.json"), "--task", "X=file"}, 2, "RESOURCE=@FILE"},
		{"task file not JSON", []string{"run", "--definition", f("ok.asl.json"), "--task", "X=@" + f("notjson.json")}, 2, "not valid JSON"},
		{"unknown flag", []string{"run", "--bogus"}, 2, "bogus"},
		{"unknown subcommand", []string{"frobnicate"}, 2, `unknown command "frobnicate" for "maasflow asl"`},
		{"no subcommand", []string{}, 2, "Usage:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			assert.Equal(t, tc.code, code)
			assert.Empty(t, stdout)
			assert.Contains(t, stderr, tc.msg)
		})
	}
}

func TestASLRunInputDefaultsAndSubstitutions(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"sub.asl.json": `{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"${Fn}","End":true}}}`,
		"answer.json":  `[1,2]`,
	})
	code, stdout, _ := runCLI(t, "run", "--definition", filepath.Join(dir, "sub.asl.json"),
		"--sub", "Fn=arn:aws:lambda:us-east-1:123456789012:function:F", "--task", "F=@"+filepath.Join(dir, "answer.json"))
	require.Equal(t, 0, code)
	o := parseRun(t, stdout)
	assert.Equal(t, "SUCCEEDED", o.Status)
	assert.JSONEq(t, `[1,2]`, string(o.Output))
}

// validate accepts workflow variables in JSONPath states and refuses what
// AWS refuses: a reserved or malformed name, a ResultPath naming a variable.
func TestASLValidateVariables(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"vars.asl.json": `{"StartAt":"A","States":{
		  "A":{"Type":"Pass","Assign":{"n":1,"who.$":"$.who"},"Next":"B"},
		  "B":{"Type":"Pass","Parameters":{"msg.$":"States.Format('hi {}', $who)"},"End":true}}}`,
		"badvars.asl.json":   `{"StartAt":"A","States":{"A":{"Type":"Pass","Assign":{"states":1},"ResultPath":"$n","End":true}}}`,
		"undefined.asl.json": `{"StartAt":"A","States":{"A":{"Type":"Pass","Assign":{"n":1},"Parameters":{"v.$":"$m"},"End":true}}}`,
	})
	code, _, stderr := runCLI(t, "validate", filepath.Join(dir, "vars.asl.json"))
	assert.Equal(t, 0, code, stderr)
	assert.Empty(t, stderr)

	code, _, stderr = runCLI(t, "validate", filepath.Join(dir, "badvars.asl.json"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `state "A": field "Assign"`)
	assert.Contains(t, stderr, `state "A": field "ResultPath"`)

	code, _, stderr = runCLI(t, "validate", filepath.Join(dir, "undefined.asl.json"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `state "A": field "Parameters": references the variable $m, which no state assigns`)
}

// validate accepts JSONata states and refuses the JSONPath fields in them,
// as AWS does; run evaluates them.
func TestASLJSONata(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"jsonata.asl.json": `{"QueryLanguage":"JSONata","StartAt":"A","States":{
		  "A":{"Type":"Pass","Assign":{"who":"{% $states.input.who %}"},"Next":"B"},
		  "B":{"Type":"Pass","Output":{"msg":"{% 'hi ' & $who %}"},"End":true}}}`,
		"mixed.asl.json": `{"QueryLanguage":"JSONata","StartAt":"A","States":{
		  "A":{"Type":"Pass","Parameters":{"a":1},"Next":"B"},
		  "B":{"Type":"Pass","QueryLanguage":"JSONPath","End":true}}}`,
	})
	code, _, stderr := runCLI(t, "validate", filepath.Join(dir, "jsonata.asl.json"))
	assert.Equal(t, 0, code, stderr)

	code, _, stderr = runCLI(t, "validate", filepath.Join(dir, "mixed.asl.json"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `state "A": field "Parameters": Parameters is a JSONPath field`)
	assert.Contains(t, stderr, `state "B": field "QueryLanguage"`)

	code, stdout, stderr := runCLI(t, "run", "--definition", filepath.Join(dir, "jsonata.asl.json"), "--input", `{"who":"ops"}`)
	require.Equal(t, 0, code, stderr)
	o := parseRun(t, stdout)
	assert.Equal(t, "SUCCEEDED", o.Status)
	assert.JSONEq(t, `{"msg":"hi ops"}`, string(o.Output))
}

// validate accepts a distributed Map and refuses a distributed-only field
// on an inline one; run reads ItemReader objects from --buckets.
func TestASLDistributedMap(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"dist.asl.json": `{"StartAt":"M","States":{"M":{"Type":"Map","Label":"Rows",
		  "ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"CSV","CSVHeaderLocation":"FIRST_ROW"},
		    "Parameters":{"Bucket":"data","Key":"rows.csv"}},
		  "ItemBatcher":{"MaxItemsPerBatch":2},
		  "ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"EXPRESS"},"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`,
		"inline.asl.json": `{"StartAt":"M","States":{"M":{"Type":"Map","ItemBatcher":{"MaxItemsPerBatch":2},
		  "ItemProcessor":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`,
	})
	code, _, stderr := runCLI(t, "validate", filepath.Join(dir, "dist.asl.json"))
	assert.Equal(t, 0, code, stderr)
	code, _, stderr = runCLI(t, "validate", filepath.Join(dir, "inline.asl.json"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `state "M": field "ItemBatcher"`)

	buckets := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(buckets, "data"), 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(buckets, "data", "rows.csv"), []byte("a,b\n1,2\n3,4\n5,6\n"), 0o600))
	code, stdout, stderr := runCLI(t, "run", "--definition", filepath.Join(dir, "dist.asl.json"), "--buckets", buckets)
	require.Equal(t, 0, code, stderr)
	o := parseRun(t, stdout)
	assert.Equal(t, "SUCCEEDED", o.Status)
	assert.JSONEq(t, `[{"Items":[{"a":"1","b":"2"},{"a":"3","b":"4"}]},{"Items":[{"a":"5","b":"6"}]}]`, string(o.Output))
}
