package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const tlEnterQueued = `{"time":"2026-01-01T00:00:01Z","attempt":1,"kind":"stage_entered","stage":"queued","detail":"from start; site s1 full (5 held, limit 5): place 3 in the queue"}`

// TestWatchShowsTheQueueMoving: the throttle queue moves without timeline
// rows; the watch reports each new place once.
func TestWatchShowsTheQueueMoving(t *testing.T) {
	api := newAdminFakeAPI(t)
	api.on("GET /api/v1/admin/onboardings/0b000000-0000-4000-8000-000000000001",
		adminStateWith("pending", "queued", 1, `,"queue_position":3`, tlEnterQueued),
		adminStateWith("pending", "queued", 1, `,"queue_position":3`, tlEnterQueued),
		adminStateWith("pending", "queued", 1, `,"queue_position":1`, tlEnterQueued),
		adminStateWith("completed", "done", 1, "", tlEnterQueued, tlEnterValidate),
	)
	res := api.run(t, adminInvocation{advance: time.Second}, "onboardings", "watch", "0b000000-0000-4000-8000-000000000001", "--interval", "1s")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, 1, strings.Count(res.stdout, "queue    queued            place 3 (waiting for a site slot)"), res.stdout)
	assert.Equal(t, 1, strings.Count(res.stdout, "queue    queued            place 1 (waiting for a site slot)"), res.stdout)
	assert.Equal(t, 1, strings.Count(res.stdout, "▶ enter  queued            from start; site s1 full (5 held, limit 5): place 3 in the queue"), res.stdout)
	assert.Less(t, strings.Index(res.stdout, "place 3 (waiting"), strings.Index(res.stdout, "place 1 (waiting"))
}

func TestGetShowsTheQueuePosition(t *testing.T) {
	api := newAdminFakeAPI(t)
	api.on("GET /api/v1/admin/onboardings/0b000000-0000-4000-8000-000000000001",
		adminStateWith("pending", "queued", 1, `,"queue_position":2`, tlEnterQueued))
	res := api.run(t, adminInvocation{}, "onboardings", "get", "0b000000-0000-4000-8000-000000000001")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, "Queue position:")
	assert.Contains(t, res.stdout, "2 (waiting for a slot of site 5e000000-0000-4000-8000-000000000001; 1 is next)")

	api = newAdminFakeAPI(t)
	api.on("GET /api/v1/admin/onboardings/0b000000-0000-4000-8000-000000000001",
		adminReply{http.StatusOK, strings.Replace(adminStateWith("running", "deploy", 1, "").Body, `"stage"`, `"queue_position":0,"stage"`, 1)})
	res = api.run(t, adminInvocation{}, "onboardings", "get", "0b000000-0000-4000-8000-000000000001")
	require.Equal(t, 0, res.code, res.stderr)
	assert.NotContains(t, res.stdout, "Queue position:", "only while queued")
}
