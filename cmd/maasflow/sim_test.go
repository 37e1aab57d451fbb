package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunSimServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outR, outW := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"sim", "--listen", "127.0.0.1:0", "--seed", "3", "--time-scale", "60"}, outW, &errb)
		_ = outW.Close()
	}()

	sc := bufio.NewScanner(outR)
	require.True(t, sc.Scan(), "no URL line")
	base, ok := strings.CutPrefix(sc.Text(), "MAAS simulator: ")
	require.True(t, ok, sc.Text())
	require.True(t, sc.Scan(), "no API key line")
	key, ok := strings.CutPrefix(sc.Text(), "API key: ")
	require.True(t, ok, sc.Text())
	assert.Len(t, strings.Split(key, ":"), 3, "a generated key has three parts")
	go func() { _, _ = io.Copy(io.Discard, outR) }()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/2.0/version/", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), `"version":"3.5.4"`)

	parts := strings.Split(key, ":")
	req, err = http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/2.0/users/?op=whoami", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", fmt.Sprintf(`OAuth oauth_consumer_key="%s", oauth_token="%s", oauth_signature="%%26%s", oauth_signature_method="PLAINTEXT", oauth_timestamp="1", oauth_nonce="x"`, parts[0], parts[1], parts[2]))
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the printed key is the accepted one")

	cancel()
	assert.Equal(t, 0, <-done)
	assert.NotContains(t, errb.String(), parts[2], "the secret is printed on stdout only, never logged")
}

func TestRunSimFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"bad key", []string{"--api-key", "just-one-part"}, 2, "--api-key must be consumer:token:secret"},
		{"bad scale", []string{"--time-scale", "0"}, 2, "--time-scale must be positive"},
		{"bad rate", []string{"--error-rate", "1.5"}, 2, "--error-rate must be between 0 and 1"},
		{"unknown flag", []string{"--nope"}, 2, "unknown flag: --nope"},
		{"busy address", []string{"--listen", "256.0.0.1:1"}, 1, "listen on 256.0.0.1:1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			assert.Equal(t, tc.code, run(context.Background(), append([]string{"sim"}, tc.args...), &out, &errb))
			assert.Contains(t, errb.String(), tc.msg)
			assert.Empty(t, out.String())
		})
	}
}
