package maassim

import (
	"container/heap"
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/maasflow/maasflow/shared/clock"
)

// adminUser is the MAAS user the API key belongs to: a superuser, as the
// keys maasflow is given are. regularUser owns the second key
// (Options.UserAPIKey): a MAAS user without admin rights.
const (
	adminUser   = "admin"
	regularUser = "user"
)

// credential is one API key the simulator accepts and the user it belongs to.
type credential struct {
	user        string
	consumerKey string
	tokenKey    string
	tokenSecret string
}

func parseCredential(user, key string) credential {
	parts := strings.SplitN(key, ":", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	return credential{user: user, consumerKey: parts[0], tokenKey: parts[1], tokenSecret: parts[2]}
}

// Simulator is an in-memory MAAS region. It is safe for concurrent use; one
// mutex serialises the MAAS state so that every reply shows a consistent
// snapshot, as MAAS's one-transaction-per-request does.
type Simulator struct {
	clock      clock.Clock
	dur        Durations
	log        *slog.Logger
	httpClient *http.Client
	// ownClient is true when httpClient is the simulator's own default:
	// then each node agent dials from an address of its own (agentClient).
	ownClient bool
	// agents counts the node agents started, which numbers their source
	// addresses.
	agents    atomic.Uint32
	seed      int64
	errorRate float64
	slowRate  float64
	slowDelay time.Duration
	skew      time.Duration
	// missingScripts are the scripts the region lacks (scripts.go).
	missingScripts []string

	apiKey      string
	userAPIKey  string
	credentials []credential

	net network

	mu     sync.Mutex
	rng    *mrand.Rand
	st     *state
	tasks  taskHeap
	seq    uint64
	closed bool

	// callsMu guards the call counts apart from mu, so counting a call
	// never waits behind another call's handler.
	callsMu sync.Mutex
	calls   map[Call]int
	total   int

	faultMu  sync.Mutex
	faultRNG *mrand.Rand

	ctx       context.Context
	cancel    context.CancelFunc
	wake      chan struct{}
	wg        sync.WaitGroup // the background loop
	enrollWG  sync.WaitGroup // enrollments in flight
	closeOnce sync.Once

	// agentCtx ends every node agent (StopAgents, Close).
	agentCtx  context.Context
	stopAgent context.CancelFunc
}

// New returns a running Simulator; Close stops it.
func New(o Options) *Simulator {
	clk := o.Clock
	if clk == nil {
		clk = clock.Real()
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	hc := o.HTTPClient
	ownClient := hc == nil
	if ownClient {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	key := o.APIKey
	if key == "" {
		key = generateAPIKey()
	}
	userKey := o.UserAPIKey
	if userKey == "" {
		userKey = generateAPIKey()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Simulator{
		clock: clk, dur: o.Durations.withDefaults(), log: logger, httpClient: hc, ownClient: ownClient, seed: o.Seed,
		errorRate: o.ErrorRate, slowRate: o.SlowRate, slowDelay: o.SlowDelay, skew: o.ClockSkew,
		missingScripts: append([]string(nil), o.MissingScripts...),
		apiKey:         key, userAPIKey: userKey,
		credentials: []credential{parseCredential(adminUser, key), parseCredential(regularUser, userKey)},
		net:         newNetwork(o.SubnetCIDR, o.SecondSubnet).withTagged(o.TaggedVLANs), ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1),
	}
	s.agentCtx, s.stopAgent = context.WithCancel(ctx)
	s.resetLocked()
	s.wg.Add(1)
	go s.loop()
	return s
}

// generateAPIKey makes a key shaped like MAAS's (18:18:32 characters). It
// uses crypto/rand, not the seed: a predictable key would be no key.
func generateAPIKey() string {
	const alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghjkmnpqrstuvwxyz23456789"
	part := func(n int) string {
		b := make([]byte, n)
		_, _ = rand.Read(b)
		for i := range b {
			b[i] = alphabet[int(b[i])%len(alphabet)]
		}
		return string(b)
	}
	return part(18) + ":" + part(18) + ":" + part(32)
}

// APIKey returns the API key of the simulator's admin user.
func (s *Simulator) APIKey() string { return s.apiKey }

// UserAPIKey returns the API key of the simulator's user without admin
// rights (Options.UserAPIKey).
func (s *Simulator) UserAPIKey() string { return s.userAPIKey }

// Close stops the background loop and any enrollment in flight, and waits
// for them. The Simulator must not be used afterwards.
func (s *Simulator) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.cancel()
		s.wg.Wait()
		s.enrollWG.Wait()
	})
}

