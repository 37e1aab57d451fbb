package config

// Environment variables of the AWS deployment (infra sets them; the
// functions read them in functions/internal/awsenv). None holds a secret.
const (
	// EnvStage is the deployment's stage name (dev, prod, …).
	EnvStage = "MAASFLOW_STAGE"
	// EnvSecretPrefix is put before every secret name, so the stages of
	// one account keep separate secrets ("prod/").
	EnvSecretPrefix = "MAASFLOW_SECRET_PREFIX"
	// EnvSiteSecretsRole is the role a function assumes, tagged with one
	// site, to read that site's credentials and no other site's.
	EnvSiteSecretsRole = "MAASFLOW_SITE_SECRETS_ROLE_ARN"
	// EnvSecretsKMSKey is the customer-managed KMS key new secrets are
	// encrypted with; unset means the account's aws/secretsmanager key.
	EnvSecretsKMSKey = "MAASFLOW_SECRETS_KMS_KEY_ID"
	// EnvConnectorQueuePrefix is the URL of a site connector's request
	// queue without the site ID
	// (https://sqs.<region>.amazonaws.com/<account>/maasflow-<stage>-connector-).
	EnvConnectorQueuePrefix = "MAASFLOW_CONNECTOR_QUEUE_URL_PREFIX"
	// EnvConnectorTable is the table connectors write replies and
	// heartbeats to.
	EnvConnectorTable = "MAASFLOW_CONNECTOR_TABLE"
	// EnvRequireHTTPS refuses plain-http MAAS URLs on the VPC path unless
	// the site allows http on a private network ("true" on AWS).
	EnvRequireHTTPS = "MAASFLOW_REQUIRE_HTTPS"
	// EnvAdminGroupsClaim names the JWT claim that lists the caller's
	// groups (default cognito:groups; "groups" for most OIDC issuers).
	EnvAdminGroupsClaim = "MAASFLOW_ADMIN_GROUPS_CLAIM"
	// EnvCABundle is the PEM CA bundle the enrollment API's certificate
	// chains to.
	EnvCABundle = "MAASFLOW_ENROLLMENT_CA_BUNDLE"
)

// SiteTagKey is the session tag that binds a site-secrets session to one
// site; the role's policy allows only secrets named after that site.
const SiteTagKey = "maasflow-site"

// The node CA on AWS (docs/deploy.md "Node identity on AWS").
const (
	// EnvNodeCAKeyID names the KMS asymmetric key (ECC_NIST_P256,
	// SIGN_VERIFY) that signs node certificates; unset, the API issues none.
	EnvNodeCAKeyID = "MAASFLOW_NODE_CA_KEY_ID"
	// EnvNodeCACert is the node CA certificate (PEM) that key self-signed,
	// the one in the mutual TLS trust store; unset, the API self-signs one
	// at start.
	EnvNodeCACert = "MAASFLOW_NODE_CA_CERT"
	// EnvNodeMTLSURL is the mutual TLS custom domain of the node endpoints,
	// handed to nodes as node_api_url.
	EnvNodeMTLSURL = "MAASFLOW_NODE_MTLS_URL"
)
