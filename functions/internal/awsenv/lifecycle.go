package awsenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/allocation"
	"github.com/maasflow/maasflow/shared/api"
	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/shared/secrets"
	"github.com/maasflow/maasflow/shared/workflow"
)

// allocationService is the HTTP adapter to Provisioning.Allocation; ok is
// false when the deployment names none (every drain then stops for an
// operator, and a node has no allocations to check).
func allocationService(getter *secrets.SecretsManager) (svc *allocation.HTTP, ok bool, err error) {
	base, set := os.LookupEnv(config.EnvAllocationServiceURL)
	if !set || strings.TrimSpace(base) == "" {
		return nil, false, nil
	}
	secretName := os.Getenv(config.EnvAllocationTokenSecret)
	token := func(ctx context.Context) (string, error) {
		if secretName == "" {
			return "", fmt.Errorf("%s is not set", config.EnvAllocationTokenSecret)
		}
		b, err := getter.Get(ctx, secretName)
		return strings.TrimSpace(string(b)), err
	}
	svc, err = allocation.NewHTTP(base, token, &http.Client{Timeout: 15 * time.Second})
	return svc, err == nil, err
}

// withLifecycle adds the decommission ports to the activities' deps.
func withLifecycle(d activities.Deps, c *clients) (activities.Deps, error) {
	svc, ok, err := allocationService(c.ownSecrets)
	if err != nil {
		return d, err
	}
	d.Decommissions = c.store
	d.Starter = c.flow
	if ok {
		d.Allocations = svc
	}
	return d, nil
}

// withAPILifecycle adds the node lifecycle's ports to the API's deps.
func withAPILifecycle(d api.Deps, c *clients, sfnClient workflow.SFNAPI) (api.Deps, error) {
	svc, ok, err := allocationService(c.ownSecrets)
	if err != nil {
		return d, err
	}
	if ok {
		d.Allocations = svc
	}
	if arn := os.Getenv(config.EnvDecommissionStateMachine); arn != "" {
		d.Decommissions = workflow.NewStepFunctionsDecommissions(sfnClient, arn)
	}
	// The decommission recovery operations read MAAS (resume, adopt) and
	// abort its operation in progress (cancel) over the site's path.
	d.Machines = activities.NewSiteConnector(c.store, c.secrets, activities.NewMAASClient).WithPaths(c.paths)
	return d, nil
}

// The API's decommission recovery operations find these by type.
var (
	_ api.DecommissionRunner = (*workflow.StepFunctionsDecommissions)(nil)
	_ api.DecommissionRunner = (*workflow.LocalDecommissions)(nil)
	_ api.MachineOps         = (*activities.SiteConnector)(nil)
)
