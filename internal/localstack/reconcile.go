package localstack

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/maasflow/maasflow/shared/asl"
	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/connector"
	"github.com/maasflow/maasflow/shared/metrics"
	"github.com/maasflow/maasflow/shared/reconcile"
	"github.com/maasflow/maasflow/shared/secrets"
	"github.com/maasflow/maasflow/shared/workflow"
	"github.com/maasflow/maasflow/statemachines"
)

// DefaultReconcileInterval is how often local mode's schedule starts a
// reconcile run, in the stack's (scaled) time.
const DefaultReconcileInterval = 5 * time.Minute

// reconcileFunctionARN is the reconcile function's task ARN in the
// embedded runtime.
const reconcileFunctionARN = "arn:aws:lambda:local:000000000000:function:maasflow-reconcile"

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

// prepareReconcile builds the runner and the metrics, and registers the
// reconcile function as a task of the runtime about to be built (ref
// reaches that runtime once it exists).
func (s *Stack) prepareReconcile(cfg Config, clk clock.Clock, secretStore secrets.Getter, paths *connector.Paths, ref *engineRef, tasks map[string]asl.TaskHandler) {
	s.Metrics = metrics.NewPrometheus()
	cancelSub := s.Bus.Subscribe(s.Metrics.ObserveEvent)
	s.closers = append(s.closers, func() error { cancelSub(); return nil })
	s.Reconciler = reconcile.New(reconcile.Config{Interval: reconcileInterval(cfg)}, reconcile.Deps{
		Store:      s.Store,
		MAAS:       reconcile.SiteConnector{Sites: s.Store, Secrets: secretStore, Paths: paths},
		Executions: workflow.LocalStatus{Engine: ref},
		Events:     s.Bus,
		Metrics:    s.Metrics,
		Clock:      clk,
		Logger:     s.logger.With("component", "reconcile"),
	})
	tasks[reconcileFunctionARN] = freshHandler{fn: s.Reconciler.Step}
}

// startReconcile loads the reconcile state machine, which both the API's
// runs and the schedule execute (as on AWS), and starts the schedule. It
// returns what the API serves /reconciliation with.
func (s *Stack) startReconcile(cfg Config, clk clock.Clock) (reconcile.Remote, error) {
	sm, err := asl.Parse(statemachines.Reconcile, map[string]string{"ReconcileFunctionArn": reconcileFunctionARN})
	if err != nil {
		return reconcile.Remote{}, fmt.Errorf("load reconcile state machine: %w", err)
	}
	arn, err := s.Engine.CreateStateMachine("reconcile", sm)
	if err != nil {
		return reconcile.Remote{}, fmt.Errorf("create reconcile state machine: %w", err)
	}
	s.reconcileARN = arn
	starter := workflow.LocalReconcile{Engine: s.Engine, ARN: arn}

	// One process owns the data directory: a run still holding the lock
	// died with the last process. Finishing it lets the next run start now
	// rather than after the lease.
	if cur, found, err := s.Store.CurrentReconcileRun(context.Background()); err != nil {
		return reconcile.Remote{}, fmt.Errorf("read the current reconcile run: %w", err)
	} else if found {
		if _, err := s.Reconciler.Finish(context.Background(), cur.ID); err != nil {
			return reconcile.Remote{}, fmt.Errorf("finish interrupted reconcile run %s: %w", cur.ID, err)
		}
		s.logger.Warn("finished a reconcile run interrupted by the last shutdown", "run_id", cur.ID)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.closers = append(s.closers, func() error {
		cancel()
		<-done
		// A run under way finishes (a few store writes and MAAS reads per
		// site) so that it releases its lock; past the bound it is
		// stopped and the next start finishes it.
		wctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
		defer stop()
		for _, ex := range s.Engine.ListExecutions(arn, asl.StatusRunning) {
			if _, err := s.Engine.Wait(wctx, ex.ExecutionARN); err != nil {
				_ = s.Engine.StopExecution(ex.ExecutionARN, interruptedCode, "local stack shutting down")
			}
		}
		return nil
	})
	interval := reconcileInterval(cfg)
	if interval == 0 {
		close(done)
		return reconcile.Remote{Runner: s.Reconciler, Starter: starter}, nil
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
			exec, err := starter.StartTick(ctx)
			if err == nil {
				_, err = s.Engine.Wait(ctx, exec)
			}
			if err != nil && ctx.Err() == nil {
				s.logger.Error("scheduled reconcile run", "error", err.Error())
			}
		}
	}()
	return reconcile.Remote{Runner: s.Reconciler, Starter: starter}, nil
}

// metricsHandler serves GET /metrics.
func (s *Stack) metricsHandler() http.Handler { return s.Metrics.Handler() }
