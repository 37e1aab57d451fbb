package localstack

import "github.com/maasflow/maasflow/shared/api"

// adminPrincipals maps the stack's admin token to local-admin and each
// further admin token to its subject.
func adminPrincipals(token string, more map[string]string) map[string]api.Principal {
	out := map[string]api.Principal{token: {Subject: "local-admin", Admin: true}}
	for tok, subject := range more {
		if tok != "" && tok != token {
			out[tok] = api.Principal{Subject: subject, Admin: true}
		}
	}
	return out
}
