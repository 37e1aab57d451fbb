package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runningLocal is a `maasflow local` started by a test.
type runningLocal struct {
	banner   string
	cancel   context.CancelFunc
	done     chan int
	stderr   *syncBuffer
	stopOnce sync.Once
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startLocal runs `maasflow local` with args on free ports and returns once
// its banner is complete.
func startLocal(t *testing.T, args ...string) *runningLocal {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	outR, outW := io.Pipe()
	l := &runningLocal{cancel: cancel, done: make(chan int, 1), stderr: &syncBuffer{}}
	go func() {
		l.done <- run(ctx, append([]string{"local", "--listen", "127.0.0.1:0", "--sim-listen", "127.0.0.1:0", "--node-listen", "127.0.0.1:0"}, args...), outW, l.stderr)
		_ = outW.Close()
	}()
	var banner strings.Builder
	sc := bufio.NewScanner(outR)
	for sc.Scan() {
		banner.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "Ctrl-C stops it.") {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	l.banner = banner.String()
	require.Contains(t, l.banner, "Ctrl-C stops it.", "banner never finished; stderr: %s", l.stderr.String())
	t.Cleanup(l.stop)
	return l
}

func (l *runningLocal) stop() {
	l.stopOnce.Do(func() {
		l.cancel()
		<-l.done
	})
}

var (
	bannerAPI     = regexp.MustCompile(`admin API\s+(http://127\.0\.0\.1:\d+)/api/v1/admin/`)
	bannerToken   = regexp.MustCompile(`admin token ([0-9a-f]{48})`)
	bannerCommand = regexp.MustCompile(`(?m)^  go run \./cmd/maasflow (onboard .*)$`)
)

func (l *runningLocal) match(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	m := re.FindStringSubmatch(l.banner)
	require.Len(t, m, 2, "%s not in the banner:\n%s", re, l.banner)
	return m[1]
}

// stagesOfACleanOnboarding are the stages an onboarding without RoCE goes
// through, in order.
var stagesOfACleanOnboarding = []string{
	"validate", "discover", "commission", "wait_ready", "storage", "pxe_preflight", "hardening",
	"deploy", "render_payload", "wait_deployed", "wait_enrollment", "completion_gates",
}

// TestMakeRunDemo follows `make run`: `maasflow local --demo` at the demo's
// default time scale, then the command its banner prints, which must reach
// a completed onboarding. Meanwhile a batch of the other two demo hosts
// (one of whose first deploy fails) is watched on a pseudo-terminal, where
// every stage of that node, its MAAS events and the classified deploy
// retry must show. A restart on the
// same data dir keeps the token and offers a host that can still be
// onboarded; --reset starts from empty.
func TestMakeRunDemo(t *testing.T) {
	t.Setenv("MAASFLOW_ADMIN_TOKEN", "")
	dataDir := t.TempDir()
	l := startLocal(t, "--demo", "--data-dir", dataDir, "--log-level", "debug")
	apiURL, token := l.match(t, bannerAPI), l.match(t, bannerToken)
	assert.Contains(t, l.banner, "40x faster than real time: an onboarding takes about 20s (--time-scale 1 for real time)")
	assert.Contains(t, l.banner, "log file    "+filepath.Join(dataDir, "maasflow.log"))
	assert.Contains(t, l.banner, "console     "+apiURL+"/console/", "the banner names the console")
	assert.Regexp(t, `MAAS sim\s+http://127\.0\.0\.1:\d+/MAAS\s+API key \S+:\S+:\S+`, l.banner)
	command := l.match(t, bannerCommand)
	assert.Equal(t, "onboard --site demo --profile gpu-jammy --sku h100-8x --hostname gpu-node-01 --ipmi-ip 10.20.0.101 --wait", command)
	assert.Contains(t, l.banner, `"hostname":"gpu-node-01","ipmi_ip":"10.20.0.101"`, "the curl form")

	t.Setenv("MAASFLOW_API_URL", apiURL)
	t.Setenv("MAASFLOW_ADMIN_TOKEN", token)
	// A generous bound, not a speed assertion: at the demo's time scale an
	// onboarding takes well under a minute.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var (
		wg          sync.WaitGroup
		bannerCode  int
		bannerOut   bytes.Buffer
		bannerErr   bytes.Buffer
		ptyCode     int
		ptyOutput   syncBuffer
		ptmx, ttyFD *os.File
	)
	ptmx, ttyFD, err := pty.Open()
	require.NoError(t, err, "open a pseudo-terminal")
	require.NoError(t, pty.Setsize(ptmx, &pty.Winsize{Rows: 50, Cols: 200}))
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(&ptyOutput, ptmx)
		close(copied)
	}()
	wg.Add(2)
	go func() {
		defer wg.Done()
		bannerCode = run(ctx, strings.Fields(command+" --interval 1s"), &bannerOut, &bannerErr)
	}()
	rack := filepath.Join(t.TempDir(), "rack.csv")
	require.NoError(t, os.WriteFile(rack, []byte("# the demo's other two hosts\nipmi_ip,hostname\n10.20.0.102,gpu-node-02\n10.20.0.103,gpu-node-03\n"), 0o600))
	go func() {
		defer wg.Done()
		ptyCode = run(ctx, []string{"onboard", "--site", "demo", "--profile", "gpu-jammy", "--sku", "h100-8x",
			"--csv", rack, "--wait", "--interval", "1s"}, ttyFD, ttyFD)
	}()
	wg.Wait()
	_ = ttyFD.Close()
	<-copied
	_ = ptmx.Close()

	require.Equal(t, 0, bannerCode, "the banner's command completes\nstdout: %s\nstderr: %s\nlocal: %s", bannerOut.String(), bannerErr.String(), l.stderr.String())
	assert.Regexp(t, `onboarding \S+ completed: node \S+, MAAS system \S+`, bannerOut.String())

	// The batch was watched on a terminal: every stage of gpu-node-03,
	// whose first deploy fails, scrolled above a live table.
	screen := ptyOutput.String()
	require.Equal(t, 0, ptyCode, "watched on a terminal: %s", screen)
	const node = `Z  gpu-node-03\s+`
	for _, stage := range stagesOfACleanOnboarding {
		assert.Regexp(t, node+`▶ enter  `+stage+`\s`, screen, "stage %s entered", stage)
		assert.Regexp(t, node+`◀ exit   `+stage+`\s+ok`, screen, "stage %s left", stage)
	}
	assert.Regexp(t, node+`◀ exit   wait_deployed\s+failed: .*DataSource`, screen, "the failed first deploy")
	assert.Regexp(t, node+`note     wait_deployed\s+classification: .*class datasource, retry`, screen, "the classified retry")
	assert.Regexp(t, node+`▶ enter  recover_deploy`, screen)
	assert.Regexp(t, node+`▶ enter  render_payload\s+deploy 2`, screen, "the second deploy")
	assert.Regexp(t, node+`MAAS     \S+\s+INFO: Commissioning`, screen, "MAAS status changes")
	assert.Regexp(t, node+`MAAS     \S+\s+INFO: Deployed`, screen)
	assert.Regexp(t, node+`◀ exit   wait_enrollment\s+ok: node \S+ enrolled`, screen, "the enrollment")
	assert.Regexp(t, node+`▶ enter  done`, screen)
	assert.Contains(t, screen, "\x1b[", "a live table, redrawn in place")
	assert.Regexp(t, `\] 2/2 ended`, screen, "with a progress bar")
	assert.Regexp(t, `gpu-node-03\s+completed\s+done\s+Deployed\s+1\s+\d+:\d\d`, screen, "the table's last state")
	assert.Contains(t, screen, "ended: completed=2")

	// Only warnings reach the terminal; the log file has the rest.
	logged, err := os.ReadFile(filepath.Join(dataDir, "maasflow.log"))
	require.NoError(t, err)
	assert.Contains(t, string(logged), `"level":"DEBUG"`)
	assert.Regexp(t, `"msg":"garbage collector tuned for local mode","setting":"GOGC=\d+, memory limit \d+ MiB"`, string(logged))
	assert.NotContains(t, l.stderr.String(), "level=INFO")

	// Restart on the same data dir: same token, and the banner's command
	// names a host that can still be onboarded.
	l.stop()
	t.Setenv("MAASFLOW_ADMIN_TOKEN", "")
	l = startLocal(t, "--demo", "--data-dir", dataDir)
	assert.Equal(t, token, l.match(t, bannerToken), "the token survives a restart")
	command = l.match(t, bannerCommand)
	assert.Contains(t, command, "--hostname gpu-node-04 ", "gpu-node-01 to 03 were onboarded")
	t.Setenv("MAASFLOW_API_URL", l.match(t, bannerAPI))
	t.Setenv("MAASFLOW_ADMIN_TOKEN", token)
	var out, errb bytes.Buffer
	code := run(ctx, strings.Fields(strings.TrimSuffix(command, " --wait")), &out, &errb)
	assert.Equal(t, 0, code, "the banner's command works after a restart: %s", errb.String())
	assert.Contains(t, out.String(), "accepted")

	// --reset: a new token, and every demo host is offered again.
	l.stop()
	t.Setenv("MAASFLOW_ADMIN_TOKEN", "")
	l = startLocal(t, "--demo", "--reset", "--data-dir", dataDir)
	assert.NotEqual(t, token, l.match(t, bannerToken))
	assert.Contains(t, l.match(t, bannerCommand), "--hostname gpu-node-01 ")
	newToken := l.match(t, bannerToken)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.match(t, bannerAPI)+"/api/v1/admin/onboardings", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+newToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.JSONEq(t, `{"items":[],"next_cursor":""}`, string(body), "no onboarding survives --reset")
}

func TestRunLocalFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"bad time scale", []string{"--time-scale", "0"}, "--time-scale must be positive"},
		{"bad log level", []string{"--log-level", "loud"}, "--log-level"},
		{"stray argument", []string{"extra"}, `unexpected argument "extra"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			assert.Equal(t, 2, run(context.Background(), append([]string{"local", "--data-dir", t.TempDir()}, tc.args...), &out, &errb))
			assert.Contains(t, errb.String(), tc.msg)
		})
	}
}

func TestRunLocalResetRefusesAForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "thesis.tex"), []byte("years of work"), 0o600))
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"local", "--reset", "--data-dir", dir, "--listen", "127.0.0.1:0", "--sim-listen", "127.0.0.1:0", "--node-listen", "127.0.0.1:0"}, &out, &errb)
	assert.Equal(t, 1, code)
	assert.Contains(t, errb.String(), "holds none of maasflow's files")
	_, err := os.Stat(filepath.Join(dir, "thesis.tex"))
	assert.NoError(t, err, "nothing was removed")
}
