package awsenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/shared/connector/sqsrelay"
	"github.com/maasflow/maasflow/shared/nodeid"
)

func TestConnectorDepsFromTheEnvironment(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	fake := func() nodeid.KMSAPI { return memKMS{key: key} }
	noQueues := func() sqsrelay.QueueAdminAPI { return nil }
	noAlarms := func() sqsrelay.AlarmAPI { return nil }
	env := func(vars map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	}

	d, err := connectorDeps(context.Background(), env(nil), fake, noQueues, noAlarms)
	require.NoError(t, err)
	assert.Nil(t, d.Issuer, "no connector CA named: no certificates")
	assert.Nil(t, d.Queues)

	caPEM, err := nodeid.SelfSign(key, "maasflow connector CA", time.Now())
	require.NoError(t, err)
	d, err = connectorDeps(context.Background(), env(map[string]string{
		config.EnvConnectorCAKeyID: "alias/connector-ca", config.EnvConnectorCACert: caPEM,
		config.EnvConnectorTrustAnchor: "ta", config.EnvConnectorProfile: "pr", config.EnvConnectorRole: "ro",
		config.EnvConnectorQueuePrefix: "https://sqs.eu-west-1.amazonaws.com/1/maasflow-prod-connector-",
		config.EnvConnectorTable:       "maasflow-prod-connector",
	}), fake, noQueues, noAlarms)
	require.NoError(t, err)
	require.NotNil(t, d.Issuer)
	assert.Equal(t, caPEM, d.Issuer.CertPEM())
	assert.Equal(t, []string{"ta", "pr", "ro", "maasflow-prod-connector"}, []string{d.TrustAnchorARN, d.ProfileARN, d.RoleARN, d.Table})
	q, ok := d.Queues.(*sqsrelay.Queues)
	require.True(t, ok)
	assert.Equal(t, "maasflow-prod-connector-", q.NamePrefix)
	assert.Nil(t, q.Alarms, "no alarm topic named: the DLQs get no alarm")

	d, err = connectorDeps(context.Background(), env(map[string]string{
		config.EnvConnectorCAKeyID: "alias/connector-ca", config.EnvConnectorCACert: caPEM,
		config.EnvConnectorQueuePrefix: "https://sqs.eu-west-1.amazonaws.com/1/maasflow-prod-connector-",
		config.EnvAlarmTopicARN:        "arn:aws:sns:eu-west-1:1:maasflow-prod-alarms",
	}), fake, noQueues, noAlarms)
	require.NoError(t, err)
	q, ok = d.Queues.(*sqsrelay.Queues)
	require.True(t, ok)
	require.NotNil(t, q.Alarms, "the DLQs the API makes get their alarm")
	assert.Equal(t, "arn:aws:sns:eu-west-1:1:maasflow-prod-alarms", q.Alarms.TopicARN)

	_, err = connectorDeps(context.Background(), env(map[string]string{config.EnvConnectorCAKeyID: "k", config.EnvConnectorCACert: "junk"}), fake, noQueues, noAlarms)
	require.Error(t, err)
	assert.Contains(t, err.Error(), config.EnvConnectorCACert)
}
