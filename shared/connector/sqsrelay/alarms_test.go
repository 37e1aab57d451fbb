package sqsrelay_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/connector/sqsrelay"
)

const alarmTopic = "arn:aws:sns:eu-west-1:111122223333:maasflow-prod-alarms"

// fakeAlarms keeps alarms by name, as CloudWatch does: a put replaces the
// alarm of that name; deleting a name it does not hold fails with
// ResourceNotFound.
type fakeAlarms struct {
	mu      sync.Mutex
	alarms  map[string]*cloudwatch.PutMetricAlarmInput
	failPut error
}

func newFakeAlarms() *fakeAlarms {
	return &fakeAlarms{alarms: map[string]*cloudwatch.PutMetricAlarmInput{}}
}

func (f *fakeAlarms) PutMetricAlarm(_ context.Context, in *cloudwatch.PutMetricAlarmInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricAlarmOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failPut != nil {
		return nil, f.failPut
	}
	f.alarms[aws.ToString(in.AlarmName)] = in
	return &cloudwatch.PutMetricAlarmOutput{}, nil
}

func (f *fakeAlarms) DeleteAlarms(_ context.Context, in *cloudwatch.DeleteAlarmsInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.DeleteAlarmsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range in.AlarmNames {
		if _, ok := f.alarms[n]; !ok {
			return nil, &cwtypes.ResourceNotFound{Message: aws.String("alarm " + n + " does not exist")}
		}
	}
	for _, n := range in.AlarmNames {
		delete(f.alarms, n)
	}
	return &cloudwatch.DeleteAlarmsOutput{}, nil
}

func (f *fakeAlarms) names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for n := range f.alarms {
		out = append(out, n)
	}
	return out
}

func TestEnsureGivesTheDLQTheStacksAlarm(t *testing.T) {
	f, cw := newFakeSQSAdmin(), newFakeAlarms()
	q := &sqsrelay.Queues{API: f, NamePrefix: "maasflow-prod-connector-", Alarms: &sqsrelay.DLQAlarms{API: cw, TopicARN: alarmTopic}}
	require.NoError(t, q.Ensure(context.Background(), "site-a"))

	a := cw.alarms["maasflow-prod-connector-site-a-dlq"]
	require.NotNil(t, a, "the DLQ's alarm, named as the DLQ")
	assert.Equal(t, "AWS/SQS", aws.ToString(a.Namespace))
	assert.Equal(t, "ApproximateNumberOfMessagesVisible", aws.ToString(a.MetricName))
	assert.Equal(t, []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String("maasflow-prod-connector-site-a-dlq")}}, a.Dimensions)
	assert.Equal(t, cwtypes.StatisticMaximum, a.Statistic)
	assert.Equal(t, int32(300), aws.ToInt32(a.Period))
	assert.Equal(t, int32(1), aws.ToInt32(a.EvaluationPeriods))
	assert.Equal(t, int32(1), aws.ToInt32(a.DatapointsToAlarm))
	assert.InDelta(t, 1.0, aws.ToFloat64(a.Threshold), 0)
	assert.Equal(t, cwtypes.ComparisonOperatorGreaterThanOrEqualToThreshold, a.ComparisonOperator)
	assert.Equal(t, "notBreaching", aws.ToString(a.TreatMissingData))
	assert.Equal(t, []string{alarmTopic}, a.AlarmActions)
	assert.Equal(t, "requests for the connector of site site-a failed repeatedly", aws.ToString(a.AlarmDescription))

	// Again: the same one alarm.
	require.NoError(t, q.Ensure(context.Background(), "site-a"))
	assert.Equal(t, []string{"maasflow-prod-connector-site-a-dlq"}, cw.names())
}

