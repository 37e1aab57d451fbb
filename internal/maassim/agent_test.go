package maassim

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAgentRetriesOverloadFromItsOwnAddress: the node agent retries an
// enrollment refused for overload (503, or a connection closed unanswered)
// until it is answered, and each node calls from an address of its own.
func TestAgentRetriesOverloadFromItsOwnAddress(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	addrs := map[string]map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		if id, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/api/v1/nodes/"), "/design"); ok {
			// The first-boot read of the node's design, from the same address.
			mu.Lock()
			if addrs[id] == nil {
				addrs[id] = map[string]bool{}
			}
			addrs[id][host] = true
			mu.Unlock()
			http.NotFound(w, r)
			return
		}
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/api/v1/nodes/"), "/enroll")
		mu.Lock()
		calls[id]++
		n := calls[id]
		if addrs[id] == nil {
			addrs[id] = map[string]bool{}
		}
		addrs[id][host] = true
		mu.Unlock()
		switch n {
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2:
			// Refused without an answer, as a listener past its bound may.
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					_ = c.Close()
				}
			}
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"status":"active"}`))
		}
	}))
	t.Cleanup(srv.Close)

	h := newHarness(t)
	a := h.ready(t, "gpu-1", 1, Faults{})
	b := h.ready(t, "gpu-2", 2, Faults{})
	h.deployed(t, a, firstBootUserData(t, srv.URL+"/", "node-a"))
	h.deployed(t, b, firstBootUserData(t, srv.URL+"/", "node-b"))
	done := make(chan struct{})
	go func() { h.sim.enrollWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the agents did not finish enrolling")
	}

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[string]int{"node-a": 3, "node-b": 3}, calls, "two refusals, then the answer")
	for _, v := range h.hardware(t) {
		assert.Equal(t, 1, v.Enrollment.Succeeded, v.Hostname)
		assert.Equal(t, http.StatusOK, v.Enrollment.LastCode, v.Hostname)
	}
	require.Len(t, addrs["node-a"], 1, "one agent keeps its address")
	require.Len(t, addrs["node-b"], 1)
	var ia, ib string
	for k := range addrs["node-a"] {
		ia = k
	}
	for k := range addrs["node-b"] {
		ib = k
	}
	assert.NotEqual(t, ia, ib, "each node calls from its own address")
	assert.True(t, net.ParseIP(ia).IsLoopback(), ia)
}

func TestAgentAddr(t *testing.T) {
	assert.Equal(t, "127.1.0.1", agentAddr(1).String())
	assert.Equal(t, "127.1.0.254", agentAddr(254).String())
	assert.Equal(t, "127.1.1.1", agentAddr(255).String())
	assert.Equal(t, "127.1.0.1", agentAddr(256*254+1).String(), "wraps")
}
