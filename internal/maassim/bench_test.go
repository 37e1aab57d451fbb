package maassim

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

const benchMachines = 10000

// benchSim is a simulator holding 10,000 Ready machines, each on its host.
func benchSim(b *testing.B) (*Simulator, []string, []string) {
	b.Helper()
	sim := New(Options{APIKey: testKey, Clock: clock.NewFake(testStart), Seed: 1})
	b.Cleanup(sim.Close)
	ids := make([]string, benchMachines)
	names := make([]string, benchMachines)
	for n := range ids {
		names[n] = fmt.Sprintf("gpu-%05d", n)
		sid, err := sim.AddMachine(MachineSeed{
			Hostname: names[n], BMCIP: fmt.Sprintf("10.%d.%d.%d", 100+n/65536, (n/256)%256, n%256), Status: "ready",
		})
		if err != nil {
			b.Fatal(err)
		}
		ids[n] = sid
	}
	return sim, ids, names
}

// benchServe answers b.N signed GETs in process (no TCP), so the figure is
// the simulator's own cost: auth, routing, state lookup and JSON rendering.
func benchServe(b *testing.B, sim *Simulator, path func(i int) string) {
	b.Helper()
	auth := authHeader(testKey)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequestWithContext(context.Background(), http.MethodGet, path(i), nil)
		req.Header.Set("Authorization", auth)
		w := httptest.NewRecorder()
		sim.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body.String())
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

func BenchmarkGetMachine(b *testing.B) {
	sim, ids, _ := benchSim(b)
	benchServe(b, sim, func(i int) string { return apiPrefix + "machines/" + ids[i%len(ids)] + "/" })
}

func BenchmarkListByHostname(b *testing.B) {
	sim, _, names := benchSim(b)
	benchServe(b, sim, func(i int) string { return apiPrefix + "machines/?hostname=" + names[i%len(names)] })
}

// BenchmarkClientGetMachine is maasflow's own client reading one machine
// from the simulator over loopback HTTP: OAuth signing, a kept-alive TCP
// round trip, the simulator's work and the client's JSON decoding. Run it
// with -cpu 1 so that client and server share one core.
func BenchmarkClientGetMachine(b *testing.B) {
	sim, ids, _ := benchSim(b)
	srv := httptest.NewServer(sim)
	b.Cleanup(srv.Close)
	c, err := maas.NewClient(srv.URL+"/MAAS", domain.Secret(testKey))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m, err := c.Get(ctx, ids[i%len(ids)])
		if err != nil {
			b.Fatal(err)
		}
		if m.Status != maas.StatusReady {
			b.Fatalf("machine %s is %s", m.SystemID, m.StatusName)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkPowerParameters is discovery's read of every machine's power
// parameters (GET machines/?op=power_parameters) on a simulator of 1,000
// machines: unchanged between reads, and with one machine's parameters
// changed before each read, as while onboardings create and commission
// machines.
func BenchmarkPowerParameters(b *testing.B) {
	for _, changing := range []bool{false, true} {
		b.Run(fmt.Sprintf("changing=%t", changing), func(b *testing.B) {
			sim, ids, _ := benchSim(b)
			sim.mu.Lock()
			for _, sid := range ids[1000:] {
				sim.removeMachine(sim.st.machines[sid])
			}
			sim.mu.Unlock()
			ids = ids[:1000]
			auth := authHeader(testKey)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if changing {
					sim.mu.Lock()
					sim.st.machines[ids[i%len(ids)]].setPowerParam("power_user", fmt.Sprintf("u%d", i%7))
					sim.mu.Unlock()
				}
				req := httptest.NewRequestWithContext(context.Background(), http.MethodGet, apiPrefix+"machines/?op=power_parameters", nil)
				req.Header.Set("Authorization", auth)
				w := &countingWriter{header: http.Header{}}
				sim.ServeHTTP(w, req)
				if w.code != http.StatusOK || w.n < 1000*50 {
					b.Fatalf("status %d, %d bytes", w.code, w.n)
				}
			}
		})
	}
}

// countingWriter is a ResponseWriter that keeps only the status and the
// body's length, so a benchmark counts the simulator's copies, not its own.
type countingWriter struct {
	header http.Header
	code   int
	n      int
}

func (w *countingWriter) Header() http.Header { return w.header }

func (w *countingWriter) WriteHeader(code int) { w.code = code }

func (w *countingWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	w.n += len(p)
	return len(p), nil
}
