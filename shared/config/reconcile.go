package config

// EnvReconcileStateMachine is the reconcile state machine's ARN, which the
// api function starts on POST /reconciliation/run; unset, those routes
// answer 503. EnvReconcileInterval is the schedule's period in minutes,
// which the status shows.
const (
	EnvReconcileStateMachine = "MAASFLOW_RECONCILE_STATE_MACHINE_ARN"
	EnvReconcileInterval     = "MAASFLOW_RECONCILE_INTERVAL_MINUTES"
)
