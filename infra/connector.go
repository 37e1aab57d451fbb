package main

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/maasflow/maasflow/shared/connector"
	"github.com/maasflow/maasflow/shared/connector/sqsrelay"
)

// Site connector transport (docs/decisions.md, "Site connector"): one SQS
// request queue per connector site, which only that site's connector may
// receive from, and one reply table where a connector may write only items
// under its own site's partition key. Requests are short-lived, so the
// queue keeps them 15 minutes and the table expires replies by TTL.
// The settings are sqsrelay's, which makes the queues of sites added
// through the API.
const (
	connectorRetention  = int(sqsrelay.RequestRetention / time.Minute)
	connectorVisibility = int(sqsrelay.RequestVisibility / time.Second)
	connectorMaxReceive = sqsrelay.MaxReceives
	connectorDLQDays    = int(sqsrelay.DLQRetention / (24 * time.Hour))
)

type connectorResources struct {
	table  awsdynamodb.Table
	queues map[string]awssqs.Queue
	dlqs   map[string]awssqs.Queue
}

// connectorQueueName is the request queue of one connector site.
func (b *builder) connectorQueueName(site string) string { return b.name("connector-" + site) }

// connectorQueueURLPrefix is a request queue's URL without the site ID.
func (b *builder) connectorQueueURLPrefix() *string {
	return awscdk.Fn_Join(jsii.String(""), &[]*string{
		jsii.String("https://sqs."), b.stack.Region(), jsii.String("."), b.stack.UrlSuffix(), jsii.String("/"),
		b.stack.Account(), jsii.String("/" + b.connectorQueueName("")),
	})
}

// connectorResources creates the reply table when connectors are
// configured (the connector CA), and the queues of the sites listed in
// maasflow:connectorSites; the queues of sites added through the API are
// made by the api function (docs/decisions.md, "Connector sites through the
// API, on Roles Anywhere sessions").
func (b *builder) connectorResources() {
	if b.props.ConnectorCA == nil && len(b.props.ConnectorSites) == 0 {
		return
	}
	c := connectorResources{queues: map[string]awssqs.Queue{}, dlqs: map[string]awssqs.Queue{}}
	str := awsdynamodb.AttributeType_STRING
	c.table = awsdynamodb.NewTable(b.stack, jsii.String("ConnectorTable"), &awsdynamodb.TableProps{
		TableName:           jsii.String(b.name("connector")),
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String(connector.AttrSite), Type: str},
		SortKey:             &awsdynamodb.Attribute{Name: jsii.String(connector.AttrKey), Type: str},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String(connector.AttrTTL),
		// Replies and heartbeats only: nothing to keep after a destroy.
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	nagSuppress(c.table, "AwsSolutions-DDB3", "replies and heartbeats, deleted once read or expired by TTL: nothing to restore")
	for _, site := range b.props.ConnectorSites {
		id := "Connector" + CamelCase(site)
		dlq := awssqs.NewQueue(b.stack, jsii.String(id+"DLQ"), &awssqs.QueueProps{
			QueueName:       jsii.String(b.connectorQueueName(site) + "-dlq"),
			Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
			EnforceSSL:      jsii.Bool(true),
			RetentionPeriod: awscdk.Duration_Days(jsii.Number(connectorDLQDays)),
		})
		c.dlqs[site] = dlq
		c.queues[site] = awssqs.NewQueue(b.stack, jsii.String(id+"Requests"), &awssqs.QueueProps{
			QueueName:              jsii.String(b.connectorQueueName(site)),
			Encryption:             awssqs.QueueEncryption_SQS_MANAGED,
			EnforceSSL:             jsii.Bool(true),
			RetentionPeriod:        awscdk.Duration_Minutes(jsii.Number(connectorRetention)),
			VisibilityTimeout:      awscdk.Duration_Seconds(jsii.Number(connectorVisibility)),
			ReceiveMessageWaitTime: awscdk.Duration_Seconds(jsii.Number(20)),
			DeadLetterQueue:        &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(connectorMaxReceive)},
		})
	}
	b.connector = c
}

// connectorQueuesARN is every connector request queue (and DLQ) of the
// stage: the stage's prefix, the site ID left open, since sites come and go
// through the API.
func (b *builder) connectorQueuesARN() *string {
	return b.stack.FormatArn(&awscdk.ArnComponents{
		Service: jsii.String("sqs"), Resource: jsii.String(b.connectorQueueName("") + "*"),
		ArnFormat: awscdk.ArnFormat_NO_RESOURCE_NAME,
	})
}

// nagConnectorQueues matches connectorQueuesARN as cdk-nag renders it.
const nagConnectorQueues = `/^Resource::arn:<AWS::Partition>:sqs:<AWS::Region>:<AWS::AccountId>:maasflow-[a-z0-9]+-connector-\*$/g`

// grantConnectorRelay lets a site-facing function send requests to every
// connector site's queue and read the replies.
func (b *builder) grantConnectorRelay(role awsiam.Role) {
	c := b.connector
	if c.table == nil {
		return
	}
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("sqs:SendMessage"),
		Resources: jsii.Strings(*b.connectorQueuesARN()),
	}))
	nagSuppress(role, "AwsSolutions-IAM5", "connector sites are added through the API without a redeploy: "+
		"the request queues are the stage's connector-<site> queues, one name prefix", nagConnectorQueues)
	// Read the reply, then delete it: replies may hold BMC parameters.
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("dynamodb:GetItem", "dynamodb:DeleteItem"),
		Resources: jsii.Strings(*c.table.TableArn()),
	}))
}
