package config

// Connector sites on AWS (docs/deploy.md "Sites behind a site connector"):
// what the api function needs to make a site's queues and issue its
// connector's certificate, and what a connector needs for its Roles
// Anywhere session.
const (
	// EnvConnectorCAKeyID names the KMS asymmetric key (ECC_NIST_P256,
	// SIGN_VERIFY) that signs connector certificates; unset, the API
	// issues none.
	EnvConnectorCAKeyID = "MAASFLOW_CONNECTOR_CA_KEY_ID"
	// EnvConnectorCACert is the connector CA certificate (PEM) that key
	// self-signed: the source of the Roles Anywhere trust anchor.
	EnvConnectorCACert = "MAASFLOW_CONNECTOR_CA_CERT"
	// EnvConnectorTrustAnchor, EnvConnectorProfile and EnvConnectorRole
	// are the Roles Anywhere ARNs handed to a connector with its
	// certificate.
	EnvConnectorTrustAnchor = "MAASFLOW_CONNECTOR_TRUST_ANCHOR_ARN"
	EnvConnectorProfile     = "MAASFLOW_CONNECTOR_PROFILE_ARN"
	EnvConnectorRole        = "MAASFLOW_CONNECTOR_ROLE_ARN"
	// EnvAlarmTopicARN is the stack's alarm topic: the DLQ alarm the api
	// function makes with a connector site's queues notifies it; unset,
	// those DLQs get no alarm.
	EnvAlarmTopicARN = "MAASFLOW_ALARM_TOPIC_ARN"
)
