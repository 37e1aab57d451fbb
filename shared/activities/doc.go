// Package activities holds what every workflow's activities share: the
// dependencies (Deps and the ports they list), the typed errors both
// workflows return and the state machines match by name (the Go type name
// is the ASL error name) with their routing table (ErrorRoutes, to which a
// workflow package adds the types only it declares), the error boundary,
// the machine waits' vocabulary (poll targets, outcomes, backoff), what a
// Catch hands the finishing step (CatchResult, FailureFrom), the MAAS
// access helpers (SiteConnector, ReleaseParams, Releasable) and the run
// frame. The activities themselves are in one sub-package per workflow:
// onboarding (and the site and machine watches) and decommission. The ASL
// decides the order, the waits, the retries and the fallbacks; nothing here
// loops, sleeps or calls another activity.
//
// Every activity is idempotent (Step Functions and Lambda both retry): it
// reads its record from the read model, checks that the execution's attempt
// and run still own it (a stale step writes nothing), records its stage's
// entry, exit and outcome on the timeline, and acts on MAAS only after
// reading the machine's current status. Which stage may follow which is the
// ASL's alone: an activity decides from what it observes (MAAS's status and
// the record), never from a list of stages it may follow.
//
// Every activity runs in one frame whatever its workflow (Frame in
// frame.go): a workflow states its record's rules once (how a stored
// record refuses a stale or stopped run, its conditional write with
// timeline rows, how a row is stamped), and onboarding's call and
// decommission's dcall (each in its workflow's package) are thin users of
// it. A stage change and its stage_entered row are always one conditional
// write.
//
// The same handlers run as Lambda functions (functions/<name>) and in the
// embedded runtime of `maasflow local`; both wrap them with aws-lambda-go's
// handler, so inputs are decoded with unknown fields refused.
//
// It imports domain, the MAAS port types (shared/maas), the store's typed
// errors, enroll and events; never an AWS SDK package, api or workflow,
// and never a workflow's activities package.
package activities
