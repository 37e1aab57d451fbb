package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/client"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll"
)

func TestStreamReadsEventsAndReconnectsAfterTheEnd(t *testing.T) {
	var opens atomic.Int32
	f, c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/admin/onboardings/ob-1/stream" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if opens.Add(1) == 1 {
			// Comments are skipped, data lines joined, "end" closes.
			_, _ = io.WriteString(w, ": keep-alive\n\nid: 1\nevent: onboarding\ndata: {\"id\":\"ob-1\",\n"+
				"data: \"status\":\"running\",\"stage\":\"deploy\"}\n\nevent: end\ndata: {}\n\n")
			return
		}
		_, _ = io.WriteString(w, "event: onboarding\r\ndata: {\"id\":\"ob-1\",\"status\":\"completed\",\"stage\":\"done\"}\r\n\r\n")
	})
	var seen []string
	err := c.StreamOnboarding(context.Background(), "ob-1", func(d client.OnboardingDetail) (bool, error) {
		seen = append(seen, string(d.Status)+"@"+string(d.Stage))
		return client.Terminal(d.Status), nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"running@deploy", "completed@done"}, seen)
	assert.EqualValues(t, 2, opens.Load(), "reopened after the end event")
	assert.Equal(t, "Bearer tok-1", f.seen[0].Header.Get("Authorization"))
	assert.Equal(t, "text/event-stream", f.seen[0].Header.Get("Accept"))
}

func TestStreamErrorEventIsAnAPIError(t *testing.T) {
	_, c := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: error\ndata: {\"error\":{\"code\":\"not_found\",\"message\":\"gone\",\"correlation_id\":\"c-1\"}}\n\n")
	})
	err := c.StreamDecommission(context.Background(), "d1", func(client.DecommissionDetail) (bool, error) { return false, nil })
	var apiErr *client.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, client.CodeNotFound, apiErr.Code)
	assert.Equal(t, http.StatusNotFound, apiErr.Status)
	assert.Equal(t, "c-1", apiErr.CorrelationID)
}

func TestStreamsUnsupportedFallsBackToPolling(t *testing.T) {
	for name, answer := range map[string]func(w http.ResponseWriter){
		"refused by the deployment": func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusNotImplemented)
			_, _ = io.WriteString(w, `{"error":{"code":"streams_unsupported","message":"read GET","correlation_id":"c"}}`)
		},
		"an older server": func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":{"code":"not_found","message":"no such endpoint","correlation_id":"c"}}`)
		},
		"not an event stream": func(w http.ResponseWriter) {
			_, _ = io.WriteString(w, `{"id":"b1","status":"running"}`)
		},
	} {
		t.Run(name, func(t *testing.T) {
			var reads atomic.Int32
			_, c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/api/v1/admin/onboarding-batches/b1/stream" {
					answer(w)
					return
				}
				if reads.Add(1) < 3 {
					_, _ = io.WriteString(w, `{"id":"b1","status":"running"}`)
					return
				}
				_, _ = io.WriteString(w, `{"id":"b1","status":"completed"}`)
			})
			err := c.StreamBatch(context.Background(), "b1", func(client.Batch) (bool, error) { return true, nil })
			require.ErrorIs(t, err, client.ErrStreamsUnsupported)

			now := make(chan time.Time)
			close(now)
			b, err := c.WaitBatch(context.Background(), "b1", client.WaitOptions{After: func(time.Duration) <-chan time.Time { return now }})
			require.NoError(t, err)
			assert.Equal(t, "completed", string(b.Status))
			assert.EqualValues(t, 3, reads.Load(), "polled the GET")
		})
	}
}

