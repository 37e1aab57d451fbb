package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/client"
)

// The API's bundle holds a list (the task-signing keys): the SDK hands it
// on as it was sent instead of refusing the answer.
func TestReissueBundleKeepsTheBundleAsSent(t *testing.T) {
	const bundle = `{"GPUAAS_NODE_ID":"n1","GPUAAS_TASK_SIGNING_PUBKEYS":["k1","k2"]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/api/v1/admin/nodes/n1/bootstrap-bundle", r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"node_id":"n1","expires_at":"2026-01-01T00:00:00Z","bootstrap_bundle":`+bundle+`}`)
	}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, client.WithToken("t"))
	require.NoError(t, err)
	b, err := c.ReissueBundle(context.Background(), "n1")
	require.NoError(t, err)
	assert.Equal(t, "n1", b.NodeID)
	assert.JSONEq(t, bundle, string(b.BootstrapBundle))
}
