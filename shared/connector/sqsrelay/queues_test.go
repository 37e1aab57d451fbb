package sqsrelay_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/connector/sqsrelay"
)

const queueBase = "https://sqs.eu-west-1.amazonaws.com/111122223333/"

// fakeSQSAdmin keeps queues by name and records every call.
type fakeSQSAdmin struct {
	mu     sync.Mutex
	calls  []string
	queues map[string]map[string]string // name → attributes
	tags   map[string]map[string]string
	// asSQS: CreateQueue of an existing queue fails only when a given
	// attribute differs, and otherwise returns the queue's URL, as SQS
	// does; without it every existing name fails.
	asSQS bool
}

func newFakeSQSAdmin() *fakeSQSAdmin {
	return &fakeSQSAdmin{queues: map[string]map[string]string{}, tags: map[string]map[string]string{}}
}

func (f *fakeSQSAdmin) record(op, name string) {
	f.calls = append(f.calls, op+" "+name)
}

func nameOf(url *string) string { return strings.TrimPrefix(aws.ToString(url), queueBase) }

func (f *fakeSQSAdmin) CreateQueue(_ context.Context, in *sqs.CreateQueueInput, _ ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := aws.ToString(in.QueueName)
	f.record("CreateQueue", name)
	if have, ok := f.queues[name]; ok {
		for k, v := range in.Attributes {
			if !f.asSQS || have[k] != v {
				return nil, &types.QueueNameExists{Message: aws.String("exists with other attributes")}
			}
		}
		return &sqs.CreateQueueOutput{QueueUrl: aws.String(queueBase + name)}, nil
	}
	f.queues[name], f.tags[name] = in.Attributes, in.Tags
	return &sqs.CreateQueueOutput{QueueUrl: aws.String(queueBase + name)}, nil
}

func (f *fakeSQSAdmin) GetQueueUrl(_ context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) { //nolint:revive // the SDK's name
	f.mu.Lock()
	defer f.mu.Unlock()
	name := aws.ToString(in.QueueName)
	f.record("GetQueueUrl", name)
	if _, ok := f.queues[name]; !ok {
		return nil, &types.QueueDoesNotExist{}
	}
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String(queueBase + name)}, nil
}

func (f *fakeSQSAdmin) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("GetQueueAttributes", nameOf(in.QueueUrl))
	return &sqs.GetQueueAttributesOutput{Attributes: map[string]string{"QueueArn": "arn:aws:sqs:eu-west-1:111122223333:" + nameOf(in.QueueUrl)}}, nil
}

func (f *fakeSQSAdmin) SetQueueAttributes(_ context.Context, in *sqs.SetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.SetQueueAttributesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := nameOf(in.QueueUrl)
	f.record("SetQueueAttributes", name)
	for k, v := range in.Attributes {
		f.queues[name][k] = v
	}
	return &sqs.SetQueueAttributesOutput{}, nil
}

func (f *fakeSQSAdmin) ListQueueTags(_ context.Context, in *sqs.ListQueueTagsInput, _ ...func(*sqs.Options)) (*sqs.ListQueueTagsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ListQueueTags", nameOf(in.QueueUrl))
	return &sqs.ListQueueTagsOutput{Tags: f.tags[nameOf(in.QueueUrl)]}, nil
}

func (f *fakeSQSAdmin) DeleteQueue(_ context.Context, in *sqs.DeleteQueueInput, _ ...func(*sqs.Options)) (*sqs.DeleteQueueOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := nameOf(in.QueueUrl)
	f.record("DeleteQueue", name)
	delete(f.queues, name)
	return &sqs.DeleteQueueOutput{}, nil
}

func (f *fakeSQSAdmin) taken() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.calls
	f.calls = nil
	return out
}

