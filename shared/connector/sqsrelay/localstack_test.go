//go:build localstack

package sqsrelay_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/connector"
	"github.com/maasflow/maasflow/shared/connector/sqsrelay"
)

// TestRelayOnLocalStack runs the connector's AWS transport against real
// SQS and DynamoDB APIs (LocalStack at $MAASFLOW_LOCALSTACK_URL; make
// localstack-up, then make localstack-test). It is built only with the
// localstack tag: CI has no Docker.
func TestRelayOnLocalStack(t *testing.T) {
	endpoint := os.Getenv("MAASFLOW_LOCALSTACK_URL")
	require.NotEmpty(t, endpoint, "set MAASFLOW_LOCALSTACK_URL (make localstack-test does)")
	ctx := context.Background()
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion("us-east-1"),
		awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		awsconfig.WithBaseEndpoint(endpoint))
	require.NoError(t, err)
	q, db := sqs.NewFromConfig(cfg), dynamodb.NewFromConfig(cfg)
	suffix := time.Now().Format("150405")
	site, table := "ls-"+suffix, "maasflow-ls-connector-"+suffix

	_, err = db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{
			{AttributeName: aws.String(connector.AttrSite), AttributeType: ddbtypes.ScalarAttributeTypeS},
			{AttributeName: aws.String(connector.AttrKey), AttributeType: ddbtypes.ScalarAttributeTypeS},
		},
		KeySchema: []ddbtypes.KeySchemaElement{
			{AttributeName: aws.String(connector.AttrSite), KeyType: ddbtypes.KeyTypeHash},
			{AttributeName: aws.String(connector.AttrKey), KeyType: ddbtypes.KeyTypeRange},
		},
	})
	require.NoError(t, err)
	created, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("maasflow-ls-connector-" + site)})
	require.NoError(t, err)
	queueURL := aws.ToString(created.QueueUrl)
	prefix := queueURL[:len(queueURL)-len(site)]

	maas := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"version":"3.5.4"}`)
	}))
	defer maas.Close()
	j, err := connector.OpenJournal(t.TempDir(), nil)
	require.NoError(t, err)
	runner := &connector.Runner{Link: sqsrelay.NewLink(q, db, queueURL, table, site), Site: site,
		MAASURL: maas.URL + "/MAAS", Journal: j, Version: "ls"}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = runner.Run(rctx); close(done) }()
	defer func() { cancel(); <-done }()

	relay := sqsrelay.New(q, db, prefix, table)
	callCtx, callCancel := context.WithTimeout(ctx, 30*time.Second)
	defer callCancel()
	resp, err := relay.Do(callCtx, connector.Request{ID: "ls-1", Site: site, Kind: connector.KindMAAS, Method: "GET",
		URL: "version/", Deadline: time.Now().Add(30 * time.Second)})
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.Status)
	assert.JSONEq(t, `{"version":"3.5.4"}`, string(resp.Body))
	hb, ok, err := relay.LastHeartbeat(callCtx, site)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "ls", hb.Version)
}
