package maassim

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// oauthRequired are the parameters without which piston does not treat the
// request as OAuth at all, and falls back to the anonymous handler.
var oauthRequired = []string{
	"oauth_consumer_key", "oauth_token", "oauth_signature", "oauth_signature_method",
	"oauth_timestamp", "oauth_nonce",
}

// authenticate checks the OAuth 1.0 PLAINTEXT header (maas-behaviour §1). It
// returns the user, "" for an anonymous request, or the refusal to send.
// Refusals never carry the secret: MAAS's own "Invalid signature" text
// includes the expected signature, which this one deliberately leaves out.
// Nonces and timestamp freshness are not checked (the client's timestamps
// are wall time while the simulator may run on a fake clock).
func (s *Simulator) authenticate(r *http.Request) (string, *reply) {
	h := r.Header.Get("Authorization")
	if !strings.HasPrefix(h, "OAuth ") {
		return "", nil
	}
	params := parseOAuthHeader(h[len("OAuth "):])
	for _, k := range oauthRequired {
		if _, ok := params[k]; !ok {
			return "", nil
		}
	}
	if _, err := strconv.ParseInt(params["oauth_timestamp"], 10, 64); err != nil {
		rp := badRequest("Bad Request: Invalid oauth_timestamp")
		return "", &rp
	}
	fail := func(msg string) (string, *reply) {
		rp := textReply(http.StatusUnauthorized, msg)
		rp.header = http.Header{"Www-Authenticate": {`OAuth realm="MAAS API"`}}
		return "", &rp
	}
	if params["oauth_consumer_key"] != s.consumerKey {
		return fail("Authorization Error: Invalid API key.")
	}
	if params["oauth_token"] != s.tokenKey {
		return fail(fmt.Sprintf("Authorization Error: 'Invalid access token: %s'", params["oauth_token"]))
	}
	if m := params["oauth_signature_method"]; m != "PLAINTEXT" {
		return fail(fmt.Sprintf("Authorization Error: 'Signature method %s not supported try one of the following: PLAINTEXT'", m))
	}
	want := "&" + s.tokenSecret
	if subtle.ConstantTimeCompare([]byte(params["oauth_signature"]), []byte(want)) != 1 {
		return fail("Authorization Error: 'Invalid signature.'")
	}
	return adminUser, nil
}

// parseOAuthHeader reads `k="v", k2="v2"` pairs, URL-unescaping the values
// as gomaasapi escapes them.
func parseOAuthHeader(h string) map[string]string {
	out := map[string]string{}
	for _, part := range strings.Split(h, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"`)
		if uv, err := url.QueryUnescape(v); err == nil {
			v = uv
		}
		out[strings.TrimSpace(k)] = v
	}
	return out
}
