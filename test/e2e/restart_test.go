package e2e

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStateSurvivesARestart restarts the stack on the same data directory:
// records come back, and an onboarding whose execution died with the old
// process is closed with a reason instead of holding its host for ever.
func TestStateSurvivesARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := startStackIn(t, dir)
	f := first.setup(nil, map[string]any{"enrollment_timeout_seconds": 86400})
	first.hardware("gpu-r1", "10.10.1.11", "52:54:00:00:11:01", map[string]any{"never_enrolls": true})
	id := first.onboard(f, "gpu-r1", "10.10.1.11")
	require.NoError(t, first.stack.Close())

	second := startStackIn(t, dir)
	site := second.admin("GET", "/api/v1/admin/maas-sites/"+f.SiteID, nil, http.StatusOK)
	assert.Equal(t, true, site["credentials_set"])
	second.admin("GET", "/api/v1/admin/skus/"+f.SKUID, nil, http.StatusOK)

	o := second.admin("GET", "/api/v1/admin/onboardings/"+id, nil, http.StatusOK)
	assert.Equal(t, "failed", o["status"])
	assert.Equal(t, "LocalStackRestarted", errorCode(o))
}
