package maas

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseOAuthHeader splits `OAuth k="v", k="v"` into decoded values, the way
// MAAS's OAuth layer reads it.
func parseOAuthHeader(t *testing.T, h string) map[string]string {
	t.Helper()
	require.True(t, strings.HasPrefix(h, "OAuth "), "header %q", h)
	out := map[string]string{}
	for _, part := range strings.Split(strings.TrimPrefix(h, "OAuth "), ", ") {
		k, v, ok := strings.Cut(part, "=")
		require.True(t, ok, "parameter %q", part)
		require.True(t, strings.HasPrefix(v, `"`) && strings.HasSuffix(v, `"`), "value of %s is quoted", k)
		dec, err := url.PathUnescape(strings.Trim(v, `"`))
		require.NoError(t, err)
		out[k] = dec
	}
	return out
}

func TestAuthorizationHeader(t *testing.T) {
	f := newFakeMAAS(t)
	f.on(http.MethodGet, "users/", "whoami", http.StatusOK, `{"username":"maasflow","is_superuser":true}`)
	f.on(http.MethodGet, "version/", "", http.StatusOK, `{"version":"3.5.4","capabilities":[],"subversion":""}`)
	_, err := f.client().Probe(context.Background())
	require.NoError(t, err)

	reqs := f.requests()
	require.Len(t, reqs, 2)
	for _, req := range reqs {
		h := req.Header.Get("Authorization")
		assert.Equal(t,
			`OAuth realm="", oauth_version="1.0", oauth_signature_method="PLAINTEXT", `+
				`oauth_consumer_key="cK3yConsumer01", oauth_token="tK3yToken02", `+
				`oauth_signature="%26tS3cretTokenSecret03", oauth_nonce="nonce-1", `+
				`oauth_timestamp="1736244930"`, h)
		assert.Equal(t, map[string]string{
			"realm":                  "",
			"oauth_version":          "1.0",
			"oauth_signature_method": "PLAINTEXT",
			"oauth_consumer_key":     testConsumerKey,
			"oauth_token":            testTokenKey,
			// PLAINTEXT: consumer secret (always empty in MAAS) & token secret.
			"oauth_signature": "&" + testTokenSecret,
			"oauth_nonce":     "nonce-1",
			"oauth_timestamp": "1736244930",
		}, parseOAuthHeader(t, h))
	}
}

func TestNonceIsFreshPerRequest(t *testing.T) {
	f := newFakeMAAS(t)
	f.on(http.MethodGet, "machines/k3tgaq/", "query_power_state", http.StatusOK, `{"state":"off"}`)
	c, err := NewClient(f.baseURL(), testKey) // default nonce source and clock
	require.NoError(t, err)
	for range 3 {
		_, err := c.PowerState(context.Background(), "k3tgaq")
		require.NoError(t, err)
	}

	seen := map[string]bool{}
	for _, req := range f.requests() {
		p := parseOAuthHeader(t, req.Header.Get("Authorization"))
		assert.Len(t, p["oauth_nonce"], 32)
		assert.False(t, seen[p["oauth_nonce"]], "nonce reused")
		seen[p["oauth_nonce"]] = true
		assert.Regexp(t, `^[0-9]+$`, p["oauth_timestamp"], "MAAS answers 400 to a non-integer timestamp")
	}
	assert.Len(t, seen, 3)
}

func TestOAuthEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"AZaz09-._~", "AZaz09-._~"},
		{"&secret", "%26secret"},
		{"a b+c", "a%20b%2Bc"},
		{"é", "%C3%A9"},
		{"", ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			assert.Equal(t, tc.want, oauthEscape(tc.in))
		})
	}
}

func TestAuthorizationTimestampFollowsClock(t *testing.T) {
	creds, err := parseAPIKey(testKey.Reveal())
	require.NoError(t, err)
	h := creds.authorization("n", time.Unix(1700000000, 999))
	assert.Contains(t, h, `oauth_timestamp="1700000000"`)
}
