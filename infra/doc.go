// Command infra is the maasflow AWS CDK app. `cdk synth` and `cdk deploy`
// run it through cdk.json at the repository root (`go run ./infra`); it
// reads functions/*/main.go and statemachines/onboarding.asl.json from the
// working directory and the function binaries from bin/<name>/bootstrap
// (make build). docs/deploy.md lists the context keys and parameters.
//
// It imports shared/ only for the names both sides must agree on: the table
// schema (shared/store), environment variable names and defaults
// (shared/config). It must not import the activities or any adapter.
package main
