// Package clock provides the time source every long-running piece of maasflow
// takes by injection: the ASL runtime's waits and timeouts, the MAAS
// simulator's phase durations and enrollment-token expiry. Tests use
// clockwork's fake clock and never sleep; local mode can run a scaled clock so
// that a 30-minute MAAS deployment plays out in seconds.
//
// It imports nothing of maasflow.
package clock

import (
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// Clock is the time source. It is clockwork's interface so that the fake
// clock (clockwork.NewFakeClock) and the real one slot in unchanged.
type Clock = clockwork.Clock

// Timer and Ticker are the clock's timers.
type (
	Timer  = clockwork.Timer
	Ticker = clockwork.Ticker
)

// Real returns the wall clock.
func Real() Clock { return clockwork.NewRealClock() }

// NewFake returns a fake clock starting at t; it moves only on Advance.
func NewFake(t time.Time) *clockwork.FakeClock { return clockwork.NewFakeClockAt(t) }

// Scaled returns a clock that runs factor times faster than the wall clock,
// starting from the wall clock's present. A factor of 1 or less returns the
// wall clock itself.
func Scaled(factor float64) Clock {
	if factor <= 1 {
		return Real()
	}
	return &scaled{factor: factor, origin: time.Now()}
}

type scaled struct {
	factor float64
	origin time.Time
}

func (s *scaled) real(d time.Duration) time.Duration {
	r := time.Duration(float64(d) / s.factor)
	if d > 0 && r <= 0 {
		r = 1
	}
	return r
}

func (s *scaled) Now() time.Time {
	elapsed := time.Since(s.origin)
	return s.origin.Add(time.Duration(float64(elapsed) * s.factor))
}

func (s *scaled) Since(t time.Time) time.Duration { return s.Now().Sub(t) }
func (s *scaled) Until(t time.Time) time.Duration { return t.Sub(s.Now()) }
func (s *scaled) Sleep(d time.Duration)           { time.Sleep(s.real(d)) }

func (s *scaled) After(d time.Duration) <-chan time.Time {
	return s.NewTimer(d).Chan()
}

func (s *scaled) NewTimer(d time.Duration) Timer {
	t := &scaledTimer{clock: s, c: make(chan time.Time, 1)}
	t.timer = time.AfterFunc(s.real(d), t.fire)
	return t
}

func (s *scaled) AfterFunc(d time.Duration, f func()) Timer {
	t := &scaledTimer{clock: s, fn: f}
	t.timer = time.AfterFunc(s.real(d), t.fire)
	return t
}

func (s *scaled) NewTicker(d time.Duration) Ticker {
	return &scaledTicker{clock: s, Ticker: time.NewTicker(s.real(d))}
}

type scaledTimer struct {
	clock *scaled
	mu    sync.Mutex
	timer *time.Timer
	c     chan time.Time
	fn    func()
}

func (t *scaledTimer) fire() {
	if t.fn != nil {
		t.fn()
		return
	}
	select {
	case t.c <- t.clock.Now():
	default:
	}
}

func (t *scaledTimer) Chan() <-chan time.Time { return t.c }

func (t *scaledTimer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.timer.Stop()
}

func (t *scaledTimer) Reset(d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.timer.Reset(t.clock.real(d))
}

type scaledTicker struct {
	clock *scaled
	*time.Ticker
}

func (t *scaledTicker) Chan() <-chan time.Time { return t.C }
func (t *scaledTicker) Reset(d time.Duration)  { t.Ticker.Reset(t.clock.real(d)) }
