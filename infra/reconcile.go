package main

import (
	"fmt"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/jsii-runtime-go"

	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/statemachines"
)

// Reconciliation (docs/reconciliation.md): the reconcile function, the
// reconcile state machine it is every state of, and the schedule.
const (
	functionReconcile = "reconcile"
	// ctxReconcileInterval is the schedule's period in minutes (cdk.json
	// context or -c); 0 turns the schedule off, runs then only start from
	// the API.
	ctxReconcileInterval            = "maasflow:reconcileIntervalMinutes"
	defaultReconcileIntervalMinutes = 15
	// reconcileTimeoutSec covers one site step: two list calls per 100
	// nodes and at most 25 BMC queries, 4 at a time, 90 s each.
	reconcileTimeoutSec = 900
	reconcileMemoryMB   = 512
)

func (b *builder) reconcileName() string { return b.name("reconcile") }

// reconcile adds the reconcile state machine and its schedule when
// functions/reconcile exists.
func (b *builder) reconcile() {
	fn, ok := b.fns[functionReconcile]
	if !ok {
		return
	}
	minutes, err := b.contextMinutes(ctxReconcileInterval, defaultReconcileIntervalMinutes)
	if err != nil {
		b.stack.Node().AddValidation(&invalidProps{err: err})
		return
	}
	// A site step may take longer than an activity's bound.
	if cfn, ok := fn.Node().DefaultChild().(awslambda.CfnFunction); ok {
		cfn.SetTimeout(jsii.Number(reconcileTimeoutSec))
		cfn.SetMemorySize(jsii.Number(reconcileMemoryMB))
	}
	// An open onboarding's execution status (execution_not_running drift).
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("states:DescribeExecution"),
		Resources: jsii.Strings(*b.executionsARN()),
	}))
	nagSuppress(b.roles[functionReconcile], "AwsSolutions-IAM5", nagExecutions, nagExecutionsARN)

	// Named with part of the stack ID, as the onboarding's: a log group a
	// destroyed stack retained never blocks the next deploy.
	logs := awslogs.NewLogGroup(b.stack, jsii.String("ReconcileStateMachineLogs"), &awslogs.LogGroupProps{
		LogGroupName: awscdk.Fn_Join(jsii.String(""), &[]*string{
			jsii.String("/aws/vendedlogs/states/" + b.reconcileName() + "-"), b.stackIDSuffix(),
		}),
		Retention: logRetention,
	})
	sm := awsstepfunctions.NewStateMachine(b.stack, jsii.String("ReconcileStateMachine"), &awsstepfunctions.StateMachineProps{
		StateMachineName:        jsii.String(b.reconcileName()),
		StateMachineType:        awsstepfunctions.StateMachineType_STANDARD,
		DefinitionBody:          awsstepfunctions.DefinitionBody_FromString(jsii.String(string(statemachines.Reconcile))),
		DefinitionSubstitutions: &map[string]*string{"ReconcileFunctionArn": fn.FunctionArn()},
		Logs: &awsstepfunctions.LogOptions{
			Destination:          logs,
			Level:                awsstepfunctions.LogLevel_ERROR,
			IncludeExecutionData: jsii.Bool(false),
		},
		TracingEnabled: jsii.Bool(true),
	})
	nagStateMachine(sm)
	fn.GrantInvoke(sm)
	b.recon = sm

	interval := jsii.String(strconv.Itoa(minutes))
	fn.AddEnvironment(jsii.String(config.EnvReconcileInterval), interval, nil)
	api := b.fns[functionAPI]
	api.AddEnvironment(jsii.String(config.EnvReconcileStateMachine), sm.StateMachineArn(), nil)
	api.AddEnvironment(jsii.String(config.EnvReconcileInterval), interval, nil)
	sm.GrantStartExecution(api)

	if minutes == 0 {
		return
	}
	b.schedule("Reconcile", "the reconcile state machine", "maasflow reconcile run every "+strconv.Itoa(minutes)+" minutes",
		sm, minutes, `{"trigger":"schedule"}`)
}

// schedule starts sm every minutes with input through EventBridge
// Scheduler, under a role that may start sm only (id prefixes the role's
// and the schedule's construct ids; what names sm in the role's
// description). The flexible window is off: a start that drifts inside a
// window would stretch the period the schedule promises.
func (b *builder) schedule(id, what, description string, sm awsstepfunctions.StateMachine, minutes int, input string) {
	role := awsiam.NewRole(b.stack, jsii.String(id+"ScheduleRole"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("scheduler.amazonaws.com"), nil),
		Description: jsii.String("EventBridge Scheduler starts " + what),
	})
	sm.GrantStartExecution(role)
	awsscheduler.NewCfnSchedule(b.stack, jsii.String(id+"Schedule"), &awsscheduler.CfnScheduleProps{
		Description:        jsii.String(description),
		ScheduleExpression: jsii.String(rateExpression(minutes)),
		FlexibleTimeWindow: &awsscheduler.CfnSchedule_FlexibleTimeWindowProperty{Mode: jsii.String("OFF")},
		State:              jsii.String("ENABLED"),
		Target: &awsscheduler.CfnSchedule_TargetProperty{
			Arn:     sm.StateMachineArn(),
			RoleArn: role.RoleArn(),
			Input:   jsii.String(input),
		},
	})
}

// rateExpression is EventBridge Scheduler's rate(): the unit is singular
// for 1.
func rateExpression(minutes int) string {
	if minutes == 1 {
		return "rate(1 minute)"
	}
	return fmt.Sprintf("rate(%d minutes)", minutes)
}
