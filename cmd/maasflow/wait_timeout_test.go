package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every wait takes --timeout: past it the command gives up (exit 1) and
// says the work goes on; the fake clock moves a second per poll.
func TestEveryWaitTakesATimeout(t *testing.T) {
	const obID = "0b000000-0000-4000-8000-000000000001"
	cases := []struct {
		name  string
		setup func(*adminFakeAPI)
		args  []string
	}{
		{"onboardings watch", func(a *adminFakeAPI) {
			a.on("GET /api/v1/admin/onboardings/"+obID, adminStateWith("running", "commission", 1, "", tlEnterValidate))
		}, []string{"onboardings", "watch", obID}},
		{"decommission watch", func(a *adminFakeAPI) {
			a.on("GET "+decomsPath+"/"+testDecomID, adminReply{http.StatusOK, decomJSON("running", "drain", "pending", tlDecomDrain)})
		}, []string{"decommission", "watch", testDecomID}},
		{"batches watch", func(a *adminFakeAPI) {
			a.on("GET /api/v1/admin/onboarding-batches/b1", adminReply{http.StatusOK,
				`{"id":"b1","status":"running","items":[{"hostname":"gpu-01","onboarding_id":"o-1","status":"running"}]}`})
			a.on("GET /api/v1/admin/onboardings/o-1", adminReply{http.StatusOK,
				`{"id":"o-1","hostname":"gpu-01","status":"running","stage":"commission","attempt":1,"timeline":[` + tlEnterValidate + `]}`})
		}, []string{"batches", "watch", "b1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := newAdminFakeAPI(t)
			tc.setup(api)
			res := api.run(t, adminInvocation{}, append(tc.args, "--interval", "1s", "--timeout", "3s")...)
			require.Equal(t, 1, res.code, res.stdout+res.stderr)
			assert.Contains(t, res.stderr, "gave up waiting after --timeout 3s; the work goes on on the server")
			n := len(api.requests())
			assert.GreaterOrEqual(t, n, 3, "it polled until the timeout")
			assert.LessOrEqual(t, n, 10, "and stopped there")
		})
	}
	t.Run("negative", func(t *testing.T) {
		api := newAdminFakeAPI(t)
		res := api.run(t, adminInvocation{}, "onboardings", "watch", obID, "--timeout", "-1s")
		assert.Equal(t, 2, res.code, res.stderr)
		assert.Contains(t, res.stderr, "--timeout must not be negative")
	})
	t.Run("help names it on every wait", func(t *testing.T) {
		for _, args := range [][]string{
			{"onboard", "--help"}, {"onboardings", "watch", "--help"}, {"onboardings", "retry", "--help"},
			{"batches", "watch", "--help"}, {"decommission", "start", "--help"}, {"decommission", "watch", "--help"},
			{"decommission", "retry", "--help"}, {"reconcile", "run", "--help"},
		} {
			res := runAdminTest(t, nil, adminInvocation{}, args...)
			require.Equal(t, 0, res.code, args)
			assert.Contains(t, res.stdout, "--timeout duration", args)
		}
	})
}
