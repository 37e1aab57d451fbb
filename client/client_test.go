package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/client"
	"github.com/maasflow/maasflow/shared/domain"
)

// fakeAPI answers from a handler function and records what it was sent.
type fakeAPI struct {
	mu    sync.Mutex
	seen  []*http.Request
	srv   *httptest.Server
	bodys []string
}

func newFake(t *testing.T, h http.HandlerFunc) (*fakeAPI, *client.Client) {
	t.Helper()
	f := &fakeAPI{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.seen = append(f.seen, r)
		f.bodys = append(f.bodys, string(b))
		f.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(f.srv.Close)
	c, err := client.New(f.srv.URL+"/", client.WithToken("tok-1"))
	require.NoError(t, err)
	return f, c
}

func (f *fakeAPI) requests() []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*http.Request(nil), f.seen...)
}

func TestNewRefusesABaseURLThatIsNoHTTPURL(t *testing.T) {
	for _, u := range []string{"ftp://x", "http://", "http://h/?q=1", "http://h/#f", "::"} {
		_, err := client.New(u)
		require.Error(t, err, u)
	}
	c, err := client.New("https://api.example/prefix/")
	require.NoError(t, err)
	assert.Equal(t, "https://api.example/prefix", c.BaseURL())
}

func TestTypedCallSendsTokenBodyAndEscapedPath(t *testing.T) {
	f, c := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"id":"a/b","name":"lab","status":"disabled","policy":{"auto_claim_new":true}}`)
	})
	var raw []byte
	s, err := c.DisableSite(context.Background(), "a/b", client.RawResponse(&raw))
	require.NoError(t, err)
	assert.Equal(t, "a/b", s.ID)
	assert.Equal(t, "disabled", s.Status)
	require.NotNil(t, s.Policy.AutoClaimNew)
	assert.True(t, *s.Policy.AutoClaimNew)
	assert.JSONEq(t, `{"id":"a/b","name":"lab","status":"disabled","policy":{"auto_claim_new":true}}`, string(raw))

	r := f.requests()[0]
	assert.Equal(t, http.MethodDelete, r.Method)
	assert.Equal(t, "/api/v1/admin/maas-sites/a%2Fb", r.URL.EscapedPath())
	assert.Equal(t, "Bearer tok-1", r.Header.Get("Authorization"))

	_, err = c.CreateSKU(context.Background(), client.SKUCreate{ID: "h100", GPUModel: "H100", GPUsTotal: 8})
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"h100","gpu_model":"H100","gpus_total":8}`, f.bodys[1])
	assert.Equal(t, "application/json", f.requests()[1].Header.Get("Content-Type"))
}

func TestErrorsCarryTheAPIsCodeFieldAndCorrelationID(t *testing.T) {
	_, c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(client.HeaderCorrelationID, "corr-header")
		switch r.URL.Path {
		case "/api/v1/admin/skus":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"code":"invalid_request","message":"gpus_total must be 1..64","field":"gpus_total","correlation_id":"corr-body"}}`)
		default:
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, `<html>bad gateway</html>`)
		}
	})
	_, err := c.CreateSKU(context.Background(), client.SKUCreate{ID: "x", GPUsTotal: 99})
	var apiErr *client.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusBadRequest, apiErr.Status)
	assert.Equal(t, client.CodeInvalidRequest, apiErr.Code)
	assert.Equal(t, "gpus_total", apiErr.Field)
	assert.Equal(t, "corr-body", apiErr.CorrelationID)
	assert.True(t, client.IsCode(err, client.CodeInvalidRequest))
	assert.Equal(t, "invalid_request: gpus_total must be 1..64 (correlation_id corr-body)", err.Error())

	_, err = c.GetSite(context.Background(), "s")
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "http_502", apiErr.Code)
	assert.Equal(t, "corr-header", apiErr.CorrelationID, "the header names the request when the body cannot")
	assert.True(t, client.IsStatus(err, http.StatusBadGateway))
}

func TestTokenFuncIsAskedPerRequestAndItsErrorStopsTheCall(t *testing.T) {
	f, _ := newFake(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"items":[]}`) })
	n := 0
	c, err := client.New(f.srv.URL, client.WithTokenFunc(func(context.Context) (string, error) {
		n++
		if n > 1 {
			return "", errors.New("session expired")
		}
		return "fresh", nil
	}))
	require.NoError(t, err)
	_, err = c.ListSKUs(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "Bearer fresh", f.requests()[0].Header.Get("Authorization"))
	_, err = c.ListSKUs(context.Background())
	require.ErrorContains(t, err, "session expired")
	assert.Len(t, f.requests(), 1, "no request without a token")
}

