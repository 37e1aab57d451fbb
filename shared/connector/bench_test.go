package connector_test

import (
	"context"
	"net/http/httptest"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/connector"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// relayRig is the local transport end to end: MAAS client → Transport →
// Broker → HTTP long poll → Runner → the MAAS simulator, next to a client
// that calls the simulator directly.
type relayRig struct {
	direct, relayed *maas.Client
}

func newRelayRig(b *testing.B) *relayRig {
	b.Helper()
	sim := maassim.New(maassim.Options{})
	b.Cleanup(sim.Close)
	simSrv := httptest.NewServer(sim)
	b.Cleanup(simSrv.Close)
	broker := connector.NewBroker([]byte("bench"), nil)
	brokerSrv := httptest.NewServer(broker.Handler())
	b.Cleanup(brokerSrv.Close)
	b.Cleanup(broker.Close)

	j, err := connector.OpenJournal(b.TempDir(), nil)
	require.NoError(b, err)
	signer, err := maas.Signer(domain.Secret(sim.APIKey()))
	require.NoError(b, err)
	r := &connector.Runner{Link: &connector.HTTPLink{Endpoint: brokerSrv.URL, Token: broker.Token("s1"), Site: "s1"},
		Site: "s1", MAASURL: simSrv.URL + "/MAAS", Journal: j, Sign: signer, Workers: 16}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); broker.Close(); <-done; _ = j.Close() })

	direct, err := maas.NewClient(simSrv.URL+"/MAAS", domain.Secret(sim.APIKey()))
	require.NoError(b, err)
	paths := &connector.Paths{Relay: broker, Status: broker}
	relayed, err := paths.MAASClient(context.Background(),
		domain.Site{ID: "s1", MAASURL: "http://maas.site-1:5240/MAAS", Connectivity: domain.ConnectivityConnector}, "")
	require.NoError(b, err)
	return &relayRig{direct: direct, relayed: relayed}
}

// call is one MAAS API call (GET machines/?hostname=…, the call every
// activity's machine read makes) with a 10 s deadline.
func call(b *testing.B, c *maas.Client) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := c.FindByHostname(ctx, "absent-host"); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// BenchmarkConnectorAddedLatency makes the same MAAS call directly and
// through the connector, one after the other, and reports the p50 and p99
// of each and the p99 the connector adds.
func BenchmarkConnectorAddedLatency(b *testing.B) {
	rig := newRelayRig(b)
	call(b, rig.relayed) // the first long poll is up
	var direct, relayed []time.Duration
	b.ResetTimer()
	for range b.N {
		direct = append(direct, call(b, rig.direct))
		relayed = append(relayed, call(b, rig.relayed))
	}
	b.StopTimer()
	d50, d99 := percentiles(direct)
	r50, r99 := percentiles(relayed)
	b.ReportMetric(ms(d50), "direct-p50-ms")
	b.ReportMetric(ms(d99), "direct-p99-ms")
	b.ReportMetric(ms(r50), "relayed-p50-ms")
	b.ReportMetric(ms(r99), "relayed-p99-ms")
	b.ReportMetric(ms(r99-d99), "added-p99-ms")
}

// BenchmarkConnectorThroughput makes MAAS calls through one site's
// connector from 32 callers at once and reports calls per second.
func BenchmarkConnectorThroughput(b *testing.B) {
	rig := newRelayRig(b)
	call(b, rig.relayed)
	b.SetParallelism(32 / max(1, testingProcs()))
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			call(b, rig.relayed)
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)*50/100], s[min(len(s)-1, len(s)*99/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// testingProcs is GOMAXPROCS, which RunParallel multiplies the
// parallelism by.
func testingProcs() int { return runtime.GOMAXPROCS(0) }
