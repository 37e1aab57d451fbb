package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAdminRoutesNeedAnAdmin(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	endpoints := []struct{ method, path string }{
		{"GET", "/api/v1/admin/maas-sites"},
		{"POST", "/api/v1/admin/maas-sites"},
		{"PATCH", "/api/v1/admin/maas-sites/" + fx.site},
		{"POST", "/api/v1/admin/maas-sites/" + fx.site + "/credentials"},
		{"GET", "/api/v1/admin/skus"},
		{"POST", "/api/v1/admin/onboardings"},
		{"GET", "/api/v1/admin/onboardings"},
		{"GET", "/api/v1/admin/audit"},
	}
	auth := []struct {
		name   string
		header string
		status int
		code   string
	}{
		{"no header", "", http.StatusUnauthorized, CodeUnauthorized},
		{"unknown token", "Bearer nope", http.StatusUnauthorized, CodeUnauthorized},
		{"wrong scheme", "Basic " + adminToken, http.StatusUnauthorized, CodeUnauthorized},
		{"non-admin", "Bearer " + userToken, http.StatusForbidden, CodeForbidden},
	}
	for _, ep := range endpoints {
		for _, a := range auth {
			t.Run(ep.method+" "+ep.path+" "+a.name, func(t *testing.T) {
				c := call{method: ep.method, path: ep.path, header: map[string]string{}}
				if ep.method != "GET" {
					c.body = map[string]any{}
				}
				if a.header != "" {
					c.header["Authorization"] = a.header
				}
				r := h.do(c)
				require.Equal(t, a.status, r.status, "%s", r.body)
				code, _ := r.errorOf(t)
				assert.Equal(t, a.code, code)
			})
		}
	}
	// A known principal's denied mutations are audited with who tried;
	// requests without a valid credential are only counted.
	entries := h.auditFor("site.create")
	results := map[string]string{}
	for _, e := range entries {
		results[e.Actor] = e.Result
	}
	assert.Equal(t, "failure:"+CodeForbidden, results["bob"])
	assert.NotContains(t, results, "anonymous")
	assert.Equal(t, "success", results["alice"], "the fixture's own create")
	assert.Positive(t, h.refusals.Counts()[CodeUnauthorized])
	assert.Equal(t, http.StatusOK, h.do(call{method: "GET", path: "/api/v1/admin/skus", token: adminToken}).status)
}

func TestStaticTokens(t *testing.T) {
	a := NewStaticTokens(map[string]Principal{"t-admin": {Subject: "root", Admin: true}, "t-user": {Subject: "u"}, "": {Subject: "empty", Admin: true}})
	tests := []struct {
		header  string
		want    Principal
		wantErr bool
	}{
		{"Bearer t-admin", Principal{Subject: "root", Admin: true}, false},
		{"bearer t-user", Principal{Subject: "u"}, false},
		{"Bearer ", Principal{}, true},
		{"", Principal{}, true},
		{"Bearer t-admin2", Principal{}, true},
		{"Token t-admin", Principal{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.header, func(t *testing.T) {
			r := httptest.NewRequestWithContext(t.Context(), "GET", "/", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			p, err := a.Authenticate(r)
			if tc.wantErr {
				var ue *UnauthenticatedError
				require.ErrorAs(t, err, &ue)
				assert.NotContains(t, err.Error(), "t-admin")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, p)
		})
	}
}

func TestAPIGatewayJWT(t *testing.T) {
	withClaims := func(t *testing.T, claims map[string]string) *http.Request {
		t.Helper()
		ev := events.APIGatewayV2HTTPRequest{
			RawPath: "/api/v1/admin/skus",
			RequestContext: events.APIGatewayV2HTTPRequestContext{
				HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: "/api/v1/admin/skus"},
			},
		}
		if claims != nil {
			ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
				JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims},
			}
		}
		var acc core.RequestAccessorV2
		r, err := acc.EventToRequestWithContext(context.Background(), ev)
		require.NoError(t, err)
		return r
	}
	tests := []struct {
		name    string
		auth    *APIGatewayJWT
		claims  map[string]string
		want    Principal
		wantErr bool
	}{
		{"flattened array admin", NewAPIGatewayJWT("", ""), map[string]string{"sub": "u1", "cognito:groups": "[ops maasflow-admin]"}, Principal{Subject: "u1", Admin: true}, false},
		{"json array admin", NewAPIGatewayJWT("groups", "ops"), map[string]string{"sub": "u2", "groups": `["ops","dev"]`}, Principal{Subject: "u2", Admin: true}, false},
		{"comma list", NewAPIGatewayJWT("groups", "ops"), map[string]string{"sub": "u3", "groups": "dev,ops"}, Principal{Subject: "u3", Admin: true}, false},
		{"not in group", NewAPIGatewayJWT("", ""), map[string]string{"sub": "u4", "cognito:groups": "[ops]"}, Principal{Subject: "u4"}, false},
		{"prefix is not membership", NewAPIGatewayJWT("", ""), map[string]string{"sub": "u5", "cognito:groups": "[maasflow-admins]"}, Principal{Subject: "u5"}, false},
		{"no groups", NewAPIGatewayJWT("", ""), map[string]string{"sub": "u6"}, Principal{Subject: "u6"}, false},
		{"custom subject", &APIGatewayJWT{SubjectClaim: "email"}, map[string]string{"email": "a@b"}, Principal{Subject: "a@b"}, false},
		{"no subject", NewAPIGatewayJWT("", ""), map[string]string{"cognito:groups": "[maasflow-admin]"}, Principal{}, true},
		{"no authorizer", NewAPIGatewayJWT("", ""), nil, Principal{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.auth.Authenticate(withClaims(t, tc.claims))
			if tc.wantErr {
				var ue *UnauthenticatedError
				require.ErrorAs(t, err, &ue)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, p)
		})
	}

	_, err := NewAPIGatewayJWT("", "").Authenticate(httptest.NewRequestWithContext(t.Context(), "GET", "/", nil))
	var ue *UnauthenticatedError
	assert.ErrorAs(t, err, &ue, "a request that did not come through API Gateway")
}