// Reset forgets every machine, host, event and counted call, and reseeds,
// so that the same calls produce the same ids again.
func (s *Simulator) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resetLocked()
}

func (s *Simulator) resetLocked() {
	s.st = newState()
	s.tasks = nil
	s.net.resetSubnetDNS()
	s.callsMu.Lock()
	s.calls = map[Call]int{}
	s.total = 0
	s.callsMu.Unlock()
	s.rng = mrand.New(mrand.NewPCG(uint64(s.seed), 0x6d616173)) //nolint:gosec // G404: seeded on purpose, the simulator is deterministic
	s.faultMu.Lock()
	s.faultRNG = mrand.New(mrand.NewPCG(uint64(s.seed), 0x6661756c)) //nolint:gosec // G404: seeded on purpose, the simulator is deterministic
	s.faultMu.Unlock()
}

// Calls returns the MAAS API calls counted so far (GET /_sim/calls).
func (s *Simulator) Calls() CallStats {
	s.callsMu.Lock()
	defer s.callsMu.Unlock()
	out := CallStats{Total: s.total, Calls: make([]Call, 0, len(s.calls))}
	for k, n := range s.calls {
		k.Count = n
		out.Calls = append(out.Calls, k)
	}
	sort.Slice(out.Calls, func(i, j int) bool {
		a, b := out.Calls[i], out.Calls[j]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		if a.Method != b.Method {
			return a.Method < b.Method
		}
		return a.Op < b.Op
	})
	return out
}

func (s *Simulator) countCall(method, template, op string) {
	s.callsMu.Lock()
	s.calls[Call{Method: method, Path: template, Op: op}]++
	s.total++
	s.callsMu.Unlock()
}

// ServeHTTP answers MAAS's API under /MAAS/ and the control API under /_sim/.
func (s *Simulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, "/_sim/"):
		s.serveControl(w, r)
	case strings.HasPrefix(r.URL.Path, "/MAAS/"):
		s.serveMAAS(w, r)
	default:
		http.NotFound(w, r)
	}
}

// now is the simulated time, in UTC as MAAS stores it.
func (s *Simulator) now() time.Time { return s.clock.Now().UTC() }

// --- scheduling -----------------------------------------------------------

// task is one step of a phase, due at a simulated instant. A task whose gen
// no longer matches its machine's was cancelled (abort, release, delete…).
type task struct {
	at  time.Time
	seq uint64
	m   *machine
	gen uint64
	fn  func(at time.Time)
}

type taskHeap []*task

func (h taskHeap) Len() int { return len(h) }
func (h taskHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h taskHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *taskHeap) Push(x any)   { *h = append(*h, x.(*task)) }
func (h *taskHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return t
}

// at schedules fn for machine m at a simulated instant; m's current gen
// guards it.
func (s *Simulator) at(m *machine, when time.Time, fn func(at time.Time)) {
	s.seq++
	t := &task{at: when, seq: s.seq, m: m, gen: m.gen, fn: fn}
	heap.Push(&s.tasks, t)
	if s.tasks[0] == t {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// cancelPhase drops every scheduled step of m.
func (m *machine) cancelPhase() { m.gen++ }

// advanceLocked plays every step due by now, in time order. Steps schedule
// their successors from their own due time, not from now, so one Advance of
// the fake clock over several phases lands exactly where MAAS would be.
func (s *Simulator) advanceLocked(now time.Time) {
	for len(s.tasks) > 0 && !s.tasks[0].at.After(now) {
		t := heap.Pop(&s.tasks).(*task)
		if t.m.deleted || t.gen != t.m.gen {
			continue
		}
		t.fn(t.at)
	}
}

// loop plays due steps when no request arrives, so that a deployed node
// enrolls even if nobody polls MAAS.
func (s *Simulator) loop() {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		s.advanceLocked(s.now())
		var next time.Time
		has := len(s.tasks) > 0
		if has {
			next = s.tasks[0].at
		}
		s.mu.Unlock()

		var timer clock.Timer
		var fire <-chan time.Time
		if has {
			timer = s.clock.NewTimer(next.Sub(s.now()))
			fire = timer.Chan()
		}
		select {
		case <-s.ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-s.wake:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}
