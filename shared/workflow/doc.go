// Package workflow starts and signals the executions of each state
// machine: the onboarding, batch, decommission, reconcile and machine watch
// inputs and execution names, and the task-token callback the node's
// enrollment completes. The starting itself is shared/run's Starter over
// an Engine (the embedded ASL runtime, or AWS Step Functions through
// aws-sdk-go-v2); NewLocal and NewStepFunctions give the same Onboardings
// type on either, NewLocalDecommissions and NewStepFunctionsDecommissions
// the same Decommissions type.
//
// It must not import activities or api.
package workflow
