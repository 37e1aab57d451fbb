package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sse renders states as the events of one stream; end closes it as the
// server does at the stream's age.
func sse(event string, end bool, states ...adminReply) adminReply {
	var b strings.Builder
	for _, s := range states {
		b.WriteString("event: " + event + "\ndata: " + s.Body + "\n\n: keep-alive\n\n")
	}
	if end {
		b.WriteString("event: end\ndata: {\"reason\":\"max_age\"}\n\n")
	}
	return adminReply{http.StatusOK, b.String()}
}

// A watch on the server's push prints the lines a polling watch prints,
// reads no GET and waits for no poll; a stream the server ends is reopened.
func TestWatchOnServerPushPrintsThePollingLines(t *testing.T) {
	const obPath = "/api/v1/admin/onboardings/0b000000-0000-4000-8000-000000000001"
	all := []string{tlEnterValidate, tlExitValidate, tlEnterCommission, tlMAASCommissioning, tlExitCommission, tlEnterWaitReady, tlClassification}
	failure := `,"error":{"code":"DeployDatasourceError","message":"datasource not found","stage":"wait_deployed"}`
	states := []adminReply{
		adminStateWith("pending", "validate", 1, ""),
		adminStateWith("running", "commission", 1, "", tlEnterValidate, tlExitValidate, tlEnterCommission),
		adminStateWith("running", "wait_ready", 1, "", tlEnterValidate, tlExitValidate, tlEnterCommission, tlExitCommission, tlEnterWaitReady),
		adminStateWith("manual_intervention", "wait_deployed", 2, failure, all...),
	}
	for _, output := range []string{"table", "json"} {
		t.Run(output, func(t *testing.T) {
			polled := newAdminFakeAPI(t)
			polled.on("GET "+obPath, states...)
			want := polled.run(t, adminInvocation{advance: time.Second}, "onboardings", "watch", "0b000000-0000-4000-8000-000000000001", "--interval", "1s", "-o", output)
			require.Equal(t, 3, want.code, want.stderr)

			pushed := newAdminFakeAPI(t)
			// The first stream ends after two states; the reader reopens.
			pushed.on("GET "+obPath+"/stream", sse("onboarding", true, states[:2]...), sse("onboarding", false, states[1:]...))
			clk := clockwork.NewFakeClockAt(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			start := clk.Now()
			got := pushed.run(t, adminInvocation{clock: clk, advance: time.Second}, "onboardings", "watch", "0b000000-0000-4000-8000-000000000001", "--interval", "1s", "-o", output)
			require.Equal(t, 3, got.code, got.stderr)
			assert.Equal(t, want.stdout, got.stdout, "the same lines as polling")
			assert.Empty(t, got.stderr)
			var paths []string
			for _, rq := range pushed.requests() {
				paths = append(paths, rq.Method+" "+rq.Path)
			}
			assert.Equal(t, []string{"GET " + obPath + "/stream", "GET " + obPath + "/stream"}, paths, "no poll")
			assert.Equal(t, time.Duration(0), clk.Since(start), "no wait between reads")
		})
	}
}

func TestDecommissionWatchOnServerPush(t *testing.T) {
	path := decomsPath + "/" + testDecomID
	states := []adminReply{
		{http.StatusOK, decomJSON("running", "drain", "pending", tlDecomDrain)},
		{http.StatusOK, decomJSON("running", "release", "pending", tlDecomDrain, tlDecomRelease)},
		{http.StatusOK, decomJSON("completed", "done", "erased", tlDecomDrain, tlDecomRelease, tlDecomErased)},
	}
	polled := newAdminFakeAPI(t)
	polled.on("GET "+path, states...)
	want := polled.run(t, adminInvocation{advance: time.Second}, "decommission", "watch", testDecomID, "--interval", "1s")
	require.Equal(t, 0, want.code, want.stderr)

	pushed := newAdminFakeAPI(t)
	pushed.on("GET "+path+"/stream", sse("decommission", false, states...))
	got := pushed.run(t, adminInvocation{advance: time.Second}, "decommission", "watch", testDecomID, "--interval", "1s")
	require.Equal(t, 0, got.code, got.stderr)
	assert.Equal(t, want.stdout, got.stdout)
	assert.Contains(t, got.stdout, "Disks erased")
	require.Len(t, pushed.requests(), 1)
	assert.Equal(t, path+"/stream", pushed.requests()[0].Path)
}

func TestWatchStreamFailuresAreRetriedThenGiveUp(t *testing.T) {
	const obPath = "/api/v1/admin/onboardings/0b000000-0000-4000-8000-000000000001"
	api := newAdminFakeAPI(t)
	api.on("GET "+obPath+"/stream",
		adminReply{http.StatusServiceUnavailable, `{"error":{"code":"service_unavailable","message":"retry later","correlation_id":"c-5"}}`},
		sse("onboarding", false, adminStateWith("completed", "done", 1, "", tlEnterValidate)))
	res := api.run(t, adminInvocation{advance: time.Second}, "onboardings", "watch", "0b000000-0000-4000-8000-000000000001", "--interval", "1s")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stderr, "warning: stream 1/5 failed, reconnecting in 1s")
	assert.Contains(t, res.stdout, "completed")

	// A stream that keeps ending before its first event gives up.
	api = newAdminFakeAPI(t)
	api.on("GET "+obPath+"/stream", adminReply{http.StatusOK, "event: end\ndata: {}\n\n"})
	res = api.run(t, adminInvocation{advance: time.Second}, "onboardings", "watch", "0b000000-0000-4000-8000-000000000001", "--interval", "1s")
	assert.Equal(t, 1, res.code, res.stderr)
	assert.Contains(t, res.stderr, "the stream ended before its first event")
	assert.Len(t, api.requests(), 6, "the first try and five more")
}

