package client_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/client"
)

// Each list stream asks for its path with the filter as its query and
// hands over the pushed page decoded.
func TestListStreams(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, wantURL, data string
		follow              func(c *client.Client) (string, error)
	}{
		{"onboardings", "/api/v1/admin/onboardings/stream?limit=5&status=running", `{"items":[{"id":"ob-1","hostname":"gpu-01"}]}`,
			func(c *client.Client) (got string, err error) {
				err = c.StreamOnboardings(ctx, client.OnboardingFilter{Status: "running", Limit: 5}, func(p client.Page[client.Onboarding]) (bool, error) {
					got = p.Items[0].Hostname
					return true, nil
				})
				return got, err
			}},
		{"decommissions", "/api/v1/admin/decommissions/stream?site_id=s1", `{"items":[{"id":"d1","hostname":"gpu-02"}],"next_cursor":""}`,
			func(c *client.Client) (got string, err error) {
				err = c.StreamDecommissions(ctx, client.DecommissionFilter{SiteID: "s1"}, func(p client.Page[client.Decommission]) (bool, error) {
					got = p.Items[0].Hostname
					return true, nil
				})
				return got, err
			}},
		{"batches", "/api/v1/admin/onboarding-batches/stream?limit=20", `{"items":[{"id":"b1"}]}`,
			func(c *client.Client) (got string, err error) {
				err = c.StreamBatches(ctx, 20, func(items []client.Batch) (bool, error) {
					got = items[0].ID
					return true, nil
				})
				return got, err
			}},
		{"nodes", "/api/v1/admin/nodes/stream?status=active", `{"items":[{"id":"n1","hostname":"gpu-03"}]}`,
			func(c *client.Client) (got string, err error) {
				err = c.StreamNodes(ctx, client.NodeFilter{Status: "active"}, func(p client.Page[client.Node]) (bool, error) {
					got = p.Items[0].Hostname
					return true, nil
				})
				return got, err
			}},
		{"node", "/api/v1/admin/nodes/n1/stream", `{"id":"n1","hostname":"gpu-04"}`,
			func(c *client.Client) (got string, err error) {
				err = c.StreamNode(ctx, "n1", func(d client.NodeDetail) (bool, error) {
					got = d.Hostname
					return true, nil
				})
				return got, err
			}},
		{"drift", "/api/v1/admin/reconciliation/drift/stream?state=open", `{"items":[{"node_id":"n5"}]}`,
			func(c *client.Client) (got string, err error) {
				err = c.StreamDrift(ctx, client.DriftFilter{State: "open"}, func(p client.Page[client.DriftItem]) (bool, error) {
					got = p.Items[0].NodeID
					return true, nil
				})
				return got, err
			}},
		{"sites", "/api/v1/admin/maas-sites/stream", `{"items":[{"id":"s1","name":"dc1"}]}`,
			func(c *client.Client) (got string, err error) {
				err = c.StreamSites(ctx, func(items []client.Site) (bool, error) {
					got = items[0].Name
					return true, nil
				})
				return got, err
			}},
	}
	want := map[string]string{"onboardings": "gpu-01", "decommissions": "gpu-02", "batches": "b1", "nodes": "gpu-03", "node": "gpu-04", "drift": "n5", "sites": "dc1"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, c := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, "event: "+tc.name+"\ndata: "+tc.data+"\n\n")
			})
			got, err := tc.follow(c)
			require.NoError(t, err)
			assert.Equal(t, want[tc.name], got)
			require.NotEmpty(t, f.seen)
			assert.Equal(t, tc.wantURL, f.seen[0].URL.RequestURI())
		})
	}
}
