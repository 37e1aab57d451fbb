package asl

import "time"

// handlerWorkers runs task handlers on goroutines kept between
// invocations. A handler's call (an activity: its store reads, its MAAS
// client, JSON both ways) needs tens of kilobytes of stack, and a fresh
// goroutine starts with a few and copies its whole stack each time it
// doubles; on one goroutine per invocation that copying was a twentieth of
// a clean onboarding's CPU. A kept worker starts the next call with the
// stack the last one grew.
var handlerWorkers = newWorkerPool(10 * time.Second)

// workerPool hands functions to idle workers, starting a worker when none
// is idle; a worker idle for longer than idle exits, so a burst of
// concurrent invocations leaves no goroutines behind for long.
type workerPool struct {
	work chan func() // unbuffered: a send succeeds only into an idle worker
	idle time.Duration
}

func newWorkerPool(idle time.Duration) *workerPool {
	return &workerPool{work: make(chan func()), idle: idle}
}

// run runs f on an idle worker, or on a new one; it never waits.
func (p *workerPool) run(f func()) {
	select {
	case p.work <- f:
	default:
		go p.worker(f)
	}
}

func (p *workerPool) worker(f func()) {
	f()
	t := time.NewTimer(p.idle)
	defer t.Stop()
	for {
		select {
		case f := <-p.work:
			f()
			t.Reset(p.idle)
		case <-t.C:
			return
		}
	}
}
