package e2e

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/localstack"
	"github.com/maasflow/maasflow/shared/connector"
	"github.com/maasflow/maasflow/shared/connector/sqsrelay"
)

// envLocalStack points the connector e2e test at LocalStack's SQS and
// DynamoDB (docs/deploy.md, "LocalStack"). Unset, the test uses the
// local transport; CI has no Docker and leaves it unset.
const envLocalStack = "MAASFLOW_LOCALSTACK_URL"

// awsTransport is the connector's AWS transport on LocalStack.
type awsTransport struct {
	endpoint string
	sqs      *sqs.Client
	table    string
	prefix   string
	relay    *sqsrelay.Relay
}

// localStackTransport creates a reply table and learns the queue URL
// form on LocalStack, or returns nil when $MAASFLOW_LOCALSTACK_URL is unset.
func localStackTransport(t *testing.T) *awsTransport {
	t.Helper()
	endpoint := os.Getenv(envLocalStack)
	if endpoint == "" {
		return nil
	}
	ctx := context.Background()
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion("us-east-1"),
		awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		awsconfig.WithBaseEndpoint(endpoint))
	require.NoError(t, err)
	q, db := sqs.NewFromConfig(cfg), dynamodb.NewFromConfig(cfg)
	suffix := time.Now().Format("150405.000")
	suffix = strings.ReplaceAll(suffix, ".", "")
	a := &awsTransport{endpoint: endpoint, sqs: q, table: "maasflow-e2e-connector-" + suffix}
	_, err = db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(a.table),
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
	require.NoError(t, err, "create the reply table on LocalStack at %s", endpoint)
	// Learn the queue URL form from a queue named like a site's.
	probe := "e2e" + suffix + "-probe"
	out, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(probe)})
	require.NoError(t, err)
	a.prefix = strings.TrimSuffix(aws.ToString(out.QueueUrl), probe) + "e2e" + suffix + "-"
	a.relay = sqsrelay.New(q, db, a.prefix, a.table)
	return a
}

// queueFor creates the site's request queue and returns its URL.
func (a *awsTransport) queueFor(t *testing.T, site string) string {
	t.Helper()
	name := a.prefix[strings.LastIndex(a.prefix, "/")+1:] + site
	out, err := a.sqs.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	require.NoError(t, err)
	require.Equal(t, a.prefix+site, aws.ToString(out.QueueUrl))
	return aws.ToString(out.QueueUrl)
}

// environ is what the connector process needs to reach LocalStack.
func (a *awsTransport) environ() []string {
	return []string{"AWS_ENDPOINT_URL=" + a.endpoint, "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test"}
}

// startStackConfigured starts a stack with extra configuration.
func startStackConfigured(t *testing.T, cfg localstack.Config) *env {
	t.Helper()
	logs := &syncBuffer{}
	dir := t.TempDir()
	cfg.Listen, cfg.SimListen, cfg.TimeScale, cfg.DataDir = "127.0.0.1:0", "127.0.0.1:0", timeScale, dir
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := localstack.Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return newEnv(t, s, dir, logs)
}
