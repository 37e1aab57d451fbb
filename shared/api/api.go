package api

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/logfield"
	"github.com/maasflow/maasflow/shared/store"
)

// HeaderCorrelationID carries the correlation id in both directions: a valid
// incoming value is kept, anything else is replaced by a fresh id, and every
// answer echoes it.
const HeaderCorrelationID = "X-Correlation-ID"

// Config tunes the handler; zero values take the defaults.
type Config struct {
	// MaxBodyBytes bounds a request body (default 1 MiB); larger is a 413.
	MaxBodyBytes int64
	// ProbeTimeout bounds one site probe (default 15s).
	ProbeTimeout time.Duration
	// DetachedWriteTimeout bounds the calls that must finish even when the
	// caller has gone away (default 5s): writing an audit entry, closing an
	// onboarding whose workflow did not start, completing an enrollment.
	DetachedWriteTimeout time.Duration
	// StreamInterval is how often a stream re-reads its resource (default
	// 500ms), StreamKeepAlive how often an idle one sends a comment
	// (default 15s), StreamMaxAge how long one lasts (default 10m)
	// (stream.go).
	StreamInterval, StreamKeepAlive, StreamMaxAge time.Duration
	// StreamFallback is how often a stream re-reads when Deps.Changes
	// wakes it on writes (default 10s): the writes it cannot see, made by
	// other processes, still reach it.
	StreamFallback time.Duration
	// NoStreams answers every stream with 501 streams_unsupported: a
	// front that buffers whole answers (API Gateway's HTTP API before a
	// Lambda) would hold a stream until it ends. Readers then poll GET.
	NoStreams bool
	// StreamRetry, when set, opens every stream with an SSE retry field:
	// how long an EventSource waits before it reconnects after the
	// stream ends (the stream function on AWS, whose streams end before
	// the function's timeout).
	StreamRetry time.Duration
	// TimeScale, above 1, is how many times faster than real time the
	// stack's clock runs (maasflow local --time-scale): every answer says
	// so in HeaderTimeScale, so a reader can tell that its times are not
	// the wall clock's.
	TimeScale float64
}

// HeaderTimeScale carries Config.TimeScale on every answer when the
// stack's clock runs faster than real time.
const HeaderTimeScale = "X-Maasflow-Time-Scale"

func (c Config) withDefaults() Config {
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.ProbeTimeout <= 0 {
		c.ProbeTimeout = 15 * time.Second
	}
	if c.DetachedWriteTimeout <= 0 {
		c.DetachedWriteTimeout = 5 * time.Second
	}
	if c.StreamInterval <= 0 {
		c.StreamInterval = defaultStreamInterval
	}
	if c.StreamKeepAlive <= 0 {
		c.StreamKeepAlive = defaultStreamKeepAlive
	}
	if c.StreamMaxAge <= 0 {
		c.StreamMaxAge = defaultStreamMaxAge
	}
	if c.StreamFallback <= 0 {
		c.StreamFallback = defaultStreamFallback
	}
	return c
}

// Deps are the handler's ports. Store, Secrets, Starter, Stopper,
// Completer, Prober and Auth are required; Clock defaults to the wall clock,
// NewID to UUID v4 and Logger to a logger that drops everything. Without a
// Stopper, cancelling an onboarding that has an execution answers 503.
type Deps struct {
	Store     Store
	Secrets   SecretStore
	Starter   OnboardingStarter
	Stopper   OnboardingStopper
	Completer EnrollmentCompleter
	Prober    SiteProber
	Auth      Authenticator
	Clock     clock.Clock
	NewID     func() string
	Logger    *slog.Logger
	// Paths, when set, probes each site over its own network path (VPC
	// rules, site connector) instead of Prober.
	Paths PathProber

	// The node lifecycle's ports (lifecycle_ports.go). Without
	// Decommissions a decommission answers 503; without Allocations the
	// node has none.
	Decommissions DecommissionStarter
	Allocations   AllocationReader
	Bundles       BundleConfig
	// Machines reads and aborts MAAS machines for the recovery
	// operations: an onboarding's resume re-reads its machine
	// (recovery_retry.go); a decommission's cancel aborts, its resume and
	// adopt read (decommission_recovery.go). Without it cancel aborts
	// nothing and those reads answer 503.
	Machines MachineOps
	// Refusals counts refused unauthenticated requests; nil makes one.
	Refusals *RefusalCounter
	// Reconciler serves /reconciliation; without it those routes answer 503.
	Reconciler Reconciler

	// NodeIdentity names a node by its credential after enrollment
	// (introspection.go); nil: enrollment tokens only.
	NodeIdentity NodeIdentifier

	// NodeCA issues node certificates at enrollment, renewal and recovery
	// and checks them on the node endpoints, served at NodeAPIURL (mutual
	// TLS); without it those answer 503.
	NodeCA     NodeCA
	NodeAPIURL string

	// Changes, when set, wakes the streams at each write to the store
	// (store.Notifying in local mode); without it they re-read every
	// Config.StreamInterval.
	Changes ChangeNotifier

	// Connectors makes connector sites' queues and issues their
	// connectors' certificates on AWS (connector_cert.go).
	Connectors ConnectorDeps
}