func TestIteratorsFollowEveryPageAndStopOnBreak(t *testing.T) {
	pages := map[string]string{
		"":   `{"items":[{"id":"n1"},{"id":"n2"}],"next_cursor":"c1"}`,
		"c1": `{"items":[{"id":"n3"}],"next_cursor":"c2"}`,
		"c2": `{"items":[{"id":"n4"}],"next_cursor":""}`,
	}
	f, c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, pages[r.URL.Query().Get("cursor")])
	})
	var ids []string
	for n, err := range c.Nodes(context.Background(), client.NodeFilter{SiteID: "s1", Limit: 2}) {
		require.NoError(t, err)
		ids = append(ids, n.ID)
	}
	assert.Equal(t, []string{"n1", "n2", "n3", "n4"}, ids)
	reqs := f.requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, "s1", reqs[0].URL.Query().Get("site_id"))
	assert.Equal(t, "2", reqs[0].URL.Query().Get("limit"))
	assert.Equal(t, "c2", reqs[2].URL.Query().Get("cursor"))

	for n, err := range c.Nodes(context.Background(), client.NodeFilter{}) {
		require.NoError(t, err)
		if n.ID == "n2" {
			break
		}
	}
	assert.Len(t, f.requests(), 4, "breaking on the first page reads no second one")
}

func TestIteratorStopsOnARepeatedCursor(t *testing.T) {
	_, c := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"items":[{"id":"a"}],"next_cursor":"same"}`)
	})
	var errs []error
	n := 0
	for _, err := range c.Audit(context.Background(), 0) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	require.Len(t, errs, 1)
	require.ErrorContains(t, errs[0], `cursor "same" twice`)
	assert.Equal(t, 2, n)
}

func TestWaitOnboardingReturnsTheTerminalRead(t *testing.T) {
	var mu sync.Mutex
	reads := 0
	_, c := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		reads++
		st := "running"
		if reads >= 3 {
			st = "manual_intervention"
		}
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "ob-1", "status": st, "stage": "deploy"})
	})
	var seen []client.Status
	now := make(chan time.Time)
	close(now) // every wait ends at once: no real sleeps
	d, err := c.WaitOnboarding(context.Background(), "ob-1", client.WaitOptions{
		Poll:     true, // the polling waiter: the fake counts every request as a read
		After:    func(time.Duration) <-chan time.Time { return now },
		OnChange: func(v any) { seen = append(seen, v.(client.OnboardingDetail).Status) },
	})
	require.NoError(t, err)
	assert.Equal(t, domain.OnboardingManualIntervention, d.Status)
	assert.Equal(t, []client.Status{"running", "running", "manual_intervention"}, seen)
}

func TestWaitersEndWithTheContext(t *testing.T) {
	_, c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/admin/onboarding-batches/b1" {
			_, _ = io.WriteString(w, `{"id":"b1","status":"running"}`)
			return
		}
		_, _ = io.WriteString(w, `{"id":"d1","status":"running"}`)
	})
	never := func(time.Duration) <-chan time.Time { return nil }
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	// The polling waiter: under load a stream attempt could use the whole
	// 50ms before the first read.
	d, err := c.WaitDecommission(ctx, "d1", client.WaitOptions{Poll: true, After: never})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, "d1", d.ID, "the last read comes back with the deadline")

	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	_, err = c.WaitBatch(ctx2, "b1", client.WaitOptions{After: never})
	require.ErrorIs(t, err, context.Canceled)
}
