package asl

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDocumentedMapWithParameters(t *testing.T) {
	var mu sync.Mutex
	var seen []map[string]any
	shipVal := lambda.NewHandler(func(in map[string]any) (map[string]any, error) {
		mu.Lock()
		seen = append(seen, in)
		mu.Unlock()
		parcel := in["parcel"].(map[string]any)
		return map[string]any{"prod": parcel["prod"], "valid": true, "courier": in["courier"]}, nil
	})
	def := `{"StartAt":"Validate-All","States":{"Validate-All":{"Type":"Map","InputPath":"$.detail","ItemsPath":"$.shipped","MaxConcurrency":0,
	  "ResultPath":"$.detail.shipped","Parameters":{"parcel.$":"$$.Map.Item.Value","courier.$":"$.delivery-partner"},
	  "Iterator":{"StartAt":"Validate","States":{"Validate":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:ship-val","End":true}}},
	  "End":true}}}`
	input := `{"ship-date":"2016-03-14T01:59:00Z","detail":{"delivery-partner":"UQS","shipped":[
	  {"prod":"R31","dest-code":9511,"quantity":1344},{"prod":"S39","dest-code":9511,"quantity":40},
	  {"prod":"R31","dest-code":9833,"quantity":12},{"prod":"R40","dest-code":9860,"quantity":887},
	  {"prod":"R40","dest-code":9511,"quantity":1220}]}}`
	r := run(t, def, input, map[string]TaskHandler{"ship-val": shipVal})
	require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
	assert.Len(t, seen, 5)
	assert.Contains(t, seen, map[string]any{"parcel": map[string]any{"prod": "R31", "dest-code": 9511.0, "quantity": 1344.0}, "courier": "UQS"})
	// ResultPath "$.detail.shipped" is applied to the raw input: the
	// shipped array is replaced by the iterations' outputs, in item order.
	assert.JSONEq(t, `{"ship-date":"2016-03-14T01:59:00Z","detail":{"delivery-partner":"UQS","shipped":[
	  {"prod":"R31","valid":true,"courier":"UQS"},{"prod":"S39","valid":true,"courier":"UQS"},
	  {"prod":"R31","valid":true,"courier":"UQS"},{"prod":"R40","valid":true,"courier":"UQS"},
	  {"prod":"R40","valid":true,"courier":"UQS"}]}}`, r.Exec.Output)
}

func TestMapItemSelectorIndexAndHistory(t *testing.T) {
	def := `{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":1,
	  "ItemSelector":{"i.$":"$$.Map.Item.Index","v.$":"$$.Map.Item.Value","k.$":"$.k"},
	  "ItemProcessor":{"ProcessorConfig":{"Mode":"INLINE"},"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`
	r := run(t, def, `{"k":"x","items":["a","b"]}`, nil)
	require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
	assert.JSONEq(t, `[{"i":0,"v":"a","k":"x"},{"i":1,"v":"b","k":"x"}]`, r.Exec.Output)
	assert.Equal(t, []string{"ExecutionStarted", "MapStateEntered", "MapStateStarted",
		"MapIterationStarted", "PassStateEntered", "PassStateExited", "MapIterationSucceeded",
		"MapIterationStarted", "PassStateEntered", "PassStateExited", "MapIterationSucceeded",
		"MapStateSucceeded", "MapStateExited", "ExecutionSucceeded"}, r.types())
	require.NotNil(t, r.History[2].Details.Length)
	assert.Equal(t, 2, *r.History[2].Details.Length)
	assert.Equal(t, 1, *r.History[7].Details.Index)
	assert.Equal(t, r.History[2].ID, r.History[3].PreviousEventID, "an iteration follows MapStateStarted")
}

// handlerFunc is a plain TaskHandler (not aws-lambda-go's), which the engine
// calls concurrently.
type handlerFunc func(ctx context.Context, payload []byte) ([]byte, error)

func (f handlerFunc) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return f(ctx, payload)
}

func TestMapMaxConcurrency(t *testing.T) {
	for _, maxC := range []int{1, 3, 0} {
		t.Run(strconv.Itoa(maxC), func(t *testing.T) {
			var running, peak atomic.Int64
			var once sync.Once
			gate := make(chan struct{})
			h := handlerFunc(func(_ context.Context, payload []byte) ([]byte, error) {
				cur := running.Add(1)
				for {
					p := peak.Load()
					if cur <= p || peak.CompareAndSwap(p, cur) {
						break
					}
				}
				if maxC == 0 {
					if cur == 10 {
						once.Do(func() { close(gate) })
					}
					<-gate
				}
				running.Add(-1)
				n, err := strconv.Atoi(string(payload))
				return []byte(strconv.Itoa(n * 2)), err
			})
			def := `{"StartAt":"M","States":{"M":{"Type":"Map","MaxConcurrency":` + strconv.Itoa(maxC) + `,"ItemProcessor":{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:Double","End":true}}},"End":true}}}`
			r := run(t, def, `[1,2,3,4,5,6,7,8,9,10]`, map[string]TaskHandler{"Double": h})
			require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
			assert.JSONEq(t, `[2,4,6,8,10,12,14,16,18,20]`, r.Exec.Output)
			if maxC == 0 {
				assert.Equal(t, int64(10), peak.Load(), "MaxConcurrency 0 runs every item at once")
			} else {
				assert.LessOrEqual(t, peak.Load(), int64(maxC))
				assert.Positive(t, peak.Load())
			}
		})
	}
}

