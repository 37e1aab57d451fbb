// Package decommission holds the activities of the decommission workflow:
// one small handler per Task of statemachines/decommission.asl.json (begin,
// drain the tenants' allocations, release with the policy's erase, check
// the release and its fallback, delete the machine, start and check a
// reimage's onboarding, finish), each with typed input and output. The ASL
// decides the order, the waits, the retries and the fallbacks; nothing here
// loops, sleeps or calls another activity.
//
// Every activity runs in the shared run frame (activities.Frame): it reads
// the decommission, checks that the execution's attempt and run still hold
// it and that an operator has not stopped the run, moves it into its stage
// with the stage_entered row in one conditional write, and records its
// exit on the timeline. It decides from what it observes (MAAS's status
// and the record), never from a list of stages it may follow.
//
// What both workflows use stays in the parent package: the dependencies
// (activities.Deps), the shared error vocabulary, the error boundary, the
// MAAS access helpers and the frame. The error types only the
// decommission returns, and the workflow codes its state machine writes,
// are declared here (errors.go) and added to the routing table there.
package decommission
