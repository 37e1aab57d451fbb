package awsenv

import (
	"context"
	"os"
	"strconv"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/google/uuid"

	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/shared/metrics"
	"github.com/maasflow/maasflow/shared/reconcile"
	"github.com/maasflow/maasflow/shared/workflow"
)

// Reconcile returns the reconcile runner of the reconcile function: drift
// counts go to stdout as CloudWatch embedded metric format lines.
func Reconcile(ctx context.Context) (*reconcile.Runner, error) {
	c, err := load(ctx)
	if err != nil {
		return nil, err
	}
	return c.reconcileRunner(ctx)
}

func (c *clients) reconcileRunner(ctx context.Context) (*reconcile.Runner, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	return reconcile.New(reconcile.Config{Interval: reconcileInterval()}, reconcile.Deps{
		Store:      c.store,
		MAAS:       reconcile.SiteConnector{Sites: c.store, Secrets: c.secrets, Paths: c.paths},
		Executions: workflow.SFNStatus{Client: sfn.NewFromConfig(cfg)},
		Events:     c.bus,
		Metrics:    metrics.NewEMF(os.Stdout, nil),
		Clock:      clock.Real(),
		NewID:      uuid.NewString,
		Logger:     c.logger,
	}), nil
}

// reconcilerForAPI is what the api function serves /reconciliation with:
// runs start the reconcile state machine. ok is false (the routes answer
// 503) when the stack did not configure it.
func (c *clients) reconcilerForAPI(ctx context.Context) (rc reconcile.Remote, ok bool, err error) {
	arn := os.Getenv(config.EnvReconcileStateMachine)
	if arn == "" {
		return reconcile.Remote{}, false, nil
	}
	r, err := c.reconcileRunner(ctx)
	if err != nil {
		return reconcile.Remote{}, false, err
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return reconcile.Remote{}, false, err
	}
	return reconcile.Remote{Runner: r, Starter: workflow.SFNReconcile{Client: sfn.NewFromConfig(cfg), ARN: arn}}, true, nil
}

// reconcileInterval reads the schedule's period; zero when unset or
// malformed (the status then shows no next run).
func reconcileInterval() time.Duration {
	n, err := strconv.Atoi(os.Getenv(config.EnvReconcileInterval))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Minute
}
