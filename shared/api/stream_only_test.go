package api

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// NewStreams serves the stream routes and nothing else: the other routes
// are unknown paths (404), even those whose path a stream extends.
func TestNewStreamsServesOnlyTheStreams(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	id := h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", fx.onboarding("gpu-01"))["id"].(string)
	h.handler = NewStreams(Config{StreamMaxAge: 50 * time.Millisecond, StreamRetry: 1500 * time.Millisecond}, Deps{Store: h.store,
		Clock: h.clock, Auth: NewStaticTokens(map[string]Principal{adminToken: {Subject: "alice", Admin: true}})})

	r := h.admin("GET", "/api/v1/admin/onboardings/"+id+"/stream", nil)
	require.Equal(t, http.StatusOK, r.status)
	assert.True(t, strings.HasPrefix(string(r.body), "retry: 1500\n\n"), "the retry hint opens the stream: %q", r.body)
	var names []string
	for ev := range readSSE(bufio.NewReader(strings.NewReader(string(r.body)))) {
		names = append(names, ev.name)
	}
	assert.Equal(t, []string{"onboarding", "end"}, names)

	for _, c := range []struct{ method, path string }{
		{"GET", "/api/v1/admin/onboardings/" + id},
		{"GET", "/api/v1/admin/onboardings"},
		{"POST", "/api/v1/admin/onboardings"},
		{"GET", "/api/v1/healthz"},
	} {
		r := h.admin(c.method, c.path, nil)
		assert.Equal(t, http.StatusNotFound, r.status, "%s %s", c.method, c.path)
		code, _ := r.errorOf(t)
		assert.Equal(t, CodeNotFound, code)
	}
	r = h.admin("DELETE", "/api/v1/admin/nodes/n1/stream", nil)
	assert.Equal(t, http.StatusMethodNotAllowed, r.status)
}

// A stream whose request has a deadline (a Lambda invocation's) ends with
// its end event before it, whatever StreamMaxAge says.
func TestStreamEndsBeforeTheRequestDeadline(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	id := h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", fx.onboarding("gpu-01"))["id"].(string)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), streamDeadlineMargin+100*time.Millisecond)
		defer cancel()
		h.handler.ServeHTTP(w, r.WithContext(ctx))
	}))
	defer srv.Close()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/api/v1/admin/onboardings/"+id+"/stream", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	ch := readSSE(bufio.NewReader(resp.Body))
	assert.Equal(t, "onboarding", nextEvent(t, ch).name)
	end := nextEvent(t, ch)
	assert.Equal(t, "end", end.name, "before the deadline, not at the default age of %s", defaultStreamMaxAge)
	assert.JSONEq(t, `{"reason":"max_age"}`, end.data)
}
