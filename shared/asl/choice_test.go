package asl

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func choiceDef(rule string) string {
	return `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[` + rule + `],"Default":"No"},
	  "Yes":{"Type":"Pass","Result":"yes","End":true},"No":{"Type":"Pass","Result":"no","End":true}}}`
}

func TestChoiceOperators(t *testing.T) {
	input := `{"s":"abc","n":5,"f":2.5,"b":true,"ts":"2016-03-14T01:59:00Z","nul":null,"other":"abd","n2":5,
	  "ts2":"2016-03-14T03:59:00+02:00","bad_ts":"2016-03-14 01:59:00Z","file":"log-2024.txt","star":"a*b"}`
	tests := []struct {
		rule string
		want string
	}{
		{`"Variable":"$.s","StringEquals":"abc"`, "yes"},
		{`"Variable":"$.s","StringEquals":"abd"`, "no"},
		{`"Variable":"$.s","StringLessThan":"abd"`, "yes"},
		{`"Variable":"$.s","StringGreaterThan":"abd"`, "no"},
		{`"Variable":"$.s","StringLessThanEquals":"abc"`, "yes"},
		{`"Variable":"$.s","StringGreaterThanEquals":"abc"`, "yes"},
		{`"Variable":"$.s","StringEqualsPath":"$.other"`, "no"},
		{`"Variable":"$.s","StringLessThanPath":"$.other"`, "yes"},
		{`"Variable":"$.n","StringEquals":"5"`, "no"},
		{`"Variable":"$.file","StringMatches":"log-*.txt"`, "yes"},
		{`"Variable":"$.file","StringMatches":"*.csv"`, "no"},
		{`"Variable":"$.star","StringMatches":"a\\*b"`, "yes"},
		{`"Variable":"$.s","StringMatches":"a\\*c"`, "no"},
		{`"Variable":"$.n","NumericEquals":5`, "yes"},
		{`"Variable":"$.n","NumericEquals":5.0`, "yes"},
		{`"Variable":"$.f","NumericLessThan":3`, "yes"},
		{`"Variable":"$.f","NumericGreaterThan":3`, "no"},
		{`"Variable":"$.n","NumericLessThanEquals":5`, "yes"},
		{`"Variable":"$.n","NumericGreaterThanEquals":6`, "no"},
		{`"Variable":"$.n","NumericEqualsPath":"$.n2"`, "yes"},
		{`"Variable":"$.f","NumericLessThanPath":"$.n"`, "yes"},
		{`"Variable":"$.s","NumericEquals":5`, "no"},
		{`"Variable":"$.b","BooleanEquals":true`, "yes"},
		{`"Variable":"$.b","BooleanEqualsPath":"$.b"`, "yes"},
		{`"Variable":"$.ts","TimestampEquals":"2016-03-14T01:59:00Z"`, "yes"},
		{`"Variable":"$.ts","TimestampEqualsPath":"$.ts2"`, "yes"},
		{`"Variable":"$.ts","TimestampLessThan":"2016-03-14T02:00:00Z"`, "yes"},
		{`"Variable":"$.ts","TimestampGreaterThan":"2016-03-14T02:00:00Z"`, "no"},
		{`"Variable":"$.ts","TimestampLessThanEquals":"2016-03-14T01:59:00Z"`, "yes"},
		{`"Variable":"$.ts","TimestampGreaterThanEquals":"2016-03-14T01:59:01Z"`, "no"},
		{`"Variable":"$.bad_ts","TimestampEquals":"2016-03-14T01:59:00Z"`, "no"},
		{`"Variable":"$.nul","IsNull":true`, "yes"},
		{`"Variable":"$.s","IsNull":true`, "no"},
		{`"Variable":"$.missing","IsPresent":false`, "yes"},
		{`"Variable":"$.s","IsPresent":true`, "yes"},
		{`"Variable":"$.n","IsNumeric":true`, "yes"},
		{`"Variable":"$.s","IsNumeric":false`, "yes"},
		{`"Variable":"$.s","IsString":true`, "yes"},
		{`"Variable":"$.b","IsBoolean":true`, "yes"},
		{`"Variable":"$.ts","IsTimestamp":true`, "yes"},
		{`"Variable":"$.bad_ts","IsTimestamp":true`, "no"},
		{`"And":[{"Variable":"$.n","NumericGreaterThan":1},{"Variable":"$.s","StringEquals":"abc"}]`, "yes"},
		{`"And":[{"Variable":"$.n","NumericGreaterThan":1},{"Variable":"$.s","StringEquals":"x"}]`, "no"},
		{`"Or":[{"Variable":"$.n","NumericGreaterThan":10},{"Variable":"$.s","StringEquals":"abc"}]`, "yes"},
		{`"Not":{"Variable":"$.s","StringEquals":"abc"}`, "no"},
		{`"Not":{"Variable":"$.missing","IsPresent":true}`, "yes"},
		{`"Variable":"$$.State.Name","StringEquals":"C"`, "yes"},
	}
	for _, tc := range tests {
		t.Run(tc.rule, func(t *testing.T) {
			r := run(t, choiceDef("{"+tc.rule+`,"Next":"Yes"}`), input, nil)
			require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
			assert.Equal(t, `"`+tc.want+`"`, r.Exec.Output)
		})
	}
}

