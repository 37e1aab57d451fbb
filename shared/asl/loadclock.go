package asl

import (
	"math"
	"sync"
	"time"

	"github.com/maasflow/maasflow/shared/clock"
)

// LoadClock is local mode's sped-up clock with a governor: it runs up to
// scale times faster than the wall clock, and slower while executions wait
// to retry invocations the engine throttled (Options.FunctionConcurrency).
//
// A scaled clock measures wall time multiplied by the scale, so when the
// machine is busy the simulated world races ahead of the work: MAAS
// finishes deployments, Retry back-offs and Waits expire, while the
// handlers that should observe them wait for a CPU. The onboarding
// machine's Retry on Lambda.TooManyRequestsException spans 126 simulated
// seconds, which is 0.2 s of wall time at a scale of 600 — far too short
// for a thousand throttled executions to drain. LoadClock measures instead
// the time the machine can simulate: its speed is the scale divided by
// 1 + backlog/backlogCapacity, the backlog being the executions whose last
// invocation was refused and not yet admitted again. A hundred of them
// slow simulated time fiftyfold until the backlog clears; an idle machine
// runs at the full scale.
type LoadClock struct {
	scale float64

	mu       sync.Mutex
	rate     float64
	simBase  time.Time
	wallBase time.Time
	backlog  int64
	timers   map[*loadTimer]struct{}
}

// backlogCapacity is the backlog at which the clock runs at half speed.
const backlogCapacity = 2

var _ clock.Clock = (*LoadClock)(nil)

// NewLoadClock returns a LoadClock starting at the wall clock's present.
func NewLoadClock(scale float64) *LoadClock {
	if scale < 1 {
		scale = 1
	}
	now := time.Now()
	return &LoadClock{scale: scale, rate: scale, simBase: now, wallBase: now, timers: map[*loadTimer]struct{}{}}
}

// SetBacklog sets the number of executions waiting to retry a throttled
// invocation (the engine calls it).
func (c *LoadClock) SetBacklog(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.backlog = max(n, 0)
	c.retune(time.Now())
}

// Speed is how many times faster than the wall clock the clock runs now.
func (c *LoadClock) Speed() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rate
}

// retune sets the speed from the backlog; the caller holds c.mu. Timers
// are re-armed only when the speed moved by more than a tenth (or back to
// the full scale), so a stream of small changes costs little.
func (c *LoadClock) retune(now time.Time) {
	rate := max(c.scale/(1+float64(c.backlog)/backlogCapacity), 1)
	if rate == c.rate || rate != c.scale && math.Abs(rate-c.rate) < c.rate/10 {
		return
	}
	c.simBase = c.nowAt(now)
	c.wallBase = now
	c.rate = rate
	for t := range c.timers {
		t.armLocked()
	}
}

func (c *LoadClock) nowAt(wall time.Time) time.Time {
	return c.simBase.Add(time.Duration(float64(wall.Sub(c.wallBase)) * c.rate))
}

// wallFor converts a simulated duration to wall time at the current speed.
func (c *LoadClock) wallFor(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return max(time.Duration(float64(d)/c.rate), time.Nanosecond)
}

// Now returns the simulated present.
func (c *LoadClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowAt(time.Now())
}

func (c *LoadClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *LoadClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// Sleep blocks for d of simulated time.
func (c *LoadClock) Sleep(d time.Duration) { <-c.After(d) }

// After sends the simulated time once d has passed.
func (c *LoadClock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).Chan() }

// NewTimer fires its channel after d of simulated time.
func (c *LoadClock) NewTimer(d time.Duration) clock.Timer {
	t := &loadTimer{c: c, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// AfterFunc runs f in its own goroutine after d of simulated time.
func (c *LoadClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := &loadTimer{c: c, fn: f}
	t.Reset(d)
	return t
}

// NewTicker ticks every d of simulated time.
func (c *LoadClock) NewTicker(d time.Duration) clock.Ticker {
	tk := &loadTicker{clock: c, ch: make(chan time.Time, 1), period: d}
	tick := func() {
		select {
		case tk.ch <- c.Now():
		default:
		}
		tk.mu.Lock()
		defer tk.mu.Unlock()
		if !tk.stopped {
			tk.t.Reset(tk.period)
		}
	}
	tk.mu.Lock()
	defer tk.mu.Unlock()
	tk.t = &loadTimer{c: c, fn: tick}
	tk.t.Reset(d)
	return tk
}

// loadTimer is a timer with a simulated deadline, re-armed on the wall
// clock whenever the speed changes.
type loadTimer struct {
	c        *LoadClock
	ch       chan time.Time
	fn       func()
	deadline time.Time
	wall     *time.Timer
	armed    bool
}

// armLocked (re)starts the wall timer for the deadline at the current
// speed; the caller holds c.mu.
func (t *loadTimer) armLocked() {
	if t.wall != nil {
		t.wall.Stop()
	}
	d := t.c.wallFor(t.deadline.Sub(t.c.nowAt(time.Now())))
	t.wall = time.AfterFunc(d, t.fire)
}

func (t *loadTimer) fire() {
	c := t.c
	c.mu.Lock()
	if !t.armed {
		c.mu.Unlock()
		return
	}
	now := c.nowAt(time.Now())
	if now.Before(t.deadline) { // re-armed meanwhile at another speed
		t.armLocked()
		c.mu.Unlock()
		return
	}
	t.armed = false
	delete(c.timers, t)
	c.mu.Unlock()
	if t.fn != nil {
		go t.fn()
		return
	}
	select {
	case t.ch <- now:
	default:
	}
}

func (t *loadTimer) Chan() <-chan time.Time { return t.ch }

func (t *loadTimer) Stop() bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	was := t.armed
	t.armed = false
	delete(c.timers, t)
	if t.wall != nil {
		t.wall.Stop()
	}
	return was
}

func (t *loadTimer) Reset(d time.Duration) bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	was := t.armed
	t.deadline = c.nowAt(time.Now()).Add(d)
	t.armed = true
	c.timers[t] = struct{}{}
	t.armLocked()
	return was
}

type loadTicker struct {
	clock   *LoadClock
	mu      sync.Mutex
	t       *loadTimer
	ch      chan time.Time
	period  time.Duration
	stopped bool
}

func (tk *loadTicker) Chan() <-chan time.Time { return tk.ch }

func (tk *loadTicker) Reset(d time.Duration) {
	tk.mu.Lock()
	tk.period, tk.stopped = d, false
	tk.mu.Unlock()
	tk.t.Reset(d)
}

func (tk *loadTicker) Stop() {
	tk.mu.Lock()
	tk.stopped = true
	tk.mu.Unlock()
	tk.t.Stop()
}
