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
	var cred *credential
	for i := range s.credentials {
		if s.credentials[i].consumerKey != "" && params["oauth_consumer_key"] == s.credentials[i].consumerKey {
			cred = &s.credentials[i]
			break
		}
	}
	if cred == nil {
		return fail("Authorization Error: Invalid API key.")
	}
	if params["oauth_token"] != cred.tokenKey {
		return fail(fmt.Sprintf("Authorization Error: 'Invalid access token: %s'", params["oauth_token"]))
	}
	if m := params["oauth_signature_method"]; m != "PLAINTEXT" {
		return fail(fmt.Sprintf("Authorization Error: 'Signature method %s not supported try one of the following: PLAINTEXT'", m))
	}
	want := "&" + cred.tokenSecret
	if subtle.ConstantTimeCompare([]byte(params["oauth_signature"]), []byte(want)) != 1 {
		return fail("Authorization Error: 'Invalid signature.'")
	}
	return cred.user, nil
}

// adminOperations are the operations MAAS allows only to administrators
// (maas-behaviour §5, §6, §8, §9), keyed by route template and "METHOD op".
// Anyone else gets MAAS's empty 403 once the machine is known to exist.
var adminOperations = map[string]bool{
	apiPrefix + "machines/ POST accept":                                 true,
	apiPrefix + "machines/ POST accept_all":                             true,
	apiPrefix + "machines/ GET power_parameters":                        true,
	apiPrefix + "machines/{system_id}/ PUT ":                            true,
	apiPrefix + "machines/{system_id}/ DELETE ":                         true,
	apiPrefix + "machines/{system_id}/ GET power_parameters":            true,
	apiPrefix + "machines/{system_id}/ POST commission":                 true,
	apiPrefix + "machines/{system_id}/ POST mark_fixed":                 true,
	apiPrefix + "machines/{system_id}/ POST set_storage_layout":         true,
	apiPrefix + "machines/{system_id}/ POST rescue_mode":                true,
	apiPrefix + "machines/{system_id}/ POST exit_rescue_mode":           true,
	apiPrefix + "nodes/{system_id}/interfaces/{id}/ POST link_subnet":   true,
	apiPrefix + "nodes/{system_id}/interfaces/{id}/ POST unlink_subnet": true,
	apiPrefix + "nodes/{system_id}/interfaces/{id}/ POST disconnect":    true,
	apiPrefix + "nodes/{system_id}/interfaces/{id}/ DELETE ":            true,

	// The design's interface, subnet and boot-disk operations.
	apiPrefix + "nodes/{system_id}/interfaces/ POST create_bond":          true,
	apiPrefix + "nodes/{system_id}/interfaces/ POST create_vlan":          true,
	apiPrefix + "nodes/{system_id}/interfaces/{id}/ PUT ":                 true,
	apiPrefix + "nodes/{system_id}/blockdevices/{id}/ POST set_boot_disk": true,
	apiPrefix + "subnets/{id}/ PUT ":                                      true,
}

// refuseNonAdmin is the 403 a user without admin rights gets for an admin
// operation; nil when user may go on. A machine that does not exist is left
// to the handler's 404, as MAAS looks the machine up before the permission.
// Called with s.mu held.
func (s *Simulator) refuseNonAdmin(rt route, key, user string) *reply {
	if user == adminUser || !adminOperations[rt.template+" "+key] {
		return nil
	}
	if len(rt.vars) > 0 && strings.Contains(rt.template, "{system_id}") && s.st.machines[rt.vars[0]] == nil {
		return nil
	}
	rp := forbidden()
	return &rp
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
