package localstack

import (
	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/workflow"
)

// startMachineWatch loads the machine watch state machine, its WatchSites
// task resolved through subs like the onboarding's tasks, and starts it
// every minute of the stack's clock, as the AWS deployment's schedule
// does: the onboardings' machine waits park on it. close stops the ticker
// before it stops the running executions.
func (s *Stack) startMachineWatch(subs map[string]string, clk clock.Clock) error {
	arn, stop, err := workflow.StartLocalMachineWatch(s.Engine, subs, clk, s.logger.With("component", "machine-watch"))
	if err != nil {
		return err
	}
	s.machineWatchARN, s.stopMachineWatch = arn, stop
	return nil
}
