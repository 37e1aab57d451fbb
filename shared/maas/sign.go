package maas

import (
	"net/http"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
)

// Signer returns a function that signs a MAAS API request with apiKey the
// way Client does (OAuth 1.0 PLAINTEXT, maas-behaviour §1). A site
// connector that keeps the key at the site signs the requests it relays
// with it. Errors never repeat the key.
func Signer(apiKey domain.Secret) (func(*http.Request), error) {
	creds, err := parseAPIKey(apiKey.Reveal())
	if err != nil {
		return nil, err
	}
	return func(r *http.Request) {
		r.Header.Set("Authorization", creds.authorization(randomNonce(), time.Now()))
	}, nil
}
