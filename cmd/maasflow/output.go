package main

import (
	"io"
	"sync"
)

// outputWriter remembers the first write error of the writer it wraps and
// drops every write after it, like bufio.Writer: the commands print freely and
// run reports a failed stdout once, through the exit code.
type outputWriter struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func (o *outputWriter) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	o.err = err
	return n, err
}

// Err is the first write error, or nil.
func (o *outputWriter) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}