func TestEnsureMakesTheSitesQueuesAsTheStackWould(t *testing.T) {
	f := newFakeSQSAdmin()
	q := &sqsrelay.Queues{API: f, NamePrefix: sqsrelay.NamePrefixOf(queueBase + "maasflow-prod-connector-")}
	require.NoError(t, q.Ensure(context.Background(), "site-a"))
	assert.Equal(t, []string{
		"GetQueueUrl maasflow-prod-connector-site-a-dlq", // whether the stack made it
		"CreateQueue maasflow-prod-connector-site-a-dlq", "GetQueueAttributes maasflow-prod-connector-site-a-dlq",
		"SetQueueAttributes maasflow-prod-connector-site-a-dlq", "CreateQueue maasflow-prod-connector-site-a",
	}, f.taken())

	req := f.queues["maasflow-prod-connector-site-a"]
	assert.Equal(t, "900", req["MessageRetentionPeriod"])
	assert.Equal(t, "120", req["VisibilityTimeout"])
	assert.Equal(t, "20", req["ReceiveMessageWaitTimeSeconds"])
	assert.Equal(t, "true", req["SqsManagedSseEnabled"])
	var redrive map[string]any
	require.NoError(t, json.Unmarshal([]byte(req["RedrivePolicy"]), &redrive))
	assert.Equal(t, map[string]any{"deadLetterTargetArn": "arn:aws:sqs:eu-west-1:111122223333:maasflow-prod-connector-site-a-dlq", "maxReceiveCount": float64(5)}, redrive)
	assert.Contains(t, req["Policy"], `"aws:SecureTransport":"false"`)
	assert.Contains(t, req["Policy"], `"Resource":"arn:aws:sqs:eu-west-1:111122223333:maasflow-prod-connector-site-a"`)
	assert.Contains(t, f.queues["maasflow-prod-connector-site-a-dlq"]["Policy"], `"aws:SecureTransport":"false"`)
	assert.Equal(t, map[string]string{sqsrelay.TagSite: "site-a", sqsrelay.TagCreatedBy: sqsrelay.CreatedByAPI}, f.tags["maasflow-prod-connector-site-a"])

	// Again: the queues exist, their attributes are set again.
	require.NoError(t, q.Ensure(context.Background(), "site-a"))
	assert.Contains(t, f.taken(), "SetQueueAttributes maasflow-prod-connector-site-a")
	assert.Len(t, f.queues, 2)
}

func TestRemoveDeletesOnlyTheQueuesTheAPIMade(t *testing.T) {
	f := newFakeSQSAdmin()
	q := &sqsrelay.Queues{API: f, NamePrefix: "maasflow-prod-connector-"}
	require.NoError(t, q.Ensure(context.Background(), "site-a"))
	// A listed site's queue, made by the stack: no created-by tag.
	f.queues["maasflow-prod-connector-site-b"] = map[string]string{}
	f.tags["maasflow-prod-connector-site-b"] = map[string]string{"aws:cloudformation:stack-name": "maasflow-prod"}
	f.taken()

	require.NoError(t, q.Remove(context.Background(), "site-a"))
	assert.Empty(t, f.queues["maasflow-prod-connector-site-a"])
	assert.Equal(t, []string{
		"GetQueueUrl maasflow-prod-connector-site-a", "ListQueueTags maasflow-prod-connector-site-a", "DeleteQueue maasflow-prod-connector-site-a",
		"GetQueueUrl maasflow-prod-connector-site-a-dlq", "ListQueueTags maasflow-prod-connector-site-a-dlq", "DeleteQueue maasflow-prod-connector-site-a-dlq",
	}, f.taken())

	require.NoError(t, q.Remove(context.Background(), "site-b"))
	assert.Contains(t, f.queues, "maasflow-prod-connector-site-b", "the stack's queue is CloudFormation's to delete")
	assert.NotContains(t, f.taken(), "DeleteQueue maasflow-prod-connector-site-b")

	require.NoError(t, q.Remove(context.Background(), "site-a"), "removing twice is no error")
}
