package asl

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadClockRunsAtItsScaleWhenIdle(t *testing.T) {
	c := NewLoadClock(1000)
	start := c.Now()
	fired := make(chan time.Time, 1)
	c.AfterFunc(10*time.Second, func() { fired <- c.Now() })
	select {
	case at := <-fired:
		assert.GreaterOrEqual(t, at.Sub(start), 10*time.Second, "never early in simulated time")
	case <-time.After(5 * time.Second):
		t.Fatal("10 simulated seconds at 1000x took more than 5 s of wall time")
	}
	assert.InDelta(t, 1000, c.Speed(), 0.001)
}

func TestLoadClockSlowsDownWhileExecutionsWaitOnThrottling(t *testing.T) {
	c := NewLoadClock(1000)
	before := c.Now()
	var fired atomic.Bool
	timer := c.AfterFunc(time.Minute, func() { fired.Store(true) }) // 60 ms of wall time at full speed
	c.SetBacklog(1000)
	assert.Less(t, c.Speed(), 1000.0/50, "a thousand throttled executions slow time down")
	assert.False(t, c.Now().Before(before), "time never goes backwards when the speed changes")
	time.Sleep(150 * time.Millisecond)
	assert.False(t, fired.Load(), "an armed timer follows the new speed")
	c.SetBacklog(0)
	assert.InDelta(t, 1000, c.Speed(), 0.001, "full speed once the backlog is gone")
	require.Eventually(t, fired.Load, 5*time.Second, time.Millisecond)
	assert.False(t, timer.Stop(), "a fired timer is no longer armed")
}

func TestLoadClockTimersStopResetAndTick(t *testing.T) {
	c := NewLoadClock(1000)
	tm := c.NewTimer(time.Hour)
	assert.True(t, tm.Stop())
	assert.False(t, tm.Reset(time.Second))
	select {
	case <-tm.Chan():
	case <-time.After(5 * time.Second):
		t.Fatal("a reset timer never fired")
	}
	tk := c.NewTicker(time.Second)
	for range 3 {
		select {
		case <-tk.Chan():
		case <-time.After(5 * time.Second):
			t.Fatal("the ticker stopped ticking")
		}
	}
	tk.Stop()
}
