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
// earlier by the API to these settings. It is idempotent.
func (q *Queues) Ensure(ctx context.Context, site string) error {
	name := q.NamePrefix + site
	tags := map[string]string{TagSite: site, TagCreatedBy: CreatedByAPI}
	dlqURL, made, err := q.create(ctx, name+"-dlq", tags, map[string]string{
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
	_, _, err = q.create(ctx, name, tags, map[string]string{
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
	if !made {
		if made, err = q.madeByAPI(ctx, dlqURL); err != nil {
			return fmt.Errorf("connector DLQ of site %s: %w", site, err)
		}
	}
	if !made {
		return nil // the stack's DLQ, with the stack's alarm
	}
	return q.Alarms.put(ctx, name+"-dlq", site)
}

// madeByAPI reports whether the queue at url carries the API's tag.
func (q *Queues) madeByAPI(ctx context.Context, url string) (bool, error) {
	tags, err := q.API.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: &url})
	if err != nil {
		return false, err
	}
	return tags.Tags[TagCreatedBy] == CreatedByAPI, nil
}

// create makes a queue (made is true), or updates the attributes of the
// one that exists under that name with others.
func (q *Queues) create(ctx context.Context, name string, tags, attrs map[string]string) (url string, made bool, err error) {
	out, err := q.API.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: &name, Attributes: attrs, Tags: tags})
	if err == nil {
		return aws.ToString(out.QueueUrl), true, nil
	}
	var exists *types.QueueNameExists
	if !errors.As(err, &exists) {
		return "", false, fmt.Errorf("create queue %s: %w", name, err)
	}
	got, err := q.API.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: &name})
	if err != nil {
		return "", false, fmt.Errorf("queue %s: %w", name, err)
	}
	if _, err := q.API.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: got.QueueUrl, Attributes: attrs}); err != nil {
		return "", false, fmt.Errorf("queue %s: %w", name, err)
	}
	return aws.ToString(got.QueueUrl), false, nil
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
