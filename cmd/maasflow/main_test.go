package main

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRunUnknownCommand(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"nope"}, &out, &errb)
	assert.Equal(t, 2, code)
	assert.Contains(t, errb.String(), `unknown command "nope"`)
}

func TestRunHelp(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Equal(t, 0, run(context.Background(), []string{"help"}, &out, &errb))
	assert.Contains(t, out.String(), "local")
}

// failingWriter fails every write, like stdout on a full disk.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

func TestRunFailsWhenStdoutFails(t *testing.T) {
	var errb bytes.Buffer
	assert.Equal(t, 1, run(context.Background(), []string{"help"}, failingWriter{}, &errb))
	assert.Contains(t, errb.String(), "write output: no space left on device")
}
