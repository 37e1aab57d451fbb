package localstack

import (
	"context"
	"net/http"
	"time"

	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/metrics"
	"github.com/maasflow/maasflow/shared/reconcile"
	"github.com/maasflow/maasflow/shared/secrets"
	"github.com/maasflow/maasflow/shared/workflow"
)

// DefaultReconcileInterval is how often local mode's schedule starts a
// reconcile run, in the stack's (scaled) time.
const DefaultReconcileInterval = 5 * time.Minute

// reconcileInterval resolves Config.ReconcileInterval: zero is the
// default, negative turns the schedule off.
func reconcileInterval(cfg Config) time.Duration {
	switch {
	case cfg.ReconcileInterval < 0:
		return 0
	case cfg.ReconcileInterval == 0:
		return DefaultReconcileInterval
	}
	return cfg.ReconcileInterval
}

// startReconcile builds the runner, the metrics and the schedule.
func (s *Stack) startReconcile(cfg Config, clk clock.Clock, secretStore secrets.Getter) {
	s.Metrics = metrics.NewPrometheus()
	cancelSub := s.Bus.Subscribe(s.Metrics.ObserveEvent)
	s.closers = append(s.closers, func() error { cancelSub(); return nil })

	interval := reconcileInterval(cfg)
	s.Reconciler = reconcile.New(reconcile.Config{Interval: interval}, reconcile.Deps{
		Store:      s.Store,
		MAAS:       reconcile.SiteConnector{Sites: s.Store, Secrets: secretStore},
		Executions: workflow.LocalStatus{Engine: s.Engine},
		Events:     s.Bus,
		Metrics:    s.Metrics,
		Clock:      clk,
		Logger:     s.logger.With("component", "reconcile"),
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	// Closers run in reverse order: this one, added last, stops the
	// schedule and waits for runs before the stores close.
	s.closers = append(s.closers, func() error {
		cancel()
		<-done
		s.Reconciler.Wait()
		return nil
	})
	if interval == 0 {
		close(done)
		return
	}
	go func() {
		defer close(done)
		for {
			s.Reconciler.SetNext(clk.Now().Add(interval).UTC())
			t := clk.NewTimer(interval)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.Chan():
			}
			if _, _, err := s.Reconciler.Run(ctx, "", reconcile.TriggerSchedule); err != nil && ctx.Err() == nil {
				s.logger.Error("scheduled reconcile run", "error", err.Error())
			}
		}
	}()
}

// metricsHandler serves GET /metrics.
func (s *Stack) metricsHandler() http.Handler { return s.Metrics.Handler() }
