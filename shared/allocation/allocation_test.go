package allocation

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

func TestLocalDrainMovesActiveThroughReleasingToReleased(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	l := NewLocal(func() time.Time { return now })
	l.Put(domain.Allocation{ID: "a1", NodeID: "n1", State: domain.AllocationActive})
	l.Put(domain.Allocation{ID: "a2", NodeID: "n1", State: domain.AllocationReleaseFailed})
	l.Put(domain.Allocation{ID: "b1", NodeID: "n2", State: domain.AllocationActive})

	a, err := l.ForceRelease(context.Background(), "a1", "test")
	require.NoError(t, err)
	assert.Equal(t, domain.AllocationReleasing, a.State)
	failed, err := l.ForceRelease(context.Background(), "a2", "test")
	require.NoError(t, err)
	assert.Equal(t, domain.AllocationReleaseFailed, failed.State, "a failed release stays failed")

	now = now.Add(LocalReleaseDelay)
	items, err := l.List(context.Background(), "n1")
	require.NoError(t, err)
	require.Len(t, items, 2)
	assert.Equal(t, domain.AllocationReleased, items[0].State)
	assert.Equal(t, domain.AllocationReleaseFailed, items[1].State)

	_, err = l.ForceRelease(context.Background(), "nope", "test")
	var refused *AllocationServiceRefusedError
	require.ErrorAs(t, err, &refused)
	assert.Equal(t, http.StatusNotFound, refused.StatusCode)
}

func TestLocalControlAPI(t *testing.T) {
	l := NewLocal(nil)
	srv := httptest.NewServer(l.Control())
	defer srv.Close()

	resp, err := send(t, http.MethodPost, srv.URL+"/_local/allocations", `{"node_id":"n1","allocation_id":"a1","state":"active"}`)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusCreated, resp.StatusCode)

	resp, err = send(t, http.MethodPost, srv.URL+"/_local/allocations", `{"node_id":"n1","allocation_id":"a1","state":"gone"}`)
	require.NoError(t, err)
	var bad struct {
		Error struct{ Field string } `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&bad))
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, "state", bad.Error.Field)

	resp, err = send(t, http.MethodGet, srv.URL+"/_local/allocations?node_id=n1", "")
	require.NoError(t, err)
	var list struct {
		Items []domain.Allocation `json:"items"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	_ = resp.Body.Close()
	require.Len(t, list.Items, 1)
	assert.Equal(t, "a1", list.Items[0].ID)
}

func TestHTTPAdapterFollowsTheContract(t *testing.T) {
	var gotAuth, gotReason string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/nodes/n1/allocations":
			_, _ = w.Write([]byte(`{"items":[{"allocation_id":"a1","node_id":"n1","state":"active"}]}`))
		case r.Method == http.MethodPost && r.URL.Path == "/api/v1/allocations/a1/force-release":
			var in struct{ Reason string }
			_ = json.NewDecoder(r.Body).Decode(&in)
			gotReason = in.Reason
			_, _ = w.Write([]byte(`{"allocation_id":"a1","node_id":"n1","state":"releasing"}`))
		case r.URL.Path == "/api/v1/allocations/busy/force-release":
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"message":"no such allocation"}}`))
		}
	}))
	defer srv.Close()
	h, err := NewHTTP(srv.URL+"/api/", func(context.Context) (string, error) { return "s3cret-token", nil }, srv.Client())
	require.NoError(t, err)

	items, err := h.List(context.Background(), "n1")
	require.NoError(t, err)
	require.Len(t, items, 1)
	assert.Equal(t, domain.AllocationActive, items[0].State)
	assert.Equal(t, "Bearer s3cret-token", gotAuth)

	a, err := h.ForceRelease(context.Background(), "a1", "decommission d1")
	require.NoError(t, err)
	assert.Equal(t, domain.AllocationReleasing, a.State)
	assert.Equal(t, "decommission d1", gotReason)

	_, err = h.ForceRelease(context.Background(), "busy", "x")
	var unavailable *AllocationServiceUnavailableError
	require.ErrorAs(t, err, &unavailable)

	_, err = h.ForceRelease(context.Background(), "missing", "x")
	var refused *AllocationServiceRefusedError
	require.ErrorAs(t, err, &refused)
	assert.Equal(t, "no such allocation", refused.Message)
	assert.NotContains(t, err.Error(), "s3cret-token")

	_, err = NewHTTP("not a url", nil, nil)
	require.Error(t, err)
}

func send(t *testing.T, method, url, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(body))
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return http.DefaultClient.Do(req)
}
