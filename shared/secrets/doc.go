// Package secrets is the secrets port: named byte values written and read
// whole. FileStore keeps them in one 0600 JSON file for local mode;
// SecretsManager keeps them in AWS Secrets Manager. PutSiteCredentials and
// GetSiteCredentials store a site's MAAS API key and BMC credentials under
// domain.SiteCredentialsSecretName.
//
// Values never appear in an error, a log line or a String method: errors name
// the secret, never its content.
//
// It imports domain only; it must not import activities, api or store.
package secrets
