package asl

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A worker idle between two calls runs the second; a worker busy with one
// call does not hold up another, which gets a worker of its own.
func TestWorkerPoolReusesIdleWorkersAndNeverQueues(t *testing.T) {
	p := newWorkerPool(time.Minute)

	// The first call starts a worker; once it is idle again, the second
	// call goes to it (the handoff channel has no buffer: only an idle
	// worker can take it).
	done := make(chan struct{})
	p.run(func() { close(done) })
	<-done
	require.Eventually(t, func() bool {
		select {
		case p.work <- func() {}:
			return true
		default:
			return false
		}
	}, 10*time.Second, time.Millisecond, "the first worker never became idle")

	// Two calls at once, the first blocked until the second has run: with a
	// queue instead of a worker per busy call, this would deadlock.
	release := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	p.run(func() { defer wg.Done(); <-release })
	p.run(func() { defer wg.Done(); close(release) })
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		t.Fatal("a call waited for a busy worker")
	}
}

// An idle worker exits after its idle time, so nothing is left to take work.
func TestWorkerPoolIdleWorkersExit(t *testing.T) {
	p := newWorkerPool(time.Millisecond)
	done := make(chan struct{})
	p.run(func() { close(done) })
	<-done
	assert.Eventually(t, func() bool {
		// Sleep past the idle time, then no worker may be waiting.
		time.Sleep(5 * time.Millisecond)
		select {
		case p.work <- func() {}:
			return false
		default:
			return true
		}
	}, 10*time.Second, time.Millisecond)
}
