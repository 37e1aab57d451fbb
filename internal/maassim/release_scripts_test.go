package maassim

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

func (h *harness) client(t *testing.T) *maas.Client {
	t.Helper()
	c, err := maas.NewClient(h.srv.URL+"/MAAS", domain.Secret(testKey))
	require.NoError(t, err)
	return c
}

func TestEraseRecordsTheWipeDisksReleaseScript(t *testing.T) {
	h := newHarness(t)
	ok := h.ready(t, "gpu-ok", 1, Faults{})
	bad := h.ready(t, "gpu-bad", 2, Faults{EraseFailures: 1})
	for _, sid := range []string{ok, bad} {
		h.deployed(t, sid, "")
		r := h.call(t, http.MethodPost, "machines/"+sid+"/", "release", url.Values{"erase": {"true"}, "secure_erase": {"true"}})
		require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	}
	h.clock.Advance(30 * time.Minute)
	assert.Equal(t, "Ready", h.statusName(t, ok))
	assert.Equal(t, "Failed disk erasing", h.statusName(t, bad))

	set, err := h.client(t).ReleaseScriptResults(context.Background(), ok)
	require.NoError(t, err)
	require.Len(t, set.Results, 1)
	assert.Equal(t, "wipe-disks", set.Results[0].Name)
	assert.Equal(t, "Passed", set.Results[0].StatusName)
	assert.Contains(t, set.Results[0].Output, "successfully wiped")

	set, err = h.client(t).ReleaseScriptResults(context.Background(), bad)
	require.NoError(t, err)
	assert.Equal(t, "Failed", set.Results[0].StatusName)
	require.NotNil(t, set.Results[0].ExitStatus)
	assert.Equal(t, 1, *set.Results[0].ExitStatus)

	// A release without erase runs no release script.
	plain := h.ready(t, "gpu-plain", 3, Faults{})
	h.deployed(t, plain, "")
	h.call(t, http.MethodPost, "machines/"+plain+"/", "release", nil)
	_, err = h.client(t).ReleaseScriptResults(context.Background(), plain)
	var nf *maas.MAASNotFoundError
	assert.ErrorAs(t, err, &nf)
}

// maas-behaviour §4, §14.3: a hung erase stays Disk erasing until aborted;
// abort gives Failed disk erasing, from which a release without erase is
// allowed.
func TestHungEraseWaitsForAbort(t *testing.T) {
	h := newHarness(t)
	sid := h.ready(t, "gpu-hang", 1, Faults{EraseHangs: 1})
	h.deployed(t, sid, "")
	r := h.call(t, http.MethodPost, "machines/"+sid+"/", "release", url.Values{"erase": {"true"}, "quick_erase": {"true"}})
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	h.clock.Advance(6 * time.Hour)
	assert.Equal(t, "Disk erasing", h.statusName(t, sid), "no timeout of its own")
	r = h.call(t, http.MethodPost, "machines/"+sid+"/", "release", nil)
	assert.Equal(t, http.StatusConflict, r.code, "release while erasing is refused")

	r = h.call(t, http.MethodPost, "machines/"+sid+"/", "abort", nil)
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	h.clock.Advance(time.Minute)
	assert.Equal(t, "Failed disk erasing", h.statusName(t, sid))
	set, err := h.client(t).ReleaseScriptResults(context.Background(), sid)
	require.NoError(t, err)
	assert.Equal(t, "Aborted", set.Results[0].StatusName)

	r = h.call(t, http.MethodPost, "machines/"+sid+"/", "release", nil)
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	h.clock.Advance(10 * time.Minute)
	assert.Equal(t, "Ready", h.statusName(t, sid))
}
