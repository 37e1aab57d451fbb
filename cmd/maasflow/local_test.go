package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunLocalDemo starts `maasflow local --demo` on free ports and checks
// the banner tells a newcomer where the API is, how to authenticate and
// how to onboard a demo host, and that what it prints works.
func TestRunLocalDemo(t *testing.T) {
	t.Setenv("MAASFLOW_ADMIN_TOKEN", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outR, outW := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"local", "--listen", "127.0.0.1:0", "--sim-listen", "127.0.0.1:0",
			"--data-dir", t.TempDir(), "--time-scale", "60", "--demo", "--log-level", "error"}, outW, &errb)
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
	text := banner.String()
	require.Contains(t, text, "Ctrl-C stops it.", "banner never finished; stderr: %s", errb.String())

	apiURL := regexp.MustCompile(`admin API\s+(http://127\.0\.0\.1:\d+)/api/v1/admin/`).FindStringSubmatch(text)
	token := regexp.MustCompile(`admin token ([0-9a-f]{48})`).FindStringSubmatch(text)
	require.Len(t, apiURL, 2, text)
	require.Len(t, token, 2, text)
	assert.Regexp(t, `MAAS sim\s+http://127\.0\.0\.1:\d+/MAAS\s+API key \S+:\S+:\S+`, text)
	assert.Contains(t, text, "Onboard gpu-node-01")
	assert.Contains(t, text, "onboard --site demo --profile gpu-jammy --sku h100-8x --hostname gpu-node-01 --ipmi-ip 10.20.0.101 --wait")
	assert.Contains(t, text, `"hostname":"gpu-node-01","ipmi_ip":"10.20.0.101"`)

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, apiURL[1]+"/api/v1/admin/skus/h100-8x", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token[1])
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the printed token works and the demo SKU exists")

	cancel()
	assert.Equal(t, 0, <-done)
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
			assert.Equal(t, 2, run(context.Background(), append([]string{"local"}, tc.args...), &out, &errb))
			assert.Contains(t, errb.String(), tc.msg)
		})
	}
}
