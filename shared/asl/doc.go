// Package asl is the embedded Amazon States Language runtime: it parses and
// validates state machine definitions and runs them with AWS Step Functions'
// semantics (Standard workflows, JSONPath query language), so that the same
// statemachines/*.asl.json files behave on one machine as they do on AWS.
//
// It owns definition loading (with CloudFormation-style ${Name}
// substitutions), validation that names the state and field of every
// problem, the interpreter (every state type, input/output processing, the
// context object, Retry/Catch with the reserved States.* error names,
// timeouts, heartbeats and task tokens), executions with an AWS-shaped
// history, AWS's payload and history limits, and a virtual clock for running
// in pure virtual time. Intrinsic functions live in the intrinsic
// subpackage.
//
// Tasks are Go handlers called through aws-lambda-go's handler interface, so
// errors are named exactly as AWS Lambda names them. Where AWS's recorded
// behaviour differs from its documentation, the recording wins; the choices
// are listed in docs/asl-runtime.md.
//
// It knows nothing of MAAS and must not import any other maasflow package
// except shared/clock.
package asl
