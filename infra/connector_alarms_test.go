package main

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/shared/connector/sqsrelay"
)

// checkConnectorDLQAlarms checks that the alarm the api function makes for
// a DLQ it makes (sqsrelay.DLQAlarm) is the one the stack makes for a
// listed site's DLQ, on the same topic, which the api function is told.
func checkConnectorDLQAlarms(t *testing.T, cfn *cfnTemplate) {
	t.Helper()
	const dlq = "maasflow-prod-connector-site-a-dlq"
	topicID, _ := cfn.byID(t, "AWS::SNS::Topic", "AlarmTopic")
	var stack map[string]any
	for _, r := range cfn.Resources {
		if r.Type == "AWS::CloudWatch::Alarm" && r.Properties["AlarmName"] == dlq {
			stack = r.Properties
		}
	}
	require.NotNil(t, stack, "the listed site's DLQ alarm %s", dlq)
	api := sqsrelay.DLQAlarm(dlq, "site-a", "topic")
	assert.Equal(t, aws.ToString(api.MetricName), stack["MetricName"])
	assert.Equal(t, aws.ToString(api.Namespace), stack["Namespace"])
	assert.Equal(t, string(api.Statistic), stack["Statistic"])
	assert.InDelta(t, float64(aws.ToInt32(api.Period)), stack["Period"], 0)
	assert.InDelta(t, aws.ToFloat64(api.Threshold), stack["Threshold"], 0)
	assert.InDelta(t, float64(aws.ToInt32(api.EvaluationPeriods)), stack["EvaluationPeriods"], 0)
	assert.InDelta(t, float64(aws.ToInt32(api.DatapointsToAlarm)), stack["DatapointsToAlarm"], 0)
	assert.Equal(t, string(api.ComparisonOperator), stack["ComparisonOperator"])
	assert.Equal(t, aws.ToString(api.TreatMissingData), stack["TreatMissingData"])
	assert.Equal(t, aws.ToString(api.AlarmDescription), stack["AlarmDescription"])
	require.Len(t, api.Dimensions, 1)
	dims := fmt.Sprint(stack["Dimensions"])
	assert.Contains(t, dims, "Name:"+aws.ToString(api.Dimensions[0].Name))
	assert.Contains(t, dims, "ConnectorSiteADLQ", "the dimension names the DLQ")
	assert.Contains(t, fmt.Sprint(stack["AlarmActions"]), topicID)

	_, fn := cfn.byID(t, "AWS::Lambda::Function", CamelCase(functionAPI)+"Function")
	assert.Equal(t, map[string]any{"Ref": topicID}, envVars(fn)[config.EnvAlarmTopicARN],
		"the api function alarms on the stack's topic")
}
