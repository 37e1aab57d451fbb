package sqsrelay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// A connector site's DLQ alarm: a request that failed MaxReceives times
// sits in the DLQ, and one is enough to tell the operator (the stack's
// alarm for a listed site is the same, infra/alarms.go).
const (
	// DLQAlarmPeriod is the period of the DLQ's depth the alarm reads.
	DLQAlarmPeriod = 5 * time.Minute
	// DLQAlarmThreshold is the depth that alarms.
	DLQAlarmThreshold = 1
	// DLQAlarmMetric is SQS's metric of the messages waiting in a queue,
	// read as its maximum over the period.
	DLQAlarmMetric    = "ApproximateNumberOfMessagesVisible"
	dlqAlarmNamespace = "AWS/SQS"
	dlqAlarmStatistic = cwtypes.StatisticMaximum
)

// AlarmAPI is the part of the CloudWatch client that makes and deletes a
// DLQ's alarm.
type AlarmAPI interface {
	PutMetricAlarm(ctx context.Context, in *cloudwatch.PutMetricAlarmInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricAlarmOutput, error)
	DeleteAlarms(ctx context.Context, in *cloudwatch.DeleteAlarmsInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.DeleteAlarmsOutput, error)
}

// DLQAlarms makes the alarm of each DLQ the API makes, notifying TopicARN
// (the stack's alarm topic). Its name is the DLQ's, which the api
// function's grant covers (maasflow-<stage>-connector-*).
type DLQAlarms struct {
	API      AlarmAPI
	TopicARN string
}

// DLQAlarm is the alarm on the DLQ named dlq of site's connector.
func DLQAlarm(dlq, site, topicARN string) *cloudwatch.PutMetricAlarmInput {
	return &cloudwatch.PutMetricAlarmInput{
		AlarmName:          aws.String(dlq),
		AlarmDescription:   aws.String("requests for the connector of site " + site + " failed repeatedly"),
		Namespace:          aws.String(dlqAlarmNamespace),
		MetricName:         aws.String(DLQAlarmMetric),
		Dimensions:         []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String(dlq)}},
		Statistic:          dlqAlarmStatistic,
		Period:             aws.Int32(int32(DLQAlarmPeriod / time.Second)),
		EvaluationPeriods:  aws.Int32(1),
		DatapointsToAlarm:  aws.Int32(1),
		Threshold:          aws.Float64(DLQAlarmThreshold),
		ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanOrEqualToThreshold,
		TreatMissingData:   aws.String("notBreaching"),
		ActionsEnabled:     aws.Bool(true),
		AlarmActions:       []string{topicARN},
	}
}

// put makes or replaces the alarm of site's DLQ.
func (a *DLQAlarms) put(ctx context.Context, dlq, site string) error {
	if _, err := a.API.PutMetricAlarm(ctx, DLQAlarm(dlq, site, a.TopicARN)); err != nil {
		return fmt.Errorf("alarm of queue %s: %w", dlq, err)
	}
	return nil
}

// remove deletes the alarm of the DLQ named dlq; one already gone is no
// error.
func (a *DLQAlarms) remove(ctx context.Context, dlq string) error {
	_, err := a.API.DeleteAlarms(ctx, &cloudwatch.DeleteAlarmsInput{AlarmNames: []string{dlq}})
	var missing *cwtypes.ResourceNotFound
	if err != nil && !errors.As(err, &missing) {
		return fmt.Errorf("delete alarm of queue %s: %w", dlq, err)
	}
	return nil
}
