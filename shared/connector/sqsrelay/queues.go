package sqsrelay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// A connector site's queues, as the api function makes them at runtime:
// the same settings as the stack's for listed sites (infra/connector.go).
const (
	// RequestRetention is how long a request waits in its queue.
	RequestRetention = 15 * time.Minute
	// RequestVisibility is how long a received request stays hidden:
	// longer than any request's deadline (the functions time out at
	// 60 s), so a request comes back only when its connector died with it.
	RequestVisibility = 120 * time.Second
	// MaxReceives is how often a request is received before the DLQ.
	MaxReceives = 5
	// DLQRetention keeps failed requests for inspection.
	DLQRetention = 14 * 24 * time.Hour
	// longPoll is the queue's default receive wait.
	longPoll = 20 * time.Second
)

// Tags on the queues the API makes; Remove deletes only queues carrying
// TagCreatedBy = CreatedByAPI, never the stack's.
const (
	TagSite      = "maasflow-site"
	TagCreatedBy = "maasflow-created-by"
	CreatedByAPI = "api"
)

// QueueAdminAPI is the part of the SQS client that makes and deletes
// queues.
type QueueAdminAPI interface {
	CreateQueue(ctx context.Context, in *sqs.CreateQueueInput, opts ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, opts ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) //nolint:revive // the SDK's name
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	SetQueueAttributes(ctx context.Context, in *sqs.SetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.SetQueueAttributesOutput, error)
	ListQueueTags(ctx context.Context, in *sqs.ListQueueTagsInput, opts ...func(*sqs.Options)) (*sqs.ListQueueTagsOutput, error)
	DeleteQueue(ctx context.Context, in *sqs.DeleteQueueInput, opts ...func(*sqs.Options)) (*sqs.DeleteQueueOutput, error)
}

// Queues makes and removes connector sites' request queues and DLQs,
// named NamePrefix + site ID (maasflow-<stage>-connector-<site>), and,
// with Alarms, each DLQ's alarm.
type Queues struct {
	API        QueueAdminAPI
	NamePrefix string
	// Alarms, when set, gives every DLQ the API made its alarm, named as
	// the DLQ, and deletes it with the DLQ. A DLQ the stack made has the
	// stack's alarm and gets none.
	Alarms *DLQAlarms
}

// NamePrefixOf is the queue name prefix of a request queue URL prefix
// (config.EnvConnectorQueuePrefix).
func NamePrefixOf(urlPrefix string) string {
	return urlPrefix[strings.LastIndexByte(urlPrefix, '/')+1:]
}

// Ensure makes site's DLQ and request queue, or brings queues made
// earlier by the API to these settings. It is idempotent. A listed site's
// queues, which the stack made, are left as they are: their settings and
// the DLQ's alarm are CloudFormation's.
func (q *Queues) Ensure(ctx context.Context, site string) error {
	name := q.NamePrefix + site
	// Asked before CreateQueue, which cannot tell: it answers an existing
	// queue's URL when the attributes it is given match, as a listed site's
	// DLQ's do.
	if stack, err := q.stackMade(ctx, name+"-dlq"); err != nil || stack {
		return err
	}
	tags := map[string]string{TagSite: site, TagCreatedBy: CreatedByAPI}
	dlqURL, err := q.create(ctx, name+"-dlq", tags, map[string]string{
		string(types.QueueAttributeNameMessageRetentionPeriod): seconds(DLQRetention),
		string(types.QueueAttributeNameSqsManagedSseEnabled):   "true",
	})
	if err != nil {
		return err
	}
	attrs, err := q.API.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &dlqURL,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		return fmt.Errorf("connector DLQ of site %s: %w", site, err)
	}
	dlqARN := attrs.Attributes[string(types.QueueAttributeNameQueueArn)]
	if dlqARN == "" {
		return fmt.Errorf("connector DLQ of site %s: SQS named no ARN", site)
	}
	if _, err := q.API.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &dlqURL,
		Attributes: map[string]string{string(types.QueueAttributeNamePolicy): tlsOnly(dlqARN)}}); err != nil {
		return fmt.Errorf("connector DLQ of site %s: %w", site, err)
	}
	redrive, err := json.Marshal(map[string]any{"deadLetterTargetArn": dlqARN, "maxReceiveCount": MaxReceives})
	if err != nil {
		return err
	}
	queueARN := strings.TrimSuffix(dlqARN, "-dlq")
	_, err = q.create(ctx, name, tags, map[string]string{
		string(types.QueueAttributeNameMessageRetentionPeriod):        seconds(RequestRetention),
		string(types.QueueAttributeNameVisibilityTimeout):             seconds(RequestVisibility),
		string(types.QueueAttributeNameReceiveMessageWaitTimeSeconds): seconds(longPoll),
		string(types.QueueAttributeNameSqsManagedSseEnabled):          "true",
		string(types.QueueAttributeNameRedrivePolicy):                 string(redrive),
		string(types.QueueAttributeNamePolicy):                        tlsOnly(queueARN),
	})
	if err != nil || q.Alarms == nil {
		return err
	}
	return q.Alarms.put(ctx, name+"-dlq", site)
}

