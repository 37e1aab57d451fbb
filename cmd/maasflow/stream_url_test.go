package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A context's stream URL (on AWS, the stack's StreamUrl output) is where
// watch opens its stream; the API named by the context gets none of it.
// An API named by --api-url streams at its own URL.
func TestWatchStreamsAtTheContextsStreamURL(t *testing.T) {
	var mu sync.Mutex
	var apiPaths, streamPaths []string
	apiSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		apiPaths = append(apiPaths, r.URL.Path)
		mu.Unlock()
		if r.URL.Path == "/api/v1/admin/onboardings" { // watch resolves a hostname or id
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"items":[{"id":"ob-1","hostname":"gpu-01","status":"running","stage":"deploy"}]}`)
			return
		}
		if r.URL.Path == "/api/v1/admin/onboardings/ob-1" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"ob-1","hostname":"gpu-01","status":"running","stage":"deploy","timeline":[]}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		http.Error(w, `{"error":{"code":"streams_unsupported","message":"no streams here"}}`, http.StatusNotImplemented)
	}))
	defer apiSrv.Close()
	streamSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		streamPaths = append(streamPaths, r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: onboarding\ndata: {\"id\":\"ob-1\",\"hostname\":\"gpu-01\",\"status\":\"completed\",\"stage\":\"done\",\"timeline\":[]}\n\n")
	}))
	defer streamSrv.Close()

	home := t.TempDir()
	env := map[string]string{"XDG_CONFIG_HOME": home, "MAASFLOW_ADMIN_TOKEN": "tok-watch"}
	res := runAdminTest(t, env, adminInvocation{}, "config", "set-context", "aws", "--api-url", apiSrv.URL, "--stream-url", streamSrv.URL+"/")
	require.Equal(t, 0, res.code, res.stderr)
	raw, err := os.ReadFile(filepath.Join(home, "maasflow", "config.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(raw), "stream-url: "+streamSrv.URL+"/")

	res = runAdminTest(t, env, adminInvocation{}, "onboardings", "watch", "ob-1")
	mu.Lock()
	assert.Contains(t, streamPaths, "/api/v1/admin/onboardings/ob-1/stream", "stderr: %s; api paths: %v", res.stderr, apiPaths)
	assert.NotContains(t, apiPaths, "/api/v1/admin/onboardings/ob-1/stream", "api paths: %v", apiPaths)
	mu.Unlock()
	assert.Equal(t, 0, res.code, res.stderr)
}
