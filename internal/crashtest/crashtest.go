// Package crashtest kills a process at work with SIGKILL, for the tests
// that check local mode's files keep everything it acknowledged.
package crashtest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// KillWhen runs the test binary again as a child process in dir with env
// set to 1 (its TestMain plays the process at work when it sees env, and
// prints a line for each thing it got acknowledged), kills it with SIGKILL
// as soon as enough holds for the lines printed so far, and returns every
// line the child printed before it died. enough is called with the lines
// read so far, under a lock; it fails the test after a minute.
func KillWhen(t testing.TB, dir, env string, enough func(lines []string) bool) []string {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), os.Args[0], "-test.run=^$") //nolint:gosec // G204: the test binary itself
	cmd.Env = append(os.Environ(), env+"=1")
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	var (
		mu    sync.Mutex
		lines []string
	)
	read := make(chan struct{})
	go func() {
		defer close(read)
		for sc := bufio.NewScanner(out); sc.Scan(); {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
		}
	}()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return enough(lines)
	}, time.Minute, 5*time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	<-read // every line the child printed before it died
	_ = cmd.Wait()
	return lines
}

// PlayChild is the child's side of KillWhen, for a TestMain to call first:
// when env is set, this test binary is the process at work, so it runs
// work with its working directory (the dir KillWhen was given) and exits
// when work returns; otherwise it returns at once.
func PlayChild(env string, work func(dir string)) {
	if os.Getenv(env) == "" {
		return
	}
	dir, err := os.Getwd()
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	work(dir)
	os.Exit(0)
}