type server struct {
	cfg       Config
	store     Store
	secrets   SecretStore
	starter   OnboardingStarter
	stopper   OnboardingStopper
	completer EnrollmentCompleter
	prober    SiteProber
	paths     PathProber
	auth      Authenticator
	clock     clock.Clock
	newID     func() string
	log       *slog.Logger
	lifecycle lifecycleDeps
	machines  MachineOps
	refusals  *RefusalCounter
	reconcile Reconciler

	nodeIdentity NodeIdentifier

	nodeCA  NodeCA
	nodeURL string
	changes ChangeNotifier

	connectors ConnectorDeps
}

// New returns the API handler: every route of routeTable on a net/http
// ServeMux, JSON 404/405 answers for anything else.
func New(cfg Config, deps Deps) http.Handler { return newHandler(cfg, deps, nil) }

// newHandler is New serving only the routes keep accepts (nil: all); the
// others answer 404 like any unknown path.
func newHandler(cfg Config, deps Deps, keep func(route) bool) http.Handler {
	s := &server{
		cfg:       cfg.withDefaults(),
		store:     deps.Store,
		secrets:   deps.Secrets,
		starter:   deps.Starter,
		stopper:   deps.Stopper,
		completer: deps.Completer,
		prober:    deps.Prober,
		paths:     deps.Paths,
		auth:      deps.Auth,
		clock:     deps.Clock,
		newID:     deps.NewID,
		log:       deps.Logger,
		lifecycle: lifecycleDeps{decoms: deps.Decommissions, allocations: deps.Allocations, bundles: deps.Bundles},
		machines:  deps.Machines,
		refusals:  deps.Refusals,
		reconcile: deps.Reconciler,
		nodeCA:    deps.NodeCA,
		nodeURL:   deps.NodeAPIURL,
		changes:   deps.Changes,

		connectors: deps.Connectors,
	}
	s.nodeIdentity = deps.NodeIdentity
	if s.refusals == nil {
		s.refusals = &RefusalCounter{}
	}
	if s.clock == nil {
		s.clock = clock.Real()
	}
	if s.newID == nil {
		s.newID = uuid.NewString
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.auth == nil {
		s.auth = denyAll{}
	}
	if s.stopper == nil {
		s.stopper = noStopper{}
	}

	mux := http.NewServeMux()
	methods := map[string][]string{}
	for _, rt := range routeTable() {
		if keep != nil && !keep(rt) {
			continue
		}
		if rt.method == http.MethodGet || rt.method == http.MethodDelete {
			rt.noBody = true
		}
		for _, m := range targetParam.FindAllStringSubmatch(rt.pattern, -1) {
			rt.params = append(rt.params, m[1])
		}
		mux.Handle(rt.method+" "+rt.pattern, s.wrap(rt))
		methods[rt.pattern] = append(methods[rt.pattern], rt.method)
	}
	// A path that exists under other methods is a 405 with Allow; ServeMux
	// prefers the method patterns above, so these catch only the rest.
	// They are registered per method: a method-less pattern would conflict
	// with a wildcard sibling under another method (POST …/onboardings/batch
	// beside GET …/onboardings/{id}).
	for pattern, ms := range methods {
		sort.Strings(ms)
		allow := strings.Join(ms, ", ")
		notAllowed := s.wrap(route{pattern: pattern, access: accessPublic, handle: func(_ *server, rq *request) (int, any, error) {
			rq.w.Header().Set("Allow", allow)
			return 0, nil, &StatusError{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed,
				Message: fmt.Sprintf("method %s is not allowed here; use %s", boundedForRecord(rq.r.Method, maxMethod), allow)}
		}})
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
			http.MethodDelete, http.MethodOptions, http.MethodTrace, http.MethodConnect} {
			if slices.Contains(ms, m) || (m == http.MethodHead && slices.Contains(ms, http.MethodGet)) {
				continue
			}
			mux.Handle(m+" "+pattern, notAllowed)
		}
	}
	notFound := s.wrap(route{pattern: "/", access: accessPublic, handle: func(_ *server, rq *request) (int, any, error) {
		return 0, nil, &StatusError{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no such endpoint"}
	}})
	mux.Handle("/", notFound)
	return RefuseUncleanPaths(mux, notFound)
}

// RefuseUncleanPaths hands a request whose path has . or .. segments or
// doubled slashes to refuse, every other one to next. A ServeMux answers
// such a path with a redirect to its cleaned form, which a client may
// follow to an endpoint it never named: no such path is an endpoint. A
// server that mounts the API's handler under a ServeMux of its own wraps
// that mux, with the API's handler (which answers 404) as refuse.
func RefuseUncleanPaths(next, refuse http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !cleanPath(r.URL.Path) {
			refuse.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// cleanPath reports whether p is already in the form ServeMux would clean
// it to (a trailing slash kept).
func cleanPath(p string) bool {
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c == p
}

// access says who may call a route.
type access int

const (
	accessAdmin     access = iota // bearer token of an admin
	accessPublic                  // anyone (health check)
	accessNode                    // the node named by {id}; the body carries its credential
	accessConnector               // the connector of site {id}; the body carries its certificate
)

// route is one endpoint. Mutations name an audit action and a target
// template whose {name} parts are filled from the path.
type route struct {
	method  string
	pattern string
	access  access
	action  string
	target  string
	// noBody: the route takes no request body and refuses one (GET and
	// DELETE always; set for POSTs that act on the path alone).
	noBody bool
	// params are the names of the pattern's path values.
	params []string
	handle func(s *server, rq *request) (status int, body any, err error)
}

// request is what a handler sees of one call.
type request struct {
	// dryRun: the request only says what it would do (dryrun.go); it
	// writes nothing, an audit entry included.
	dryRun        bool
	r             *http.Request
	w             http.ResponseWriter
	correlationID string
	actor         string
	// target is the audit target; handlers refine it (setTarget) once they
	// know the record (e.g. the id of what they created).
	target string
	// pending is the audit entry of a mutation, carried by the first store
	// write the handler makes (nil until the handler runs).
	pending *store.PendingAudit
	// decommissionTarget names the audit target of a decommission the
	// request starts, from its id (nil: node and decommission).
	decommissionTarget func(decommissionID string) string
	log                *slog.Logger
	// authenticated: the caller proved who it is (an admin principal, or a
	// node whose enrollment token was accepted). Only such requests are
	// audited; the others are counted (RefusalCounter).
	authenticated bool
	// refusalReason details a refusal for the sampled log (e.g. why a
	// token was rejected).
	refusalReason string
}

func (rq *request) ctx() context.Context { return rq.r.Context() }

var correlationIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

func (s *server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.clock.Now()
		cid := r.Header.Get(HeaderCorrelationID)
		if !correlationIDPattern.MatchString(cid) {
			cid = s.newID()
		}
		w.Header().Set(HeaderCorrelationID, cid)
		w.Header().Set(HeaderDryRuns, dryRunActions)
		if s.cfg.TimeScale > 1 {
			w.Header().Set(HeaderTimeScale, strconv.FormatFloat(s.cfg.TimeScale, 'g', -1, 64))
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		rq := &request{r: r, w: w, correlationID: cid, log: s.log.With(logfield.CorrelationID, cid), target: expandTarget(rt.target, r)}

		status, body, err := s.run(rt, rq)
		if rt.action != "" && rq.authenticated && !rq.dryRun {
			if aerr := s.audit(rq, rt.action, err); aerr != nil {
				err = aerr
			}
		}
		var failure *StatusError
		if err != nil {
			failure = classify(err)
			status = failure.Status
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", challenge(rt, r))
			}
			s.writeJSON(w, rq, status, errorBody{Error: errorDetail{
				Code: failure.Code, Message: failure.Message, Field: failure.Field, CorrelationID: cid,
			}})
		} else if _, streamed := body.(streamedBody); !streamed {
			s.writeJSON(w, rq, status, body)
		}

		attrs := []any{"method", boundedForRecord(r.Method, maxMethod), "route", rt.pattern, "status", status,
			"duration_ms", s.clock.Since(start).Milliseconds(), "actor", rq.actor}
		switch {
		case status >= 500:
			// The one place a 5xx cause is logged.
			rq.log.ErrorContext(r.Context(), "request failed", append(attrs, "error", errText(err))...)
		case failure != nil && !rq.authenticated:
			// Anyone can send these: counted, and logged as a sample.
			s.refused(r.Context(), rq, rt, status, failure.Code)
		case failure != nil:
			rq.log.InfoContext(r.Context(), "request rejected", append(attrs, "code", failure.Code)...)
		default:
			rq.log.InfoContext(r.Context(), "request", attrs...)
		}
	})
}

// challenge is the WWW-Authenticate of a 401 (RFC 9110 §11.6.1): the bearer
// scheme, and invalid_token (RFC 6750 §3.1) when a credential was presented
// (a node's enrollment token travels in the body).
func challenge(rt route, r *http.Request) string {
	const c = `Bearer realm="maasflow"`
	if rt.access == accessNode || rt.access == accessConnector || r.Header.Get("Authorization") != "" {
		return c + `, error="invalid_token"`
	}
	return c
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// run authenticates and calls the handler; a panic becomes a 500 instead of
// a dropped connection.
func (s *server) run(rt route, rq *request) (status int, body any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panic: %v", p)
		}
	}()
	switch rt.access {
	case accessAdmin:
		p, aerr := s.auth.Authenticate(rq.r)
		if aerr != nil {
			rq.actor = "anonymous"
			return 0, nil, &StatusError{Status: http.StatusUnauthorized, Code: CodeUnauthorized,
				Message: "a valid bearer token is required (Authorization: Bearer <token>)"}
		}
		rq.actor = boundedForRecord(p.Subject, maxActor)
		// A known principal, admin or not: what it does, or tries, is
		// audited under its name.
		rq.authenticated = true
		if !p.Admin {
			return 0, nil, &StatusError{Status: http.StatusForbidden, Code: CodeForbidden,
				Message: "the admin API requires an admin principal"}
		}
	case accessNode:
		// The handler sets authenticated once the node's token is accepted.
		rq.actor = "node:" + boundedForRecord(rq.r.PathValue("id"), maxPathValue)
	case accessConnector:
		// The handler sets authenticated once the certificate is accepted.
		rq.actor = "connector:" + boundedForRecord(rq.r.PathValue("id"), maxPathValue)
	case accessPublic:
	}
	if rt.action != "" {
		// The mutation's audit entry rides its first write, in the same
		// transaction (docs/decisions.md, "Audit rides the change"). A
		// node's request is not authenticated yet: its handler hands the
		// entry to the write that accepts the node's credential only.
		rq.pending = store.NewPendingAudit(s.auditEntry(rq, rt.action, resultSuccess))
		if rt.access == accessAdmin {
			rq.r = rq.r.WithContext(store.WithPendingAudit(rq.r.Context(), rq.pending))
		}
	}
	if err := checkPathValues(rq, rt.params); err != nil {
		return 0, nil, err
	}
	if rt.noBody {
		if err := refuseBody(rq); err != nil {
			return 0, nil, err
		}
	}
	return rt.handle(s, rq)
}

