package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// `maasflow local --loki-url` pushes its log to Loki's push API: the
// stack's own records, labelled with service_name and level only (and site
// when a record names one).
func TestLocalPushesItsLogToLoki(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	labels := map[string]bool{}
	loki := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/loki/api/v1/push" {
			http.NotFound(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var p struct {
			Streams []struct {
				Stream map[string]string `json:"stream"`
				Values [][]any           `json:"values"`
			} `json:"streams"`
		}
		if err := json.Unmarshal(b, &p); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, s := range p.Streams {
			for k := range s.Stream {
				labels[k] = true
			}
			for _, v := range s.Values {
				lines = append(lines, v[1].(string))
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer loki.Close()

	l := startLocal(t, "--data-dir", t.TempDir(), "--loki-url", loki.URL)
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(lines)
		mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	l.stop()
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, lines, "the stack's log reached Loki")
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &rec), "a line is the log file's JSON record")
	assert.NotEmpty(t, rec["msg"])
	for k := range labels {
		assert.Contains(t, []string{"service_name", "level", "site"}, k, "only low-cardinality labels")
	}
	assert.NotContains(t, strings.Join(lines, "\n"), bannerTokenOf(l.banner), "the admin token never reaches the log")

	var out, errb bytes.Buffer
	assert.Equal(t, 2, run(context.Background(), []string{"local", "--data-dir", t.TempDir(), "--loki-url", "loki:3100"}, &out, &errb))
	assert.Contains(t, errb.String(), "--loki-url")
}

func bannerTokenOf(banner string) string {
	m := bannerToken.FindStringSubmatch(banner)
	if len(m) < 2 {
		return "no-token-in-banner"
	}
	return m[1]
}

// The graph route of a local execution needs the admin token and names
// only executions of this stack.
func TestLocalExecutionGraphRoute(t *testing.T) {
	l := startLocal(t, "--data-dir", t.TempDir())
	api := l.match(t, bannerAPI)
	tok := bannerTokenOf(l.banner)
	get := func(token, arn string) int {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, api+"/_local/executions/graph?execution="+arn, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusUnauthorized, get("", "x"))
	assert.Equal(t, http.StatusUnauthorized, get("wrong", "x"))
	assert.Equal(t, http.StatusNotFound, get(tok, "arn:aws:states:local:000000000000:execution:onboarding:nope"))
}
