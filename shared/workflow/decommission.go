package workflow

import (
	"context"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/run"
)

// DecommissionInput is the decommission state machine's execution input;
// the activities read everything else from the read model. StartStage,
// when set, enters the workflow at that stage once BeginDecommission ran
// (the state machine's EnterAtStage Choice routes on it); empty starts at
// the drain.
type DecommissionInput struct {
	DecommissionID string `json:"decommission_id"`
	NodeID         string `json:"node_id"`
	SiteID         string `json:"site_id"`
	Mode           string `json:"mode"`
	Attempt        int    `json:"attempt"`
	// Run is the record's run of the attempt; the activities act only
	// while the record is on it, so a stopped run cannot write into the
	// run a recovery operation started.
	Run           int                      `json:"run"`
	CorrelationID string                   `json:"correlation_id"`
	StartStage    domain.DecommissionStage `json:"start_stage,omitempty"`
}

// DecommissionStoppedErrorName is the error a decommission execution
// stopped by an operator (cancel, mark-manual-intervention) ends with, in
// the execution history of both runtimes.
const DecommissionStoppedErrorName = "DecommissionStoppedByOperator"

// decommissionWorkflow is the decommission workflow as the run frame
// starts it.
var decommissionWorkflow = run.Workflow[domain.Decommission, domain.DecommissionStage]{
	Kind: "decommission",
	Run:  func(d domain.Decommission) (string, int, int) { return d.ID, d.Attempt, d.Run },
	Input: func(d domain.Decommission, start domain.DecommissionStage) any {
		return DecommissionInput{DecommissionID: d.ID, NodeID: d.NodeID, SiteID: d.SiteID, Mode: d.Mode,
			Attempt: d.Attempt, Run: d.Run, CorrelationID: d.CorrelationID, StartStage: start}
	},
	StopError: DecommissionStoppedErrorName,
}

// DecommissionExecutionName names a decommission run's execution, so a
// repeated start cannot run it twice (see ExecutionName).
func DecommissionExecutionName(d domain.Decommission) string {
	return run.Starter[domain.Decommission, domain.DecommissionStage]{Workflow: decommissionWorkflow}.Name(d)
}

// Decommissions starts and stops decommission executions on either
// engine.
type Decommissions struct {
	starter run.Starter[domain.Decommission, domain.DecommissionStage]
}

// LocalDecommissions starts decommissions on the embedded ASL runtime.
type LocalDecommissions = Decommissions

// StepFunctionsDecommissions starts decommissions on AWS Step Functions.
type StepFunctionsDecommissions = Decommissions

// NewLocalDecommissions returns a starter of the decommission state
// machine registered under arn on the embedded runtime.
func NewLocalDecommissions(engine LocalEngine, arn string) *LocalDecommissions {
	return newDecommissions(run.Local{Runtime: engine}, arn)
}

// NewStepFunctionsDecommissions returns a starter of the decommission
// state machine arn on Step Functions.
func NewStepFunctionsDecommissions(client SFNAPI, arn string) *StepFunctionsDecommissions {
	return newDecommissions(run.StepFunctions{Client: client}, arn)
}

func newDecommissions(engine run.Engine, arn string) *Decommissions {
	return &Decommissions{starter: run.Starter[domain.Decommission, domain.DecommissionStage]{
		Workflow: decommissionWorkflow, Engine: engine, ARN: arn}}
}

// StartDecommission starts the decommission's current attempt and returns
// the execution ARN.
func (s *Decommissions) StartDecommission(ctx context.Context, d domain.Decommission) (string, error) {
	return s.starter.Start(ctx, d)
}

// StartDecommissionAt starts the decommission's current run at stage start
// (after BeginDecommission); an empty start is StartDecommission.
func (s *Decommissions) StartDecommissionAt(ctx context.Context, d domain.Decommission, start domain.DecommissionStage) (string, error) {
	return s.starter.StartAt(ctx, d, start)
}

// StopDecommission aborts the execution with DecommissionStoppedErrorName;
// once it returns no later state of it writes the record. An execution
// that already ended, or one the engine no longer knows, runs nothing:
// neither is an error.
func (s *Decommissions) StopDecommission(ctx context.Context, executionID, cause string) error {
	return s.starter.Stop(ctx, executionID, cause)
}
