package asl

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/clock"
)

// epoch is the virtual start time of every test execution.
var epoch = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// runResult is what a finished test execution produced.
type runResult struct {
	Exec    Execution
	History []HistoryEvent
	Engine  *Engine
	Clock   *VirtualClock
}

// run parses def, runs it to completion on a virtual clock with the given
// handlers and returns the description and history.
func run(t *testing.T, def, input string, tasks map[string]TaskHandler) runResult {
	t.Helper()
	return runOpts(t, def, input, Options{Tasks: tasks})
}

func runOpts(t *testing.T, def, input string, o Options) runResult {
	t.Helper()
	sm, err := Parse([]byte(def), nil)
	require.NoError(t, err)
	vc := NewVirtualClock(epoch)
	if o.Clock == nil {
		o.Clock = vc
	}
	e := NewEngine(o)
	arn, err := e.CreateStateMachine("test", sm)
	require.NoError(t, err)
	xarn, err := e.StartExecution(context.Background(), arn, "run-1", []byte(input))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ex, err := e.Wait(ctx, xarn)
	require.NoError(t, err)
	h, err := e.History(xarn)
	require.NoError(t, err)
	return runResult{Exec: ex, History: h, Engine: e, Clock: vc}
}

// types lists the history's event types.
func (r runResult) types() []string {
	out := make([]string, len(r.History))
	for i, h := range r.History {
		out[i] = h.Type
	}
	return out
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

func newFake() *clockwork.FakeClock { return clock.NewFake(epoch) }

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// start registers def and starts one execution without waiting for it.
func start(t *testing.T, def, input string, o Options) (*Engine, string) {
	t.Helper()
	sm, err := Parse([]byte(def), nil)
	require.NoError(t, err)
	e := NewEngine(o)
	arn, err := e.CreateStateMachine("test", sm)
	require.NoError(t, err)
	x, err := e.StartExecution(context.Background(), arn, "", []byte(input))
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.StopExecution(x, "", "test cleanup") })
	return e, x
}

func wait(t *testing.T, e *Engine, x string) Execution {
	t.Helper()
	ex, err := e.Wait(ctxT(t), x)
	require.NoError(t, err)
	return ex
}
