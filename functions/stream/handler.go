package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/maasflow/maasflow/shared/api"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/reconcile"
	"github.com/maasflow/maasflow/shared/store"
)

// The streams' pace on AWS. Nothing in this process sees the other
// functions' writes, so an open stream re-reads its resource every
// streamInterval (docs/deploy.md, "Live updates on AWS", gives the reads
// this costs per open stream). A stream ends after streamMaxAge, and in
// any case streamDeadline before the invocation's timeout; the reader
// reconnects (the console at once, an EventSource after streamRetry) and
// gets the current state first, so no event id needs replaying.
const (
	streamInterval = 2 * time.Second
	streamMaxAge   = 14 * time.Minute
	streamRetry    = 2 * time.Second
)

// streamConfig is the API's configuration in the stream function.
func streamConfig() api.Config {
	return api.Config{StreamInterval: streamInterval, StreamMaxAge: streamMaxAge, StreamRetry: streamRetry}
}

// streamStore is what the streams read: the API's store, and drift.
type streamStore interface {
	api.Store
	ListDrift(ctx context.Context, f store.DriftFilter) (store.DriftPage, error)
}

// newHandler serves the admin API's stream routes, and only those, over
// st with auth checking every caller.
func newHandler(cfg api.Config, st streamStore, auth api.Authenticator, log *slog.Logger) http.Handler {
	h := api.NewStreams(cfg, api.Deps{Store: st, Auth: auth, Logger: log, Reconciler: driftReader{st}})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(flushWriter{w}, r)
	})
}

// flushWriter gives lambdaurl's response writer the Flush the streams call
// after each event: that writer has none, and hands every Write to the
// response stream at once (an unbuffered pipe the runtime client sends on
// chunk by chunk), so there is nothing to flush. A writer that buffers
// (net/http's, in tests and behind other fronts) is flushed.
type flushWriter struct{ http.ResponseWriter }

func (f flushWriter) Flush() {
	if fl, ok := f.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}

func (f flushWriter) Unwrap() http.ResponseWriter { return f.ResponseWriter }

// errNotServed: the stream function serves only reads of drift.
var errNotServed = errors.New("the stream function serves only the streams")

// driftReader serves the drift stream's reads from the store; the
// reconciliation's runs and decisions belong to the api function.
type driftReader struct{ st streamStore }

var _ api.Reconciler = driftReader{}

func (d driftReader) ListDrift(ctx context.Context, f store.DriftFilter) (store.DriftPage, error) {
	return d.st.ListDrift(ctx, f)
}

func (driftReader) Trigger(context.Context, string) (domain.ReconcileRun, bool, error) {
	return domain.ReconcileRun{}, false, errNotServed
}

func (driftReader) Status(context.Context) (reconcile.Status, error) {
	return reconcile.Status{}, errNotServed
}

func (driftReader) Resolve(context.Context, reconcile.Resolution) (domain.DriftItem, error) {
	return domain.DriftItem{}, errNotServed
}

func (driftReader) OpenDrift(context.Context, string, string) (domain.DriftItem, error) {
	return domain.DriftItem{}, errNotServed
}
