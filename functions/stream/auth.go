package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/maasflow/maasflow/shared/api"
	"github.com/maasflow/maasflow/shared/config"
)

// jwtAuth checks an operator's bearer token as the admin API's JWT
// authorizer (API Gateway) does before the api function sees a request,
// since nothing stands in front of a function URL: signed by a key of the
// issuer's JWKS (found by OpenID discovery and cached, fetched again for a
// key id it does not hold), issued by the issuer, within its validity, and
// with aud (an ID token) or client_id (an access token) one of the
// audiences. It also refuses a token whose token_use is neither id nor
// access. Then, like api.APIGatewayJWT, the caller is an admin when the
// groups claim holds the admin group; the API answers anyone else 403.
type jwtAuth struct {
	verifier    *oidc.IDTokenVerifier
	audiences   []string
	groupsClaim string
	adminGroup  string
}

var _ api.Authenticator = (*jwtAuth)(nil)

// authSettings are what jwtAuth checks a token against.
type authSettings struct {
	Issuer      string
	Audiences   []string
	GroupsClaim string
	AdminGroup  string
	// Now is the clock expiry is checked on (time.Now when nil).
	Now func() time.Time
}

// newJWTAuth reads the issuer's discovery document (ctx bounds that read;
// the key fetches later run on their own).
func newJWTAuth(ctx context.Context, s authSettings) (*jwtAuth, error) {
	if len(s.Audiences) == 0 {
		return nil, fmt.Errorf("%s: at least one audience is required", config.EnvJWTAudiences)
	}
	provider, err := oidc.NewProvider(ctx, s.Issuer)
	if err != nil {
		return nil, fmt.Errorf("%s: OpenID discovery of %q: %w", config.EnvJWTIssuer, s.Issuer, err)
	}
	if s.GroupsClaim == "" {
		s.GroupsClaim = "cognito:groups"
	}
	if s.AdminGroup == "" {
		s.AdminGroup = config.DefaultAdminGroup
	}
	// The audience is checked below, against several clients and either
	// claim, as the HTTP API's authorizer does.
	v := provider.Verifier(&oidc.Config{SkipClientIDCheck: true, Now: s.Now})
	return &jwtAuth{verifier: v, audiences: s.Audiences, groupsClaim: s.GroupsClaim, adminGroup: s.AdminGroup}, nil
}

// tokenClaims are the claims checked beyond go-oidc's.
type tokenClaims struct {
	ClientID string `json:"client_id"`
	TokenUse string `json:"token_use"`
}

// Authenticate implements api.Authenticator.
func (a *jwtAuth) Authenticate(r *http.Request) (api.Principal, error) {
	h := r.Header.Get("Authorization")
	scheme, raw, ok := strings.Cut(h, " ")
	raw = strings.TrimSpace(raw)
	if !ok || !strings.EqualFold(scheme, "Bearer") || raw == "" {
		return api.Principal{}, &api.UnauthenticatedError{Reason: "missing bearer token"}
	}
	tok, err := a.verifier.Verify(r.Context(), raw)
	if err != nil {
		return api.Principal{}, &api.UnauthenticatedError{Reason: "JWT refused: " + err.Error()}
	}
	var c tokenClaims
	if err := tok.Claims(&c); err != nil {
		return api.Principal{}, &api.UnauthenticatedError{Reason: "JWT claims: " + err.Error()}
	}
	if !slices.ContainsFunc(tok.Audience, a.accepts) && !a.accepts(c.ClientID) {
		return api.Principal{}, &api.UnauthenticatedError{Reason: "JWT audience is not an accepted client"}
	}
	if c.TokenUse != "" && c.TokenUse != "id" && c.TokenUse != "access" {
		return api.Principal{}, &api.UnauthenticatedError{Reason: "JWT token_use " + c.TokenUse + " is neither id nor access"}
	}
	if tok.Subject == "" {
		return api.Principal{}, &api.UnauthenticatedError{Reason: "JWT has no sub claim"}
	}
	var all map[string]json.RawMessage
	if err := tok.Claims(&all); err != nil {
		return api.Principal{}, &api.UnauthenticatedError{Reason: "JWT claims: " + err.Error()}
	}
	groups, err := claimGroups(all[a.groupsClaim])
	if err != nil {
		return api.Principal{}, &api.UnauthenticatedError{Reason: "JWT " + a.groupsClaim + ": " + err.Error()}
	}
	return api.Principal{Subject: tok.Subject, Admin: slices.Contains(groups, a.adminGroup)}, nil
}

func (a *jwtAuth) accepts(aud string) bool { return aud != "" && slices.Contains(a.audiences, aud) }

// claimGroups reads a groups claim: a JSON array of names (Cognito's
// cognito:groups) or one string of names separated by commas or spaces.
func claimGroups(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var arr []string
	if err := json.Unmarshal(raw, &arr); err == nil {
		return arr, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err != nil {
		return nil, errors.New("want an array of group names or a string")
	}
	return strings.FieldsFunc(one, func(r rune) bool { return r == ',' || r == ' ' }), nil
}