func TestConcurrentCallsOfOneLambdaHandlerKeepTheirResults(t *testing.T) {
	h := lambda.NewHandler(func(n float64) (float64, error) { return n * 2, nil })
	def := `{"StartAt":"M","States":{"M":{"Type":"Map","ItemProcessor":{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:Double","End":true}}},"End":true}}}`
	input := make([]int, 200)
	want := make([]int, 200)
	for i := range input {
		input[i], want[i] = i, 2*i
	}
	in, _ := json.Marshal(input)
	out, _ := json.Marshal(want)
	r := run(t, def, string(in), map[string]TaskHandler{"Double": h})
	require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
	assert.JSONEq(t, string(out), r.Exec.Output)
}

func TestMapFailure(t *testing.T) {
	failOn := func(bad ...float64) lambda.Handler {
		return lambda.NewHandler(func(n float64) (float64, error) {
			for _, b := range bad {
				if n == b {
					return 0, &DeployFailedError{SystemID: "n"}
				}
			}
			return n, nil
		})
	}
	mapDef := func(extra string) string {
		return `{"StartAt":"M","States":{"M":{"Type":"Map",` + extra + `"ItemProcessor":{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:W","End":true}}},"End":true}}}`
	}
	tests := []struct {
		name   string
		extra  string
		bad    []float64
		status string
		err    string
		output string
	}{
		{"one failure fails the map with its error", `"MaxConcurrency":1,`, []float64{2}, StatusFailed, "DeployFailedError", ""},
		{"ToleratedFailureCount tolerates", `"ToleratedFailureCount":1,`, []float64{2}, StatusSucceeded, "",
			`[1,{"Error":"DeployFailedError","Cause":"{\"errorMessage\":\"deploy failed on n\",\"errorType\":\"DeployFailedError\"}"},3,4]`},
		{"ToleratedFailureCount exceeded", `"ToleratedFailureCount":1,`, []float64{2, 3}, StatusFailed, ErrExceedToleratedFailureThreshold, ""},
		{"ToleratedFailurePercentage tolerates", `"ToleratedFailurePercentage":50,`, []float64{1, 2}, StatusSucceeded, "", ""},
		{"ToleratedFailurePercentage exceeded", `"ToleratedFailurePercentage":50,`, []float64{1, 2, 3}, StatusFailed, ErrExceedToleratedFailureThreshold, ""},
		{"ToleratedFailureCountPath", `"ToleratedFailureCountPath":"$[0]",`, []float64{2}, StatusSucceeded, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, mapDef(tc.extra), `[1,2,3,4]`, map[string]TaskHandler{"W": failOn(tc.bad...)})
			assert.Equal(t, tc.status, r.Exec.Status)
			assert.Equal(t, tc.err, r.Exec.Error)
			if tc.output != "" {
				assert.JSONEq(t, tc.output, r.Exec.Output)
			}
			if tc.status == StatusFailed {
				assert.Contains(t, r.types(), "MapIterationFailed")
				assert.Contains(t, r.types(), "MapStateFailed")
			}
		})
	}
}

func TestParallelFailureNaming(t *testing.T) {
	// AWS records the failing branch's own error, not States.BranchFailed.
	def := `{"StartAt":"P","States":{"P":{"Type":"Parallel","End":true,"Branches":[
	  {"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":100,"End":true}}},
	  {"StartAt":"Pause","States":{"Pause":{"Type":"Wait","Seconds":10,"Next":"F"},"F":{"Type":"Fail","Error":"FailureType","Cause":"Cause description"}}}]}}}`
	r := run(t, def, `{}`, nil)
	assert.Equal(t, StatusFailed, r.Exec.Status)
	assert.Equal(t, "FailureType", r.Exec.Error)
	assert.Equal(t, "Cause description", r.Exec.Cause)
	types := r.types()
	assert.Contains(t, types, "ParallelStateStarted")
	assert.Contains(t, types, "WaitStateAborted", "the sibling branch is aborted")
	assert.Equal(t, "ParallelStateFailed", types[len(types)-2])
	assert.Equal(t, 10*time.Second, r.Exec.StopDate.Sub(r.Exec.StartDate), "the long wait did not run to its end")
}

func TestParallelOutputAndRetry(t *testing.T) {
	var calls atomic.Int64
	h := lambda.NewHandler(func() (string, error) {
		if calls.Add(1) == 1 {
			return "", &DeployFailedError{}
		}
		return "ok", nil
	})
	def := `{"StartAt":"P","States":{"P":{"Type":"Parallel","ResultPath":"$.results","End":true,
	  "Retry":[{"ErrorEquals":["DeployFailedError"],"IntervalSeconds":1}],
	  "Branches":[
	  {"StartAt":"A","States":{"A":{"Type":"Pass","Result":"a","End":true}}},
	  {"StartAt":"B","States":{"B":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:B","End":true}}}]}}}`
	r := run(t, def, `{"in":true}`, map[string]TaskHandler{"B": h})
	require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
	assert.JSONEq(t, `{"in":true,"results":["a","ok"]}`, r.Exec.Output)
	n := 0
	for _, ty := range r.types() {
		if ty == "ParallelStateStarted" {
			n++
		}
	}
	assert.Equal(t, 2, n, "each attempt records a fresh ParallelStateStarted")
}
