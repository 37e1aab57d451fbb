package stack

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// oidcIssuer is an OpenID provider for operators' tokens: its discovery
// document and JWKS, served under url, and the key that signs its ID
// tokens. The stack's JwtIssuer parameter names it; the HTTP API's JWT
// authorizer (on a deployed stack) and the stream function (everywhere)
// verify its tokens as they verify Cognito's.
type oidcIssuer struct {
	url string
	key *rsa.PrivateKey
	kid string
}

func newOIDCIssuer(url string) (*oidcIssuer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	return &oidcIssuer{url: strings.TrimSuffix(url, "/"), key: key, kid: "lane-key-1"}, nil
}

// handler serves the discovery document and the JWKS, at the issuer's path
// under whatever prefix strips to it.
func (is *oidcIssuer) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": is.url, "jwks_uri": is.url + "/.well-known/jwks.json",
			"authorization_endpoint": is.url + "/authorize", "token_endpoint": is.url + "/token",
			"response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("GET /.well-known/jwks.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
			{Key: &is.key.PublicKey, KeyID: is.kid, Algorithm: "RS256", Use: "sig"},
		}})
	})
	return mux
}

// token is an hour's ID token of an operator in group, for audience.
func (is *oidcIssuer) token(audience, groupsClaim, group string) (string, error) {
	now := time.Now()
	claims := map[string]any{
		"iss": is.url, "sub": "stack-lane-operator", "aud": audience, "token_use": "id",
		"iat": now.Add(-time.Minute).Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(time.Hour).Unix(),
		groupsClaim: []string{group},
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: is.key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", is.kid))
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	sig, err := signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("sign the operator's token: %w", err)
	}
	return sig.CompactSerialize()
}