func TestStreamAgainstTheRealAPI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := realAPI(t)
	_, err := c.GetOnboarding(ctx, "nope")
	require.Error(t, err)
	err = c.StreamOnboarding(ctx, "nope", func(client.OnboardingDetail) (bool, error) { return true, nil })
	var apiErr *client.APIError
	require.ErrorAs(t, err, &apiErr, "an unknown onboarding is the API's 404, not a fallback")
	assert.Equal(t, client.CodeNotFound, apiErr.Code)
	require.NotErrorIs(t, err, client.ErrStreamsUnsupported)

	site, prof := readySiteAndProfile(t, c)
	ob, err := c.CreateOnboarding(ctx, client.OnboardingCreate{SiteID: site, ProfileID: prof, SKUID: "h100x8",
		Hostname: "gpu-09", IPMIIP: "10.0.0.9"})
	require.NoError(t, err)
	named, err := c.GetOnboarding(ctx, ob.ID)
	require.NoError(t, err)
	assert.Equal(t, "lab", named.SiteName, "answers name the site")
	assert.Equal(t, "gpu", named.ProfileName)
	var statuses []domain.OnboardingStatus
	err = c.StreamOnboarding(ctx, ob.ID, func(d client.OnboardingDetail) (bool, error) {
		statuses = append(statuses, d.Status)
		if len(statuses) == 1 {
			// A change made while the stream is open is pushed.
			_, err := c.CancelOnboarding(ctx, ob.ID, "wrong rack")
			return false, err
		}
		return client.Terminal(d.Status), nil
	})
	require.NoError(t, err)
	assert.Equal(t, domain.OnboardingCancelled, statuses[len(statuses)-1])
	assert.NotEqual(t, domain.OnboardingCancelled, statuses[0])
}

// readySiteAndProfile registers a probed site with credentials, a profile
// and the h100x8 SKU, as TestAgainstTheRealAPI does.
func readySiteAndProfile(t *testing.T, c *client.Client) (siteID, profileID string) {
	t.Helper()
	ctx := context.Background()
	ca, err := enroll.DevCA()
	require.NoError(t, err)
	yes := true
	site, err := c.CreateSite(ctx, client.SiteCreate{Name: "lab", MAASURL: "http://maas.lab:5240/MAAS", Policy: &client.Policy{
		AutoClaimNew: &yes, EnrollmentURL: ptr("https://api.lab"),
		Bootstrap: &domain.BootstrapRef{URL: "https://boot.lab/site.sh", Version: "1", CABundle: ca},
	}})
	require.NoError(t, err)
	require.NoError(t, c.PutCredentials(ctx, site.ID, client.Credentials{MAASAPIKey: "ck:tk:sec", BMCUsername: "admin", BMCPassword: "pw"}))
	_, err = c.ProbeSite(ctx, site.ID)
	require.NoError(t, err)
	prof, err := c.CreateProfile(ctx, site.ID, client.ProfileCreate{Name: "gpu", Architecture: "amd64/generic", DistroSeries: "jammy"})
	require.NoError(t, err)
	_, err = c.CreateSKU(ctx, client.SKUCreate{ID: "h100x8", GPUModel: "H100", GPUsTotal: 8})
	require.NoError(t, err)
	return site.ID, prof.ID
}

// On AWS the streams are at the stream function's URL, not the API's:
// WithStreamURL sends them there, with the same token, and every other
// call still to the API.
func TestStreamsAtTheirOwnURL(t *testing.T) {
	var api, streams atomic.Int32
	apiSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		api.Add(1)
		w.WriteHeader(http.StatusNotImplemented)
	}))
	defer apiSrv.Close()
	var auth, path string
	streamSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		streams.Add(1)
		auth, path = r.Header.Get("Authorization"), r.URL.Path
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: onboarding\ndata: {\"id\":\"ob-1\",\"status\":\"completed\",\"stage\":\"done\"}\n\n")
	}))
	defer streamSrv.Close()
	c, err := client.New(apiSrv.URL, client.WithToken("tok-s"), client.WithStreamURL(streamSrv.URL+"/"))
	require.NoError(t, err)
	var got []string
	require.NoError(t, c.StreamOnboarding(context.Background(), "ob-1", func(d client.OnboardingDetail) (bool, error) {
		got = append(got, string(d.Status))
		return client.Terminal(d.Status), nil
	}))
	assert.Equal(t, []string{"completed"}, got)
	assert.EqualValues(t, 1, streams.Load())
	assert.Zero(t, api.Load(), "the stream did not go to the API")
	assert.Equal(t, "Bearer tok-s", auth)
	assert.Equal(t, "/api/v1/admin/onboardings/ob-1/stream", path)

	_, err = client.New(apiSrv.URL, client.WithStreamURL("ftp://x"))
	require.Error(t, err, "a stream URL that is not http or https")
}
