package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/jsii-runtime-go"

	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/statemachines"
)

// syncRuleName is the EventBridge managed rule through which Step Functions
// learns that a child execution started with .sync has ended; the parent's
// role must be allowed to create and read it.
const syncRuleName = "StepFunctionsGetEventsForStepFunctionsExecutionRule"

func (b *builder) batchName() string { return b.name("batch-onboarding") }

// batchMachine builds the batch onboarding state machine: one execution per
// batch, every row a child execution of the onboarding state machine.
func (b *builder) batchMachine() {
	// Named with part of the stack ID, as the onboarding's: a log group a
	// destroyed stack retained never blocks the next deploy.
	logs := awslogs.NewLogGroup(b.stack, jsii.String("BatchOnboardingLogs"), &awslogs.LogGroupProps{
		LogGroupName: awscdk.Fn_Join(jsii.String(""), &[]*string{
			jsii.String("/aws/vendedlogs/states/" + b.batchName() + "-"), b.stackIDSuffix(),
		}),
		Retention: logRetention,
	})
	sm := awsstepfunctions.NewStateMachine(b.stack, jsii.String("BatchOnboarding"), &awsstepfunctions.StateMachineProps{
		StateMachineName:        jsii.String(b.batchName()),
		StateMachineType:        awsstepfunctions.StateMachineType_STANDARD,
		DefinitionBody:          awsstepfunctions.DefinitionBody_FromString(jsii.String(string(statemachines.BatchOnboarding))),
		DefinitionSubstitutions: &map[string]*string{"OnboardingStateMachineArn": b.machine.StateMachineArn()},
		Logs: &awsstepfunctions.LogOptions{
			Destination:          logs,
			Level:                awsstepfunctions.LogLevel_ERROR,
			IncludeExecutionData: jsii.Bool(false),
		},
		TracingEnabled: jsii.Bool(true),
	})
	nagStateMachine(sm)
	nagSuppress(sm, "AwsSolutions-IAM5", nagExecutions, nagExecutionsARN)
	// .sync:2 starts, describes and (when the batch is stopped) stops the
	// children, and watches their end through the managed rule.
	sm.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("states:StartExecution"),
		Resources: jsii.Strings(*b.onboardingARN()),
	}))
	sm.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("states:DescribeExecution", "states:StopExecution"),
		Resources: jsii.Strings(*b.executionsARN()),
	}))
	sm.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("events:PutTargets", "events:PutRule", "events:DescribeRule"),
		Resources: jsii.Strings(*b.stack.FormatArn(&awscdk.ArnComponents{
			Service: jsii.String("events"), Resource: jsii.String("rule"), ResourceName: jsii.String(syncRuleName),
			ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME,
		})),
	}))

	api := b.fns[functionAPI]
	api.AddEnvironment(jsii.String(config.EnvBatchStateMachine), sm.StateMachineArn(), nil)
	sm.GrantStartExecution(api)
	b.batch = sm
}
