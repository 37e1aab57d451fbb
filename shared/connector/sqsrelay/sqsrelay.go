// Package sqsrelay is the AWS transport of the site connector: each
// connector site has an SQS request queue that only its connector may
// receive from, and connectors write replies and heartbeats to a DynamoDB
// table under their site's partition key, which is all their Roles
// Anywhere session may write (infra/connector_access.go).
//
// The control plane sends a request with SendMessage and polls the reply
// item with consistent reads until the request's context ends. The
// connector long-polls its queue (20 s), so an idle connector makes three
// receive calls a minute and a request reaches it within tens of
// milliseconds.
package sqsrelay

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/maasflow/maasflow/shared/connector"
)

// Item attributes besides the keys (connector.AttrSite, AttrKey, AttrTTL).
const (
	attrBody = "body" // gzip-compressed JSON of the reply or heartbeat
	// replyTTL expires a reply nobody read (its caller gave up): replies
	// can hold what MAAS answered, BMC parameters included, so they do not
	// linger. A read reply is deleted at once.
	replyTTL = time.Hour
	// heartbeatTTL expires the heartbeat of a connector gone for a week.
	heartbeatTTL = 7 * 24 * time.Hour
	// maxItemBody stays under DynamoDB's 400 KB item limit.
	maxItemBody = 380 << 10
)

// Poll intervals for the reply: short first, since most MAAS answers
// take tens of milliseconds, then capped so a slow call costs at most
// ten reads a second.
const (
	firstPoll = 20 * time.Millisecond
	maxPoll   = 100 * time.Millisecond
)

// SQSAPI is the part of the SQS client the relay and the link call.
type SQSAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

// DynamoAPI is the part of the DynamoDB client they call.
type DynamoAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// Relay is the control plane's side.
type Relay struct {
	sqs         SQSAPI
	db          DynamoAPI
	queuePrefix string
	table       string
}

var (
	_ connector.Relay        = (*Relay)(nil)
	_ connector.StatusReader = (*Relay)(nil)
)

// New returns the relay: queuePrefix + site ID is a site's request queue
// URL, table the reply table.
func New(q SQSAPI, db DynamoAPI, queuePrefix, table string) *Relay {
	return &Relay{sqs: q, db: db, queuePrefix: queuePrefix, table: table}
}

// Do sends req to its site's queue and waits for the reply item.
func (r *Relay) Do(ctx context.Context, req connector.Request) (connector.Response, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return connector.Response{}, &connector.RelayError{Site: req.Site, Message: "encode the request"}
	}
	_, err = r.sqs.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:    aws.String(r.queuePrefix + req.Site),
		MessageBody: aws.String(string(body)),
	})
	if err != nil {
		if ctx.Err() != nil {
			return connector.Response{}, fmt.Errorf("%w: %w", connector.ErrNoReply, ctx.Err())
		}
		return connector.Response{}, &connector.RelayError{Site: req.Site, Message: "send to the request queue: " + err.Error()}
	}
	wait := firstPoll
	for {
		var resp connector.Response
		found, err := getItem(ctx, r.db, r.table, req.Site, replyKey(req.ID), &resp)
		switch {
		case ctx.Err() != nil:
			return connector.Response{}, fmt.Errorf("%w: %w", connector.ErrNoReply, ctx.Err())
		case err != nil:
			return connector.Response{}, &connector.RelayError{Site: req.Site, Message: "read the reply: " + err.Error()}
		case found:
			// Read once: the item goes now, not at its TTL. A failed
			// delete leaves it to the TTL.
			_, _ = r.db.DeleteItem(context.WithoutCancel(ctx), &dynamodb.DeleteItemInput{
				TableName: aws.String(r.table),
				Key:       itemKey(req.Site, replyKey(req.ID)),
			})
			return resp, nil
		}
		select {
		case <-ctx.Done():
			return connector.Response{}, fmt.Errorf("%w: %w", connector.ErrNoReply, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(wait*2, maxPoll)
	}
}

// LastHeartbeat reads the site's heartbeat item.
func (r *Relay) LastHeartbeat(ctx context.Context, site string) (connector.Heartbeat, bool, error) {
	var hb connector.Heartbeat
	found, err := getItem(ctx, r.db, r.table, site, heartbeatKey, &hb)
	return hb, found, err
}

// Link is the connector's side: its site's queue and the reply table.
type Link struct {
	sqs      SQSAPI
	db       DynamoAPI
	queueURL string
	table    string
	site     string
	now      func() time.Time
}

var _ connector.Link = (*Link)(nil)

// NewLink returns the link of site's connector.
func NewLink(q SQSAPI, db DynamoAPI, queueURL, table, site string) *Link {
	return &Link{sqs: q, db: db, queueURL: queueURL, table: table, site: site, now: time.Now}
}

// Receive long-polls the queue for up to ten requests.
func (l *Link) Receive(ctx context.Context) ([]connector.Delivery, error) {
	out, err := l.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(l.queueURL),
		MaxNumberOfMessages: 10,
		WaitTimeSeconds:     20,
	})
	if err != nil {
		return nil, err
	}
	var ds []connector.Delivery
	for _, m := range out.Messages {
		handle := aws.ToString(m.ReceiptHandle)
		ack := func(ctx context.Context) error {
			_, err := l.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(l.queueURL), ReceiptHandle: aws.String(handle)})
			return err
		}
		var req connector.Request
		if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &req); err != nil || req.ID == "" {
			// Not a request: drop it rather than receive it for ever.
			_ = ack(ctx)
			continue
		}
		ds = append(ds, connector.Delivery{Request: req, Ack: ack})
	}
	return ds, nil
}

