// Package run is the frame every workflow runs on: the fencing of an
// execution by the record's attempt and run, the timeline outcomes of a
// stage's exit, and one starter of executions over the two engines (the
// embedded ASL runtime of local mode and AWS Step Functions). A workflow
// brings its record, status and stage types and its state machine; it
// copies none of this.
package run
