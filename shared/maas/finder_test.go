package maas

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFindByPowerAddress(t *testing.T) {
	tests := []struct {
		name    string
		addr    string
		wantIDs []string // system ids asked for in the second call; nil: no second call
	}{
		{name: "one match", addr: "10.30.0.17", wantIDs: []string{"k3tgaq"}},
		{name: "two matches, surrounding spaces ignored", addr: " 10.30.0.18", wantIDs: []string{"8x4frw", "pn6tyd"}},
		{name: "no match", addr: "10.30.0.99"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeMAAS(t)
			f.onFile(http.MethodGet, "machines/", "power_parameters", "power-parameters-maas-3.5.json")
			f.onFile(http.MethodGet, "machines/", "", "machines-by-id-maas-3.5.json")

			ms, err := f.client().FindByPowerAddress(context.Background(), tc.addr)
			require.NoError(t, err)

			reqs := f.requests()
			if tc.wantIDs == nil {
				assert.Empty(t, ms)
				assert.NotNil(t, ms, "an empty list, not nil")
				assert.Len(t, reqs, 1)
				return
			}
			require.Len(t, reqs, 2)
			assert.Equal(t, "power_parameters", reqs[0].Op)
			assert.Equal(t, url.Values{"id": tc.wantIDs}, reqs[1].Query)
			// The fixture answers every id query the same way; what matters
			// is that each returned machine carries the address searched.
			for _, m := range ms {
				assert.Equal(t, strings.TrimSpace(tc.addr), m.PowerAddress)
			}
		})
	}
}

func TestFindByPowerAddressNeedsAdmin(t *testing.T) {
	f := newFakeMAAS(t)
	f.on(http.MethodGet, "machines/", "power_parameters", http.StatusForbidden, "")

	_, err := f.client().FindByPowerAddress(context.Background(), "10.30.0.17")
	assert.Equal(t, &MAASForbiddenError{Op: "find machines by power address"}, err)
}

func TestFindByPowerAddressNeverQuotesTheReply(t *testing.T) {
	f := newFakeMAAS(t)
	// Truncated JSON holding a password: the error must not quote it.
	f.on(http.MethodGet, "machines/", "power_parameters", http.StatusOK,
		`{"k3tgaq": {"power_address": "10.30.0.17", "power_pass": "Zq8-bmc-SEEDED"`)

	_, err := f.client().FindByPowerAddress(context.Background(), "10.30.0.17")
	var ue *MAASUnexpectedResponseError
	require.ErrorAs(t, err, &ue)
	assert.NotContains(t, err.Error(), "Zq8-bmc-SEEDED")
}

func TestFindByHostnameAmbiguity(t *testing.T) {
	f := newFakeMAAS(t)
	f.onFile(http.MethodGet, "machines/", "", "machines-by-id-maas-3.5.json")

	ms, err := f.client().FindByHostname(context.Background(), "gpu-node-018")
	require.NoError(t, err)
	// Both records are returned: deciding on ambiguity is the caller's job.
	require.Len(t, ms, 2)
	assert.Equal(t, []string{"8x4frw", "pn6tyd"}, []string{ms[0].SystemID, ms[1].SystemID})
	assert.Equal(t, StatusNew, ms[1].Status)
}