func TestEnsureLeavesTheStacksDLQToTheStacksAlarm(t *testing.T) {
	f, cw := newFakeSQSAdmin(), newFakeAlarms()
	// A listed site's queues, made by the stack (which alarms on its DLQ).
	for _, n := range []string{"maasflow-prod-connector-site-b", "maasflow-prod-connector-site-b-dlq"} {
		f.queues[n] = map[string]string{}
		f.tags[n] = map[string]string{"aws:cloudformation:stack-name": "maasflow-prod"}
	}
	q := &sqsrelay.Queues{API: f, NamePrefix: "maasflow-prod-connector-", Alarms: &sqsrelay.DLQAlarms{API: cw, TopicARN: alarmTopic}}
	require.NoError(t, q.Ensure(context.Background(), "site-b"))
	assert.Empty(t, cw.names())
	assert.Contains(t, f.taken(), "ListQueueTags maasflow-prod-connector-site-b-dlq")
}

// SQS answers CreateQueue of an existing queue with its URL when the given
// attributes match, and a listed site's DLQ has the API's retention and
// encryption: the stack's queues are still the stack's, settings and alarm.
func TestEnsureLeavesTheStacksQueuesAloneWhenCreateQueueSucceeds(t *testing.T) {
	f, cw := newFakeSQSAdmin(), newFakeAlarms()
	f.asSQS = true
	f.queues["maasflow-prod-connector-site-b-dlq"] = map[string]string{"MessageRetentionPeriod": "1209600", "SqsManagedSseEnabled": "true", "Policy": "the stack's"}
	f.queues["maasflow-prod-connector-site-b"] = map[string]string{"Policy": "the stack's"}
	for n := range f.queues {
		f.tags[n] = map[string]string{"aws:cloudformation:stack-name": "maasflow-prod"}
	}
	q := &sqsrelay.Queues{API: f, NamePrefix: "maasflow-prod-connector-", Alarms: &sqsrelay.DLQAlarms{API: cw, TopicARN: alarmTopic}}
	require.NoError(t, q.Ensure(context.Background(), "site-b"))
	assert.Empty(t, cw.names(), "the stack's alarm of the DLQ is CloudFormation's")
	for n, attrs := range f.queues {
		assert.Equal(t, "the stack's", attrs["Policy"], "%s keeps the stack's settings", n)
	}
	assert.NotContains(t, f.taken(), "SetQueueAttributes maasflow-prod-connector-site-b-dlq")

	// The API's own queues, as SQS answers: made again with their alarm.
	require.NoError(t, q.Ensure(context.Background(), "site-a"))
	require.NoError(t, q.Ensure(context.Background(), "site-a"))
	assert.Equal(t, []string{"maasflow-prod-connector-site-a-dlq"}, cw.names())
}

func TestEnsureFailsWhenTheAlarmCannotBeMade(t *testing.T) {
	f, cw := newFakeSQSAdmin(), newFakeAlarms()
	cw.failPut = errors.New("AccessDenied: not authorized to perform cloudwatch:PutMetricAlarm")
	q := &sqsrelay.Queues{API: f, NamePrefix: "maasflow-prod-connector-", Alarms: &sqsrelay.DLQAlarms{API: cw, TopicARN: alarmTopic}}
	err := q.Ensure(context.Background(), "site-a")
	require.ErrorContains(t, err, "alarm of queue maasflow-prod-connector-site-a-dlq")
	require.ErrorContains(t, err, "AccessDenied")
}

func TestRemoveDeletesTheDLQsAlarmWithIt(t *testing.T) {
	f, cw := newFakeSQSAdmin(), newFakeAlarms()
	q := &sqsrelay.Queues{API: f, NamePrefix: "maasflow-prod-connector-", Alarms: &sqsrelay.DLQAlarms{API: cw, TopicARN: alarmTopic}}
	require.NoError(t, q.Ensure(context.Background(), "site-a"))
	require.Len(t, cw.names(), 1)

	require.NoError(t, q.Remove(context.Background(), "site-a"))
	assert.Empty(t, cw.names())
	assert.Empty(t, f.queues)

	// An alarm already gone (deleted by hand, or a repeated request whose
	// queue deletion failed after it) is no error.
	require.NoError(t, q.Ensure(context.Background(), "site-a"))
	delete(cw.alarms, "maasflow-prod-connector-site-a-dlq")
	require.NoError(t, q.Remove(context.Background(), "site-a"))
	assert.Empty(t, f.queues)
}
