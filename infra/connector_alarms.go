package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"

	"github.com/maasflow/maasflow/shared/config"
)

// connectorDLQAlarms lets the api function give each DLQ it makes for a
// connector site the alarm the stack gives a listed site's DLQ
// (sqsrelay.DLQAlarm, the same metric, threshold and topic): the alarm
// topic in its environment, and PutMetricAlarm and DeleteAlarms on the
// stage's connector alarm names only (the alarm is named as its DLQ,
// maasflow-<stage>-connector-<site>-dlq).
func (b *builder) connectorDLQAlarms(topic awssns.ITopic) {
	if b.props.ConnectorCA == nil || b.connector.table == nil {
		return // no connector sites through the API
	}
	fn, role := b.fns[functionAPI], b.roles[functionAPI]
	fn.AddEnvironment(jsii.String(config.EnvAlarmTopicARN), topic.TopicArn(), nil)
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("cloudwatch:PutMetricAlarm", "cloudwatch:DeleteAlarms"),
		Resources: jsii.Strings(*b.connectorAlarmsARN()),
	}))
	nagSuppress(role, "AwsSolutions-IAM5", "connector sites are added through the API without a redeploy: "+
		"their DLQ alarms are the stage's connector-<site>-dlq alarms, one name prefix", nagConnectorAlarms)
}

// connectorAlarmsARN is every connector DLQ alarm of the stage.
func (b *builder) connectorAlarmsARN() *string {
	return b.stack.FormatArn(&awscdk.ArnComponents{
		Service: jsii.String("cloudwatch"), Resource: jsii.String("alarm"),
		ResourceName: jsii.String(b.connectorQueueName("") + "*"),
		ArnFormat:    awscdk.ArnFormat_COLON_RESOURCE_NAME,
	})
}

// nagConnectorAlarms matches connectorAlarmsARN as cdk-nag renders it.
const nagConnectorAlarms = `/^Resource::arn:<AWS::Partition>:cloudwatch:<AWS::Region>:<AWS::AccountId>:alarm:maasflow-[a-z0-9]+-connector-\*$/g`
