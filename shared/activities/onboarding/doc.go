// Package onboarding holds the activities of the onboarding workflow: one
// small handler per Task of statemachines/onboarding.asl.json (take the
// site slot, validate, discover, commission, power cycle, the machine
// checks, verify the hardware, configure the machine and its storage, the
// PXE preflight, RoCE, the pre-deploy checks, deploy, classify and recover
// a failed deploy, await the enrollment, the completion gates, reset,
// adopt, finish), and the machine and site watches
// (statemachines/machine-watch.asl.json), each with typed input and
// output. The ASL decides the order, the waits, the retries and the
// fallbacks; nothing here loops, sleeps or calls another activity.
//
// Every activity runs in the shared run frame (activities.Frame) through
// call (run.go): it reads the onboarding, checks that the execution's
// attempt and run still own it (a stale step writes nothing), moves it
// into its stage with the stage_entered row in one conditional write, and
// records its exit on the timeline. It decides from what it observes
// (MAAS's status and the record), never from a list of stages it may
// follow.
//
// What both workflows use stays in the parent package: the dependencies
// (activities.Deps), the shared error vocabulary, the error boundary, the
// machine waits' vocabulary, the MAAS access helpers and the frame. The
// error types only the onboarding returns are declared here, and added to
// the routing table by errors.go.
package onboarding
