package run

import "github.com/maasflow/maasflow/shared/domain"

// Fence is the claim an execution holds on its record: the attempt and
// the run it was started for. A recovery operation that runs the record
// again moves the attempt or the run, so a step of the run it replaced (a
// stopped execution's Lambda still in flight, which Step Functions does
// not cancel) no longer holds the record and writes nothing. Every write
// of a step is conditional on Holds, judged on the stored record.
type Fence struct {
	Attempt int
	Run     int
}

// Holds reports whether a record on attempt and run is still the
// execution's.
func (f Fence) Holds(attempt, run int) bool { return f.Attempt == attempt && f.Run == run }

// Timeline outcomes of a stage's exit.
const (
	OutcomeOK     = "ok"
	OutcomeRetry  = "retry"
	OutcomeFailed = "failed"
	OutcomeManual = "manual_intervention"
)

// ExitOutcome is a failed stage exit's outcome on the timeline: what the
// state machine does next with an error of class.
func ExitOutcome(class domain.ErrorClass) string {
	switch class {
	case domain.ErrorRetryable:
		return OutcomeRetry
	case domain.ErrorNeedsOperator:
		return OutcomeManual
	}
	return OutcomeFailed
}

// StageOrStart names a stage on the timeline; the empty stage (before the
// first) is "start".
func StageOrStart[S ~string](s S) string {
	if s == "" {
		return "start"
	}
	return string(s)
}

// EnteredDetail is the detail of a stage_entered row: the stage the record
// left. A stage entry writes it with the record's stage change, in one
// conditional write (the stores' Update…WithTimeline), so that no crash
// leaves one without the other.
func EnteredDetail[S ~string](from S) string { return "from " + StageOrStart(from) }
