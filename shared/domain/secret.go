package domain

import "log/slog"

// Secret is a string that never prints: String, GoString, LogValue and
// MarshalJSON all give "[redacted]", so a secret that reaches a log line, an
// error, a response or an event by mistake shows nothing. Reveal returns the
// value; call it only where the value is handed to its consumer.
type Secret string

const redacted = "[redacted]"

// Reveal returns the secret value.
func (s Secret) Reveal() string { return string(s) }

// String implements fmt.Stringer.
func (s Secret) String() string { return redacted }

// GoString implements fmt.GoStringer.
func (s Secret) GoString() string { return redacted }

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalJSON implements json.Marshaler.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// SiteCredentials are a site's MAAS API key and BMC credentials, written
// through the secrets port under SiteCredentialsSecretName and never
// returned by the API. They are stored as JSON with the json tags below; the
// store side uses Reveal to marshal them.
type SiteCredentials struct {
	MAASAPIKey  Secret `json:"maas_api_key"`
	BMCUsername string `json:"bmc_username"`
	BMCPassword Secret `json:"bmc_password"`
}

// SiteCredentialsSecretName is the secret name of a site's credentials.
func SiteCredentialsSecretName(siteID string) string {
	return "maasflow/sites/" + siteID + "/credentials"
}