// A stack whose clock runs at a time scale says so, once, on stderr: the
// watch's times are the server's.
func TestWatchSaysWhenTimesRunAtATimeScale(t *testing.T) {
	const obPath = "/api/v1/admin/onboardings/0b000000-0000-4000-8000-000000000001"
	for name, streams := range map[string]bool{"stream": true, "poll": false} {
		t.Run(name, func(t *testing.T) {
			api := newAdminFakeAPI(t)
			api.header.Set("X-Maasflow-Time-Scale", "40")
			states := []adminReply{adminStateWith("running", "validate", 1, "", tlEnterValidate), adminStateWith("completed", "done", 1, "", tlEnterValidate)}
			if streams {
				api.on("GET "+obPath+"/stream", sse("onboarding", false, states...))
			} else {
				api.on("GET "+obPath, states...)
			}
			res := api.run(t, adminInvocation{advance: time.Second}, "onboardings", "watch", "0b000000-0000-4000-8000-000000000001", "--interval", "1s")
			require.Equal(t, 0, res.code, res.stderr)
			assert.Equal(t, 1, strings.Count(res.stderr, "note: the server's clock runs 40 times faster than real time"), res.stderr)
			assert.NotContains(t, res.stdout, "note:", "stdout keeps the lines alone")
		})
	}
	api := newAdminFakeAPI(t)
	api.on("GET "+obPath, adminStateWith("completed", "done", 1, "", tlEnterValidate))
	res := api.run(t, adminInvocation{advance: time.Second}, "onboardings", "watch", "0b000000-0000-4000-8000-000000000001")
	require.Equal(t, 0, res.code, res.stderr)
	assert.NotContains(t, res.stderr, "note:", "real time: nothing to say")
}

// A reimage's wait follows the onboarding it started inline, then the
// decommission to its end.
func TestReimageWaitFollowsItsOnboardingInline(t *testing.T) {
	const obID = "0b000000-0000-4000-8000-000000000001"
	reimage := func(status, stage string, withOnboarding bool, timeline ...string) adminReply {
		j := decomJSON(status, stage, "erased", timeline...)
		repl := `"mode":"reimage"`
		if withOnboarding {
			repl += `,"onboarding_id":"` + obID + `"`
		}
		return adminReply{http.StatusOK, strings.Replace(j, `"mode":"storage_cleanup"`, repl, 1)}
	}
	tlReimage := `{"time":"2026-01-01T00:00:06Z","attempt":1,"kind":"stage_entered","stage":"reimage","detail":"from release"}`
	for name, streams := range map[string]bool{"stream": true, "poll": false} {
		t.Run(name, func(t *testing.T) {
			api := newAdminFakeAPI(t)
			decoms := []adminReply{
				reimage("running", "release", false, tlDecomDrain, tlDecomRelease),
				reimage("running", "reimage", true, tlDecomDrain, tlDecomRelease, tlReimage),
				reimage("completed", "finish", true, tlDecomDrain, tlDecomRelease, tlReimage),
			}
			obs := []adminReply{
				adminStateWith("running", "commission", 1, "", tlEnterValidate, tlExitValidate, tlEnterCommission),
				adminStateWith("completed", "done", 1, "", tlEnterValidate, tlExitValidate, tlEnterCommission, tlExitCommission),
			}
			if streams {
				api.on("GET "+decomsPath+"/"+testDecomID+"/stream", sse("decommission", false, decoms...))
				api.on("GET /api/v1/admin/onboardings/"+obID+"/stream", sse("onboarding", false, obs...))
			} else {
				api.on("GET "+decomsPath+"/"+testDecomID, decoms...)
				api.on("GET /api/v1/admin/onboardings/"+obID, obs...)
			}
			res := api.run(t, adminInvocation{advance: time.Second}, "decommission", "watch", testDecomID, "--interval", "1s")
			require.Equal(t, 0, res.code, res.stderr)
			out := res.stdout
			follow := strings.Index(out, "reimage: following its onboarding "+obID)
			enter := strings.Index(out, "▶ enter  reimage")
			inner := strings.Index(out, "◀ exit   commission        ok: commissioning started")
			innerDone := strings.Index(out, "onboarding "+obID+" completed")
			end := strings.LastIndex(out, "completed")
			require.True(t, follow >= 0 && enter >= 0 && inner >= 0 && innerDone >= 0, out)
			assert.Less(t, enter, follow, "the decommission's reimage stage, then its onboarding")
			assert.Less(t, follow, inner)
			assert.Less(t, inner, innerDone)
			assert.Less(t, innerDone, end, "then the decommission's own end")
			assert.Equal(t, 1, strings.Count(out, "reimage: following its onboarding"), out)
		})
	}
}
