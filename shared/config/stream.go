package config

// The stream function's settings on AWS (infra/streams.go sets them;
// functions/stream reads them). The function is public behind its URL, so
// it checks the operator's JWT itself, against the same issuer and
// audiences as the admin API's authorizer.
const (
	// EnvJWTIssuer is the issuer URL of the tokens the admin API accepts;
	// its OpenID discovery document names the signing keys.
	EnvJWTIssuer = "MAASFLOW_JWT_ISSUER"
	// EnvJWTAudiences lists the accepted audiences (app client IDs),
	// comma-separated.
	EnvJWTAudiences = "MAASFLOW_JWT_AUDIENCES"
)