// stackMade reports whether the queue named name exists without the API's
// tag (the stack made it).
func (q *Queues) stackMade(ctx context.Context, name string) (bool, error) {
	got, err := q.API.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: &name})
	if errors.As(err, new(*types.QueueDoesNotExist)) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("queue %s: %w", name, err)
	}
	api, err := q.madeByAPI(ctx, aws.ToString(got.QueueUrl))
	if err != nil {
		return false, fmt.Errorf("queue %s: %w", name, err)
	}
	return !api, nil
}

// madeByAPI reports whether the queue at url carries the API's tag.
func (q *Queues) madeByAPI(ctx context.Context, url string) (bool, error) {
	tags, err := q.API.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: &url})
	if err != nil {
		return false, err
	}
	return tags.Tags[TagCreatedBy] == CreatedByAPI, nil
}

// create makes a queue, or updates the attributes of the one that exists
// under that name with others.
func (q *Queues) create(ctx context.Context, name string, tags, attrs map[string]string) (url string, err error) {
	out, err := q.API.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: &name, Attributes: attrs, Tags: tags})
	if err == nil {
		return aws.ToString(out.QueueUrl), nil
	}
	var exists *types.QueueNameExists
	if !errors.As(err, &exists) {
		return "", fmt.Errorf("create queue %s: %w", name, err)
	}
	got, err := q.API.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: &name})
	if err != nil {
		return "", fmt.Errorf("queue %s: %w", name, err)
	}
	if _, err := q.API.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: got.QueueUrl, Attributes: attrs}); err != nil {
		return "", fmt.Errorf("queue %s: %w", name, err)
	}
	return aws.ToString(got.QueueUrl), nil
}

// Remove deletes the site's request queue and DLQ if the API made them,
// and the DLQ's alarm before the DLQ (so that a failure leaves the DLQ,
// and repeating the request finds the alarm again); queues that do not
// exist, or that the stack made, are left alone.
func (q *Queues) Remove(ctx context.Context, site string) error {
	for _, name := range []string{q.NamePrefix + site, q.NamePrefix + site + "-dlq"} {
		got, err := q.API.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: &name})
		var missing *types.QueueDoesNotExist
		if errors.As(err, &missing) {
			continue
		}
		if err != nil {
			return fmt.Errorf("queue %s: %w", name, err)
		}
		tags, err := q.API.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: got.QueueUrl})
		if err != nil {
			return fmt.Errorf("queue %s: %w", name, err)
		}
		if tags.Tags[TagCreatedBy] != CreatedByAPI {
			continue // the stack's: CloudFormation owns it
		}
		if q.Alarms != nil && strings.HasSuffix(name, "-dlq") {
			if err := q.Alarms.remove(ctx, name); err != nil {
				return err
			}
		}
		if _, err := q.API.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: got.QueueUrl}); err != nil {
			return fmt.Errorf("delete queue %s: %w", name, err)
		}
	}
	return nil
}

func seconds(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }

// tlsOnly is the queue policy the stack's EnforceSSL makes: no request
// without TLS.
func tlsOnly(queueARN string) string {
	b, _ := json.Marshal(map[string]any{
		"Version": "2012-10-17",
		"Statement": []any{map[string]any{
			"Effect": "Deny", "Principal": map[string]any{"AWS": "*"}, "Action": "sqs:*", "Resource": queueARN,
			"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
		}},
	})
	return string(b)
}
