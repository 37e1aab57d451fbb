// Package workflow starts and signals workflow executions: the onboarding
// state machine's input, the execution name, and the task-token callback the
// node's enrollment completes. Two implementations sit side by side: Local
// drives the embedded ASL runtime (shared/asl), StepFunctions drives AWS Step
// Functions through aws-sdk-go-v2.
//
// It must not import activities or api.
package workflow
