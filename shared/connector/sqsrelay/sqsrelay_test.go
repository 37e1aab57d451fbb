package sqsrelay_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/connector"
	"github.com/maasflow/maasflow/shared/connector/sqsrelay"
)

// fakeSQS keeps one queue per URL; a received message stays until deleted.
type fakeSQS struct {
	mu     sync.Mutex
	queues map[string][]sqstypes.Message
	seq    int
}

func (f *fakeSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	h := fmt.Sprint(f.seq)
	f.queues[aws.ToString(in.QueueUrl)] = append(f.queues[aws.ToString(in.QueueUrl)], sqstypes.Message{Body: in.MessageBody, ReceiptHandle: &h})
	return &sqs.SendMessageOutput{}, nil
}

func (f *fakeSQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	for range 100 {
		f.mu.Lock()
		q := f.queues[aws.ToString(in.QueueUrl)]
		if len(q) > 0 {
			n := min(len(q), int(in.MaxNumberOfMessages))
			out := append([]sqstypes.Message(nil), q[:n]...)
			f.queues[aws.ToString(in.QueueUrl)] = q[n:]
			f.mu.Unlock()
			return &sqs.ReceiveMessageOutput{Messages: out}, nil
		}
		f.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return &sqs.ReceiveMessageOutput{}, nil
}

func (f *fakeSQS) DeleteMessage(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	return &sqs.DeleteMessageOutput{}, nil
}

// fakeDynamo keeps items by site and key.
type fakeDynamo struct {
	mu    sync.Mutex
	items map[string]map[string]ddbtypes.AttributeValue
}

func key(item map[string]ddbtypes.AttributeValue) string {
	s := item[connector.AttrSite].(*ddbtypes.AttributeValueMemberS).Value
	k := item[connector.AttrKey].(*ddbtypes.AttributeValueMemberS).Value
	return s + "|" + k
}

func (f *fakeDynamo) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &dynamodb.GetItemOutput{Item: f.items[key(in.Key)]}, nil
}

func (f *fakeDynamo) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.items, key(in.Key))
	return &dynamodb.DeleteItemOutput{}, nil
}

func (f *fakeDynamo) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.items[key(in.Item)] = in.Item
	return &dynamodb.PutItemOutput{}, nil
}

const prefix = "https://sqs.eu-west-1.amazonaws.com/111122223333/maasflow-prod-connector-"

func TestRelayOverSQSAndDynamoDB(t *testing.T) {
	q := &fakeSQS{queues: map[string][]sqstypes.Message{}}
	db := &fakeDynamo{items: map[string]map[string]ddbtypes.AttributeValue{}}
	big := strings.Repeat("x", 2*connector.MaxReplyBody)
	maas := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("op") == "big" {
			_, _ = io.WriteString(w, big)
			return
		}
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(http.StatusConflict)
		_, _ = io.WriteString(w, "busy")
	}))
	defer maas.Close()

	j, err := connector.OpenJournal(t.TempDir(), nil)
	require.NoError(t, err)
	defer func() { _ = j.Close() }()
	runner := &connector.Runner{Link: sqsrelay.NewLink(q, db, prefix+"site-a", "tbl", "site-a"), Site: "site-a",
		MAASURL: maas.URL + "/MAAS", Journal: j, Version: "v2.0.0"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = runner.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	relay := sqsrelay.New(q, db, prefix, "tbl")
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer rcancel()
	resp, err := relay.Do(rctx, connector.Request{ID: "r1", Site: "site-a", Kind: connector.KindMAAS, Method: "POST",
		URL: "machines/m1/?op=deploy", Deadline: time.Now().Add(5 * time.Second)})
	require.NoError(t, err)
	assert.Equal(t, http.StatusConflict, resp.Status)
	assert.Equal(t, "5", resp.Header["Retry-After"])
	assert.Equal(t, "busy", string(resp.Body))

	resp, err = relay.Do(rctx, connector.Request{ID: "r2", Site: "site-a", Kind: connector.KindMAAS, Method: "GET",
		URL: "machines/?op=big", Deadline: time.Now().Add(5 * time.Second)})
	require.NoError(t, err)
	require.NotNil(t, resp.Error)
	assert.Equal(t, connector.FailTooLarge, resp.Error.Kind)

	db.mu.Lock()
	for k := range db.items {
		assert.NotContains(t, k, "reply#", "a reply is deleted once read")
	}
	db.mu.Unlock()

	hb, ok, err := relay.LastHeartbeat(rctx, "site-a")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "v2.0.0", hb.Version)
	_, ok, err = relay.LastHeartbeat(rctx, "site-b")
	require.NoError(t, err)
	assert.False(t, ok)

	// A site whose connector is down: the caller's deadline ends the wait.
	short, scancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer scancel()
	_, err = relay.Do(short, connector.Request{ID: "r3", Site: "site-b", Kind: connector.KindMAAS, Method: "GET",
		URL: "version/", Deadline: time.Now().Add(150 * time.Millisecond)})
	require.ErrorIs(t, err, connector.ErrNoReply)
	q.mu.Lock()
	assert.Len(t, q.queues[prefix+"site-b"], 1, "sent to site-b's own queue")
	q.mu.Unlock()
}
