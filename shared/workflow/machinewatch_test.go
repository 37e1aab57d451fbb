package workflow

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/asl"
	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/run"
)

func TestLocalCompleteTaskTellsAnEndedTask(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		ended   bool
		wantErr string
	}{
		{name: "ok"},
		{name: "task ended", err: &asl.TaskTimedOutError{}, ended: true},
		{name: "token from before a restart", err: &asl.InvalidTokenError{}, ended: true},
		{name: "other failure", err: errors.New("boom"), wantErr: "complete task: boom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := &fakeEngine{err: tc.err}
			err := NewLocal(e, "sm").CompleteTask(context.Background(), "tok", []byte(`{"woke":"due"}`))
			assert.Equal(t, "tok", e.token)
			var ended *run.TaskEndedError
			assert.Equal(t, tc.ended, errors.As(err, &ended))
			switch {
			case tc.wantErr != "":
				require.EqualError(t, err, tc.wantErr)
			case !tc.ended:
				assert.NoError(t, err)
			}
		})
	}
}

// startRecorder records the executions a ticker starts.
type startRecorder struct {
	fakeEngine
	mu    sync.Mutex
	names []string
	input []string
}

func (s *startRecorder) StartExecution(_ context.Context, arn, name string, input []byte) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names = append(s.names, name)
	s.input = append(s.input, arn+" "+string(input))
	return "exec-" + name, nil
}

func (s *startRecorder) started() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.names)
}

func TestMachineWatchTickerStartsEveryMinute(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC))
	e := &startRecorder{}
	sched := MachineWatchTicker{Engine: e, ARN: "watch-sm", Clock: clk}.Start()
	require.NoError(t, clk.BlockUntilContext(context.Background(), 1))
	assert.Zero(t, e.started(), "the first run comes one interval on")
	for n := 1; n <= 3; n++ {
		clk.Advance(time.Minute)
		require.NoError(t, clk.BlockUntilContext(context.Background(), 1), "the next tick is armed")
		assert.Equal(t, n, e.started())
	}
	assert.Equal(t, "watch-sm {\"round\":0}", e.input[0])
	assert.NotEqual(t, e.names[0], e.names[1], "each run has its own name")
	sched.Stop()
	clk.Advance(time.Hour)
	assert.Equal(t, 3, e.started(), "stopped: no more runs")
}

// An idle schedule pauses at its tick — nothing armed for a virtual clock
// to jump to — until Wake.
func TestMachineWatchTickerPausesWhileIdle(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC))
	e := &startRecorder{}
	var idle atomic.Bool
	sched := MachineWatchTicker{Engine: e, ARN: "watch-sm", Clock: clk, Idle: idle.Load}.Start()
	t.Cleanup(sched.Stop)
	require.NoError(t, clk.BlockUntilContext(context.Background(), 1))
	clk.Advance(time.Minute)
	require.NoError(t, clk.BlockUntilContext(context.Background(), 1), "busy: the next tick is armed")
	assert.Equal(t, 1, e.started())

	idle.Store(true)
	clk.Advance(time.Minute)
	// The fake clock runs a due callback on a goroutine of its own: wait
	// for the tick to have run, or the Wake below could find its timer
	// still set, and the late tick see the schedule busy again.
	require.Eventually(t, func() bool {
		sched.mu.Lock()
		defer sched.mu.Unlock()
		return sched.timer == nil
	}, 10*time.Second, time.Millisecond, "the idle tick ran and armed nothing")
	assert.Equal(t, 1, e.started(), "an idle tick starts nothing")
	clk.Advance(time.Hour)
	assert.Equal(t, 1, e.started(), "and arms nothing")

	idle.Store(false)
	sched.Wake()
	sched.Wake() // a second wake arms no second tick
	require.NoError(t, clk.BlockUntilContext(context.Background(), 1))
	clk.Advance(time.Minute)
	require.NoError(t, clk.BlockUntilContext(context.Background(), 1), "busy again: the tick ran and armed the next")
	assert.Equal(t, 2, e.started())
}
