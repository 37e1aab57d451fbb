package asl

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVirtualClockMovesOnlyWhenIdle(t *testing.T) {
	vc := NewVirtualClock(epoch)
	fired := make(chan time.Time, 3)
	vc.Busy()
	vc.AfterFunc(2*time.Second, func() { fired <- vc.Now() })
	vc.AfterFunc(time.Second, func() { fired <- vc.Now() })
	stopped := vc.AfterFunc(time.Second, func() { fired <- time.Time{} })
	assert.True(t, stopped.Stop())
	assert.Equal(t, epoch, vc.Now(), "time holds while a participant is busy")
	vc.Idle()
	first := <-fired
	second := <-fired
	assert.Equal(t, epoch.Add(time.Second), first)
	assert.Equal(t, epoch.Add(2*time.Second), second)
	assert.Equal(t, 2*time.Second, vc.Since(epoch))
	select {
	case <-fired:
		t.Fatal("a stopped timer fired")
	default:
	}
}

func TestVirtualClockChannelTimersAndTickers(t *testing.T) {
	vc := NewVirtualClock(epoch)
	vc.Busy()
	tm := vc.NewTimer(time.Minute)
	tk := vc.NewTicker(10 * time.Second)
	vc.Idle()
	got := <-tk.Chan()
	assert.Equal(t, epoch.Add(10*time.Second), got)
	tk.Stop()
	require.Equal(t, epoch.Add(time.Minute), <-tm.Chan())
	assert.False(t, tm.Stop())
	// The ticker kept the clock moving until Stop, so time may be past the
	// minute by now; it can never be before it.
	assert.LessOrEqual(t, vc.Until(epoch.Add(time.Minute)), time.Duration(0))
}
