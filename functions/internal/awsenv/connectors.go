package awsenv

import (
	"context"
	"fmt"

	"github.com/maasflow/maasflow/shared/api"
	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/shared/connector/sqsrelay"
	"github.com/maasflow/maasflow/shared/nodeid"
)

// connectorDeps are the api function's connector ports when the stack
// configured the connector CA (infra/connector_access.go): the connector
// CA over its KMS key, the sites' queues (with their DLQs' alarms when the
// stack names its alarm topic), and the Roles Anywhere names; the zero
// value otherwise.
func connectorDeps(ctx context.Context, lookup func(string) (string, bool), kms func() nodeid.KMSAPI,
	queues func() sqsrelay.QueueAdminAPI, alarms func() sqsrelay.AlarmAPI,
) (api.ConnectorDeps, error) {
	get := func(k string) string { v, _ := lookup(k); return v }
	keyID := get(config.EnvConnectorCAKeyID)
	if keyID == "" {
		return api.ConnectorDeps{}, nil
	}
	signer, err := nodeid.NewKMSSigner(ctx, kms(), keyID)
	if err != nil {
		return api.ConnectorDeps{}, fmt.Errorf("%s: %w", config.EnvConnectorCAKeyID, err)
	}
	ca, err := nodeid.NewCA(get(config.EnvConnectorCACert), signer)
	if err != nil {
		return api.ConnectorDeps{}, fmt.Errorf("%s: %w", config.EnvConnectorCACert, err)
	}
	d := api.ConnectorDeps{
		Issuer:         ca.WithTTL(nodeid.ConnectorCertTTL),
		TrustAnchorARN: get(config.EnvConnectorTrustAnchor),
		ProfileARN:     get(config.EnvConnectorProfile),
		RoleARN:        get(config.EnvConnectorRole),
		QueueURLPrefix: get(config.EnvConnectorQueuePrefix),
		Table:          get(config.EnvConnectorTable),
	}
	if d.QueueURLPrefix != "" {
		q := &sqsrelay.Queues{API: queues(), NamePrefix: sqsrelay.NamePrefixOf(d.QueueURLPrefix)}
		if topic := get(config.EnvAlarmTopicARN); topic != "" {
			q.Alarms = &sqsrelay.DLQAlarms{API: alarms(), TopicARN: topic}
		}
		d.Queues = q
	}
	return d, nil
}
