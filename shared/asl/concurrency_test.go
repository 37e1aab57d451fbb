package asl

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/clock"
)

// Two branches call one function whose concurrency is 1: the second call
// is throttled while the first runs, and the Retry on
// Lambda.TooManyRequestsException carries it through once the slot is free.
func TestFunctionConcurrencyThrottles(t *testing.T) {
	const def = `{"StartAt":"P","States":{"P":{"Type":"Parallel","End":true,"Branches":[
	 {"StartAt":"A","States":{"A":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:f","End":true,
	   "Retry":[{"ErrorEquals":["Lambda.TooManyRequestsException"],"IntervalSeconds":1,"MaxAttempts":5}]}}},
	 {"StartAt":"B","States":{"B":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:f","End":true,
	   "Retry":[{"ErrorEquals":["Lambda.TooManyRequestsException"],"IntervalSeconds":1,"MaxAttempts":5}]}}}]}}}`
	release := make(chan struct{})
	var calls atomic.Int32
	f := handlerFunc(func(context.Context, []byte) ([]byte, error) {
		if calls.Add(1) == 1 {
			<-release // hold the only slot until the other branch was refused
		}
		return []byte(`{}`), nil
	})
	e, x := start(t, def, `{}`, Options{Clock: NewVirtualClock(epoch), FunctionConcurrency: 1,
		Tasks: map[string]TaskHandler{"arn:aws:lambda:us-east-1:123456789012:function:f": f}})

	throttled := func() bool {
		h, err := e.History(x)
		require.NoError(t, err)
		for _, ev := range h {
			if ev.Type == "LambdaFunctionFailed" && ev.Details.Error == ErrLambdaTooManyRequests {
				assert.Contains(t, ev.Details.Cause, "Status Code: 429")
				return true
			}
		}
		return false
	}
	require.Eventually(t, throttled, 10*time.Second, 5*time.Millisecond)
	close(release)
	ex := wait(t, e, x)
	assert.Equal(t, StatusSucceeded, ex.Status)
	assert.Equal(t, int32(2), calls.Load(), "a throttled invocation never reaches the handler")
}

// On a clock sped up 100,000 times, TimeoutSeconds 1 is 10 µs of wall time;
// a handler that works for 20 ms would always time out. With the wall clock
// as InvokeClock the timeout measures the handler's own run, as on AWS.
func TestInvokeClockMeasuresTheHandlerRun(t *testing.T) {
	const def = `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:f","TimeoutSeconds":1,"End":true}}}`
	slow := handlerFunc(func(context.Context, []byte) ([]byte, error) {
		time.Sleep(20 * time.Millisecond)
		return []byte(`{}`), nil
	})
	tasks := map[string]TaskHandler{"arn:aws:lambda:us-east-1:123456789012:function:f": slow}

	e, x := start(t, def, `{}`, Options{Clock: clock.Scaled(100_000), Tasks: tasks})
	ex := wait(t, e, x)
	assert.Equal(t, StatusFailed, ex.Status)
	assert.Equal(t, ErrTimeout, ex.Error, "on the scaled clock alone the handler's run times out")

	e, x = start(t, def, `{}`, Options{Clock: clock.Scaled(100_000), InvokeClock: clock.Real(), Tasks: tasks})
	ex = wait(t, e, x)
	assert.Equal(t, StatusSucceeded, ex.Status, "%s: %s", ex.Error, ex.Cause)
}