// Reply writes the reply item.
func (l *Link) Reply(ctx context.Context, resp connector.Response) error {
	err := putItem(ctx, l.db, l.table, l.site, replyKey(resp.ID), resp, l.now().Add(replyTTL))
	var tooLarge *tooLargeError
	if errors.As(err, &tooLarge) {
		resp = connector.Response{ID: resp.ID, Error: &connector.Failure{Kind: connector.FailTooLarge,
			Message: fmt.Sprintf("the answer is %d bytes compressed; the transport carries %d", tooLarge.size, maxItemBody)}}
		return putItem(ctx, l.db, l.table, l.site, replyKey(resp.ID), resp, l.now().Add(replyTTL))
	}
	return err
}

// Heartbeat writes the heartbeat item.
func (l *Link) Heartbeat(ctx context.Context, hb connector.Heartbeat) error {
	return putItem(ctx, l.db, l.table, l.site, heartbeatKey, hb, l.now().Add(heartbeatTTL))
}

const heartbeatKey = "heartbeat"

func replyKey(id string) string { return "reply#" + id }

type tooLargeError struct{ size int }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("item body of %d bytes is too large", e.size)
}

func putItem(ctx context.Context, db DynamoAPI, table, site, key string, v any, expires time.Time) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(raw)
	if err := zw.Close(); err != nil {
		return err
	}
	if buf.Len() > maxItemBody {
		return &tooLargeError{size: buf.Len()}
	}
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item: map[string]ddbtypes.AttributeValue{
			connector.AttrSite: &ddbtypes.AttributeValueMemberS{Value: site},
			connector.AttrKey:  &ddbtypes.AttributeValueMemberS{Value: key},
			connector.AttrTTL:  &ddbtypes.AttributeValueMemberN{Value: strconv.FormatInt(expires.Unix(), 10)},
			attrBody:           &ddbtypes.AttributeValueMemberB{Value: buf.Bytes()},
		},
	})
	return err
}

func itemKey(site, key string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{
		connector.AttrSite: &ddbtypes.AttributeValueMemberS{Value: site},
		connector.AttrKey:  &ddbtypes.AttributeValueMemberS{Value: key},
	}
}

func getItem(ctx context.Context, db DynamoAPI, table, site, key string, into any) (bool, error) {
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		ConsistentRead: aws.Bool(true),
		Key:            itemKey(site, key),
	})
	if err != nil {
		return false, err
	}
	if len(out.Item) == 0 {
		return false, nil
	}
	b, ok := out.Item[attrBody].(*ddbtypes.AttributeValueMemberB)
	if !ok {
		return false, errors.New("item has no body")
	}
	zr, err := gzip.NewReader(bytes.NewReader(b.Value))
	if err != nil {
		return false, errors.New("item body is not gzip")
	}
	raw, err := io.ReadAll(io.LimitReader(zr, 8<<20))
	if err != nil {
		return false, errors.New("item body does not decompress")
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return false, errors.New("item body is not the expected JSON")
	}
	return true, nil
}
