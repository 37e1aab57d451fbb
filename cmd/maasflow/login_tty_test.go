package main

import (
	"bytes"
	"io"
	"os"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// On a terminal the password is read with echo off (golang.org/x/term):
// what the operator types never appears on the terminal.
func TestPasswordIsNotEchoedOnATerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	require.NoError(t, err)
	defer func() { _ = ptmx.Close(); _ = tty.Close() }()
	old := os.Stdin
	os.Stdin = tty
	defer func() { os.Stdin = old }()

	// Everything the terminal shows comes back on the master side.
	var screen bytes.Buffer
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(&screen, ptmx); close(copied) }()

	type result struct {
		user, pw string
		err      error
	}
	done := make(chan result, 1)
	var prompts bytes.Buffer
	go func() {
		u, p, err := promptCredentials("alice", &prompts)
		done <- result{u, p, err}
	}()
	// Typed only once ReadPassword has turned echo off, as a person types
	// after the prompt.
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
		require.NoError(t, err)
		if st.Lflag&unix.ECHO == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "echo was never turned off")
		time.Sleep(time.Millisecond)
	}
	_, err = ptmx.Write([]byte("t0p-s3cret\n"))
	require.NoError(t, err)
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the password was not read")
	}
	require.NoError(t, r.err)
	assert.Equal(t, "alice", r.user)
	assert.Equal(t, "t0p-s3cret", r.pw)
	assert.Contains(t, prompts.String(), "password: ")
	_ = tty.Close()
	_ = ptmx.Close()
	<-copied
	assert.NotContains(t, screen.String(), "t0p-s3cret", "echo was off")
}