func (s *server) writeJSON(w http.ResponseWriter, rq *request, status int, body any) {
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	b, err := json.Marshal(body)
	if err != nil {
		rq.log.ErrorContext(rq.ctx(), "encode response", "error", err.Error())
		status = http.StatusInternalServerError
		b, _ = json.Marshal(errorBody{Error: errorDetail{Code: CodeInternal, Message: "internal error", CorrelationID: rq.correlationID}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

const resultSuccess = "success"

// setTarget refines the audit target of the request's entry.
func (rq *request) setTarget(target string) {
	rq.target = target
	if rq.pending != nil {
		rq.pending.SetTarget(target)
	}
}

func (s *server) auditEntry(rq *request, action, result string) domain.AuditEntry {
	actor := rq.actor
	if actor == "" {
		actor = "anonymous"
	}
	return domain.AuditEntry{
		ID:            s.newID(),
		Time:          s.clock.Now().UTC(),
		Actor:         actor,
		Action:        action,
		Target:        rq.target,
		Result:        result,
		CorrelationID: rq.correlationID,
	}
}

// auditAhead writes the request's audit entry on its own, before a change
// made outside DynamoDB (stopping a workflow execution) that no store write
// could carry: if the entry cannot be written, the change is not made.
func (s *server) auditAhead(rq *request) error {
	if rq.pending == nil || rq.pending.Written() {
		return nil
	}
	ctx := store.WithPendingAudit(rq.ctx(), nil)
	if err := s.store.AppendAudit(ctx, rq.pending.Entry()); err != nil {
		rq.log.ErrorContext(ctx, "audit entry not written", "target", rq.target, "error", err.Error())
		return &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: "nothing was changed: the audit trail is unavailable; retry later"}
	}
	rq.pending.MarkWritten()
	return nil
}

// audit completes the audit trail of one mutation after its handler ran.
// A success normally committed its entry with its first write; a success
// that wrote nothing gets its entry now, and the request fails (503) if
// that write fails, since a mutation must not go unrecorded. A failure is
// recorded as one: nothing changed when no write carried the entry, and a
// failure after a committed write adds its outcome to the success already
// recorded. Losing a failure's entry is logged: the request fails anyway.
func (s *server) audit(rq *request, action string, handlerErr error) error {
	if handlerErr == nil && rq.pending != nil && rq.pending.Written() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(rq.ctx()), s.cfg.DetachedWriteTimeout)
	defer cancel()
	// This entry is written on its own, never carried by another write.
	ctx = store.WithPendingAudit(ctx, nil)
	e := s.auditEntry(rq, action, resultSuccess)
	if handlerErr == nil {
		if rq.pending != nil {
			e = rq.pending.Entry()
		}
		if err := s.store.AppendAudit(ctx, e); err != nil {
			rq.log.ErrorContext(ctx, "audit entry not written", "action", action, "target", rq.target, "error", err.Error())
			return &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
				Message: "the audit trail is unavailable, so the request was not recorded; retry later"}
		}
		return nil
	}
	e.Result = "failure:" + classify(handlerErr).Code
	if err := s.store.AppendAudit(ctx, e); err != nil {
		rq.log.ErrorContext(ctx, "audit entry lost", "action", action, "target", rq.target, "result", e.Result, "error", err.Error())
	}
	return nil
}

var targetParam = regexp.MustCompile(`\{([a-z_]+)\}`)

// maxActor bounds the caller's name in records and logs.
const maxActor = 256

// expandTarget fills the audit target from the path; the values are
// bounded, as they are chosen by the caller.
func expandTarget(tmpl string, r *http.Request) string {
	return targetParam.ReplaceAllStringFunc(tmpl, func(m string) string {
		return boundedForRecord(r.PathValue(m[1:len(m)-1]), maxPathValue)
	})
}

// denyAll is the authenticator of a handler built without one.
type denyAll struct{}

func (denyAll) Authenticate(*http.Request) (Principal, error) {
	return Principal{}, &UnauthenticatedError{Reason: "no authenticator configured"}
}

// noStopper is the workflow stopper of a handler built without one.
type noStopper struct{}

func (noStopper) StopOnboarding(context.Context, string, string) error {
	return &StopUnavailableError{}
}

// StopUnavailableError: the handler has no way to stop a workflow execution.
type StopUnavailableError struct{}

func (e *StopUnavailableError) Error() string { return "no workflow stopper configured" }
