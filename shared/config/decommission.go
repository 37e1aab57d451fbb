package config

// The decommission paths' environment (functions/internal/awsenv, infra).
// The allocation service's bearer token lives in Secrets Manager under the
// secret EnvAllocationTokenSecret names; only the name is in the
// environment.
const (
	EnvDecommissionStateMachine = "MAASFLOW_DECOMMISSION_STATE_MACHINE_ARN"
	EnvAllocationServiceURL     = "MAASFLOW_ALLOCATION_SERVICE_URL"
	EnvAllocationTokenSecret    = "MAASFLOW_ALLOCATION_SERVICE_SECRET_NAME"
)