func TestChoiceFirstMatchWinsAndOutputPath(t *testing.T) {
	def := `{"StartAt":"C","States":{"C":{"Type":"Choice","InputPath":"$.in","OutputPath":"$.v","Choices":[
	  {"Variable":"$.v","NumericGreaterThan":1,"Next":"A"},{"Variable":"$.v","NumericGreaterThan":0,"Next":"B"}]},
	  "A":{"Type":"Pass","End":true},"B":{"Type":"Fail","Error":"B"}}}`
	r := run(t, def, `{"in":{"v":5}}`, nil)
	assert.Equal(t, StatusSucceeded, r.Exec.Status)
	assert.Equal(t, `5`, r.Exec.Output)
	assert.Equal(t, []string{"ExecutionStarted", "ChoiceStateEntered", "ChoiceStateExited", "PassStateEntered", "PassStateExited", "ExecutionSucceeded"}, r.types())
}

func TestChoiceNoMatchAndMissingVariable(t *testing.T) {
	noDefault := `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$.v","NumericEquals":1,"Next":"A"}]},"A":{"Type":"Pass","End":true}}}`
	r := run(t, noDefault, `{"v":2}`, nil)
	assert.Equal(t, StatusFailed, r.Exec.Status)
	assert.Equal(t, ErrNoChoiceMatched, r.Exec.Error)
	assert.Equal(t, []string{"ExecutionStarted", "ChoiceStateEntered", "ExecutionFailed"}, r.types())

	r = run(t, noDefault, `{}`, nil)
	assert.Equal(t, StatusFailed, r.Exec.Status)
	assert.Equal(t, ErrRuntime, r.Exec.Error)
	assert.Contains(t, r.Exec.Cause, "Invalid path '$.v'")
}

func TestNoChoiceMatchedIsCatchableByEnclosingParallel(t *testing.T) {
	def := `{"StartAt":"P","States":{"P":{"Type":"Parallel","Branches":[{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$.v","NumericEquals":1,"Next":"A"}]},"A":{"Type":"Pass","End":true}}}],
	  "Catch":[{"ErrorEquals":["States.NoChoiceMatched"],"Next":"Caught"}],"End":true},"Caught":{"Type":"Pass","End":true}}}`
	r := run(t, def, `{"v":2}`, nil)
	require.Equal(t, StatusSucceeded, r.Exec.Status)
	assert.Contains(t, r.Exec.Output, ErrNoChoiceMatched)
}
