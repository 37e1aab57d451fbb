package asl

import (
	"container/heap"
	"sync"
	"time"

	"github.com/maasflow/maasflow/shared/clock"
)

// VirtualClock is a clock whose time moves only when everything that uses it
// is idle: when the last busy participant goes idle, the clock jumps to the
// earliest pending timer and fires it. An Engine built with a VirtualClock
// marks each running state-machine thread busy, so Wait states, retry
// back-offs and timeouts take no wall-clock time at all, yet fire in exactly
// the order and at exactly the instants they would on the real clock.
//
// Other components (a simulator, a test's fake MAAS) may share the clock:
// their AfterFunc callbacks count as busy while they run, so time does not
// move under them. A goroutine blocked on a channel timer (NewTimer, After,
// Sleep) is not counted; such a component should call Busy/Idle itself if
// its work must finish before time moves on.
//
// A task token that is waiting for SendTaskSuccess counts as busy: the
// outside world is expected to answer it, and jumping to its heartbeat or
// timeout would fail it before anyone could.
type VirtualClock struct {
	mu     sync.Mutex
	now    time.Time
	busy   int
	seq    uint64
	timers timerHeap
}

var _ clock.Clock = (*VirtualClock)(nil)

// NewVirtualClock returns a virtual clock reading start.
func NewVirtualClock(start time.Time) *VirtualClock {
	return &VirtualClock{now: start}
}

// Now returns the virtual time.
func (c *VirtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Since returns the virtual time elapsed since t.
func (c *VirtualClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Until returns the virtual time left until t.
func (c *VirtualClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// Busy marks one more participant as working: time holds still until it
// calls Idle.
func (c *VirtualClock) Busy() {
	c.mu.Lock()
	c.busy++
	c.mu.Unlock()
}

// Idle marks one participant as done working. When none is left busy, the
// clock jumps to the earliest timer and fires every timer due at that
// instant. Time moves only here: a timer scheduled while nothing is busy
// waits for the next participant to go idle.
func (c *VirtualClock) Idle() {
	c.mu.Lock()
	c.busy--
	fire := c.advanceLocked()
	c.mu.Unlock()
	for _, t := range fire {
		t.fire()
	}
}

// advanceLocked pops the timers due at the next instant when nothing is busy.
// Each popped timer is counted busy until its callback has run, so the clock
// cannot race past what the callback wakes.
func (c *VirtualClock) advanceLocked() []*vtimer {
	if c.busy > 0 || len(c.timers) == 0 {
		return nil
	}
	at := c.timers[0].at
	if at.After(c.now) {
		c.now = at
	}
	var due []*vtimer
	for len(c.timers) > 0 && !c.timers[0].at.After(c.now) {
		t := heap.Pop(&c.timers).(*vtimer)
		t.index = -1
		c.busy++
		due = append(due, t)
	}
	return due
}

// AfterFunc runs f in its own goroutine once the virtual time reaches now+d.
// The clock counts f as busy while it runs.
func (c *VirtualClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	return c.schedule(d, f, nil)
}

// NewTimer returns a timer whose channel receives the virtual time once it
// is due.
func (c *VirtualClock) NewTimer(d time.Duration) clock.Timer {
	return c.schedule(d, nil, make(chan time.Time, 1))
}

// After is NewTimer(d).Chan().
func (c *VirtualClock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).Chan() }

// Sleep blocks until the virtual time has moved d forward.
func (c *VirtualClock) Sleep(d time.Duration) { <-c.After(d) }

// NewTicker returns a ticker driven by the virtual time.
func (c *VirtualClock) NewTicker(d time.Duration) clock.Ticker {
	if d <= 0 {
		d = 1
	}
	tk := &vticker{c: make(chan time.Time, 1), period: d}
	tk.clock = c
	tk.arm()
	return tk
}

func (c *VirtualClock) schedule(d time.Duration, f func(), ch chan time.Time) *vtimer {
	t := &vtimer{clock: c, fn: f, ch: ch, index: -1}
	c.mu.Lock()
	c.armLocked(t, d)
	c.mu.Unlock()
	return t
}

func (c *VirtualClock) armLocked(t *vtimer, d time.Duration) {
	if d < 0 {
		d = 0
	}
	c.seq++
	t.at = c.now.Add(d)
	t.seq = c.seq
	heap.Push(&c.timers, t)
}

type vtimer struct {
	clock *VirtualClock
	at    time.Time
	seq   uint64
	index int
	fn    func()
	ch    chan time.Time
}

// fire runs the timer's action; the clock counted it busy when it was popped.
func (t *vtimer) fire() {
	if t.fn != nil {
		go func() {
			t.fn()
			t.clock.Idle()
		}()
		return
	}
	now := t.clock.Now()
	select {
	case t.ch <- now:
	default:
	}
	t.clock.Idle()
}

func (t *vtimer) Chan() <-chan time.Time { return t.ch }

func (t *vtimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&c.timers, t.index)
	t.index = -1
	return true
}

func (t *vtimer) Reset(d time.Duration) bool {
	c := t.clock
	c.mu.Lock()
	active := t.index >= 0
	if active {
		heap.Remove(&c.timers, t.index)
	}
	c.armLocked(t, d)
	c.mu.Unlock()
	return active
}

type vticker struct {
	clock  *VirtualClock
	c      chan time.Time
	period time.Duration
	mu     sync.Mutex
	timer  clock.Timer
}

func (tk *vticker) arm() {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	tk.timer = tk.clock.AfterFunc(tk.period, tk.tick)
}

func (tk *vticker) tick() {
	select {
	case tk.c <- tk.clock.Now():
	default:
	}
	tk.mu.Lock()
	stopped := tk.timer == nil
	tk.mu.Unlock()
	if !stopped {
		tk.arm()
	}
}

func (tk *vticker) Chan() <-chan time.Time { return tk.c }

func (tk *vticker) Reset(d time.Duration) {
	tk.mu.Lock()
	if tk.timer != nil {
		tk.timer.Stop()
	}
	tk.period = d
	tk.mu.Unlock()
	tk.arm()
}

func (tk *vticker) Stop() {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	if tk.timer != nil {
		tk.timer.Stop()
		tk.timer = nil
	}
}

type timerHeap []*vtimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].seq < h[j].seq
	}
	return h[i].at.Before(h[j].at)
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *timerHeap) Push(x any) {
	t := x.(*vtimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	n := len(old)
	t := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return t
}
