package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// Reasons for the cdk-nag AwsSolutions findings the stack keeps. Each
// suppression is made where its construct is created (nagSuppress), and
// infra/nag_test.go fails on any finding without one.
const (
	nagNoResourceActions = "X-Ray's PutTraceSegments/PutTelemetryRecords and, on the VPC path, Lambda's network-interface " +
		"actions support no resource-level permissions (Service Authorization Reference), so their statements name \"*\""
	nagStateMachineWildcards = "\"*\" is X-Ray and the log delivery actions (logs:CreateLogDelivery and the rest), which support no " +
		"resource; <Function.Arn>:* is grantInvoke's qualified ARNs of one function this state machine names"
	nagStateMachineLogLevel = "logs at ERROR without execution data: failures are logged and alarmed (infra/alarms.go) and Step " +
		"Functions keeps every event in the execution history for 90 days; ALL would ingest each transition's events for no new signal"
	// nagExecutionsARN is the executions of one state machine of the stage.
	nagExecutionsARN = `/^Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:maasflow-[a-z0-9-]+:\*$/g`
	nagExecutions    = "Stop and Describe are authorised on executions, whose names are per run: the pattern is the executions " +
		"of one state machine of this stage"
)

// nagSuppress keeps cdk-nag's rule quiet on c and its children for reason;
// appliesTo narrows a granular rule (IAM4, IAM5) to the findings named, a
// string starting with "/" being a regular expression.
func nagSuppress(c constructs.IConstruct, rule, reason string, appliesTo ...string) {
	s := &cdknag.NagPackSuppression{Id: jsii.String(rule), Reason: jsii.String(reason)}
	if len(appliesTo) > 0 {
		var a []any
		for _, x := range appliesTo {
			if len(x) > 0 && x[0] == '/' {
				a = append(a, &cdknag.RegexAppliesTo{Regex: jsii.String(x)})
				continue
			}
			a = append(a, x)
		}
		s.AppliesTo = &a
	}
	cdknag.NagSuppressions_AddResourceSuppressions(c, &[]*cdknag.NagPackSuppression{s}, jsii.Bool(true))
}

// nagStateMachine suppresses what every state machine of the stack keeps.
func nagStateMachine(sm awsstepfunctions.StateMachine) {
	nagSuppress(sm, "AwsSolutions-SF1", nagStateMachineLogLevel)
	nagSuppress(sm, "AwsSolutions-IAM5", nagStateMachineWildcards, "Resource::*", `/^Resource::<[A-Za-z0-9]+Function[0-9A-F]{8}\.Arn>:\*$/g`)
}
