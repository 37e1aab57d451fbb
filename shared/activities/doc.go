// Package activities holds the onboarding workflow's activities: one small
// handler per Task of statemachines/onboarding.asl.json, each with typed
// input and output and the typed errors the state machine matches by name
// (the Go type name is the ASL error name). The ASL decides the order, the
// waits, the retries and the fallbacks; nothing here loops, sleeps or calls
// another activity.
//
// Every activity is idempotent (Step Functions and Lambda both retry): it
// reads the onboarding from the read model, checks that the execution's
// attempt still owns it, moves its stage only from the stage it expects,
// records entry, exit and outcome on the timeline, and acts on MAAS only
// after reading the machine's current status.
//
// The same handlers run as Lambda functions (functions/<name>) and in the
// embedded runtime of `maasflow local`; both wrap them with aws-lambda-go's
// handler, so inputs are decoded with unknown fields refused.
//
// It imports domain, the MAAS port types (shared/maas), the store's typed
// errors, enroll and events; never an AWS SDK package, api or workflow.
package activities
