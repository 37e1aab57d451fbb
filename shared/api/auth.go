package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"github.com/maasflow/maasflow/shared/config"
)

// UnauthenticatedError: the request carries no acceptable credential. Reason
// is for logs; callers only ever see a generic 401.
type UnauthenticatedError struct {
	Reason string
}

func (e *UnauthenticatedError) Error() string { return "unauthenticated: " + e.Reason }

// bearerToken returns the token of an "Authorization: Bearer <token>" header.
func bearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// StaticTokens authenticates fixed bearer tokens (local mode). Tokens are
// kept as SHA-256 digests and every presented token is compared with all of
// them in constant time, so neither timing nor a memory dump of the map
// order gives a token away.
type StaticTokens struct {
	entries []staticEntry
}

type staticEntry struct {
	digest    [sha256.Size]byte
	principal Principal
}

var _ Authenticator = (*StaticTokens)(nil)

// NewStaticTokens returns an authenticator for tokens, each mapped to the
// principal it authenticates (Admin true for admin tokens). Empty tokens are
// ignored.
func NewStaticTokens(tokens map[string]Principal) *StaticTokens {
	s := &StaticTokens{}
	for tok, p := range tokens {
		if tok == "" {
			continue
		}
		s.entries = append(s.entries, staticEntry{digest: sha256.Sum256([]byte(tok)), principal: p})
	}
	return s
}

// Authenticate implements Authenticator.
func (s *StaticTokens) Authenticate(r *http.Request) (Principal, error) {
	tok, ok := bearerToken(r)
	if !ok {
		return Principal{}, &UnauthenticatedError{Reason: "missing bearer token"}
	}
	d := sha256.Sum256([]byte(tok))
	var found Principal
	match := 0
	for _, e := range s.entries {
		eq := subtle.ConstantTimeCompare(d[:], e.digest[:])
		if eq == 1 {
			found = e.principal
		}
		match |= eq
	}
	if match != 1 {
		return Principal{}, &UnauthenticatedError{Reason: "unknown bearer token"}
	}
	return found, nil
}

// APIGatewayJWT authenticates requests that API Gateway (HTTP API) already
// verified with its JWT authorizer: it reads the authorizer's claims from the
// request context that aws-lambda-go-api-proxy's V2 adapter attaches. The
// caller is an admin when the groups claim holds the admin group.
type APIGatewayJWT struct {
	// SubjectClaim names the caller (default "sub").
	SubjectClaim string
	// GroupsClaim holds the caller's groups (default "cognito:groups").
	GroupsClaim string
	// AdminGroup is the group that grants admin (default
	// config.DefaultAdminGroup).
	AdminGroup string
}

var _ Authenticator = (*APIGatewayJWT)(nil)

// NewAPIGatewayJWT returns an APIGatewayJWT for groupsClaim and adminGroup;
// empty arguments take the defaults.
func NewAPIGatewayJWT(groupsClaim, adminGroup string) *APIGatewayJWT {
	return &APIGatewayJWT{GroupsClaim: groupsClaim, AdminGroup: adminGroup}
}

// Authenticate implements Authenticator.
func (a *APIGatewayJWT) Authenticate(r *http.Request) (Principal, error) {
	rc, ok := core.GetAPIGatewayV2ContextFromContext(r.Context())
	if !ok || rc.Authorizer == nil || rc.Authorizer.JWT == nil {
		return Principal{}, &UnauthenticatedError{Reason: "no JWT authorizer context"}
	}
	claims := rc.Authorizer.JWT.Claims
	subjectClaim := a.SubjectClaim
	if subjectClaim == "" {
		subjectClaim = "sub"
	}
	sub := claims[subjectClaim]
	if sub == "" {
		return Principal{}, &UnauthenticatedError{Reason: "JWT has no " + subjectClaim + " claim"}
	}
	groupsClaim, adminGroup := a.GroupsClaim, a.AdminGroup
	if groupsClaim == "" {
		groupsClaim = "cognito:groups"
	}
	if adminGroup == "" {
		adminGroup = config.DefaultAdminGroup
	}
	admin := false
	for _, g := range parseGroups(claims[groupsClaim]) {
		if g == adminGroup {
			admin = true
			break
		}
	}
	return Principal{Subject: sub, Admin: admin}, nil
}

// parseGroups reads a groups claim as the HTTP API authorizer passes it on.
// API Gateway flattens a JSON array claim into "[a b c]"; a claim may also be
// a JSON array string or a comma- or space-separated list.
func parseGroups(v string) []string {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	var arr []string
	if json.Unmarshal([]byte(v), &arr) == nil {
		return arr
	}
	v = strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })
}
