package maas

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// credentials are the three parts of a MAAS API key (maas-behaviour §1). The
// consumer secret is always empty in MAAS.
type credentials struct {
	consumerKey string
	tokenKey    string
	tokenSecret string
}

// errMalformedKey never carries the key: a half-right key is still most of a
// secret.
var errMalformedKey = errors.New("maas: malformed API key: want consumer_key:token_key:token_secret")

// parseAPIKey splits "consumer_key:token_key:token_secret". The error says
// how many parts it saw, never what they were.
func parseAPIKey(key string) (credentials, error) {
	parts := strings.Split(key, ":")
	if len(parts) != 3 {
		return credentials{}, fmt.Errorf("%w (got %d parts)", errMalformedKey, len(parts))
	}
	for _, p := range parts {
		if strings.TrimSpace(p) == "" {
			return credentials{}, fmt.Errorf("%w (a part is empty)", errMalformedKey)
		}
	}
	return credentials{consumerKey: parts[0], tokenKey: parts[1], tokenSecret: parts[2]}, nil
}

// authorization renders the OAuth 1.0 PLAINTEXT header (maas-behaviour §1):
//
//	OAuth realm="", oauth_version="1.0", oauth_signature_method="PLAINTEXT",
//	oauth_consumer_key="…", oauth_token="…", oauth_signature="%26<secret>",
//	oauth_nonce="…", oauth_timestamp="<unix seconds>"
//
// The signature is consumer_secret + "&" + token_secret with an empty
// consumer secret. Values are percent-encoded as RFC 5849 §3.5.1 requires
// (so the signature's "&" travels as %26, as gomaasapi sends it); MAAS's
// OAuth layer decodes them before comparing.
func (c credentials) authorization(nonce string, now time.Time) string {
	var b strings.Builder
	b.Grow(256)
	b.WriteString(`OAuth realm=""`)
	for _, kv := range [...][2]string{
		{"oauth_version", "1.0"},
		{"oauth_signature_method", "PLAINTEXT"},
		{"oauth_consumer_key", c.consumerKey},
		{"oauth_token", c.tokenKey},
		{"oauth_signature", "&" + c.tokenSecret},
		{"oauth_nonce", nonce},
		{"oauth_timestamp", strconv.FormatInt(now.Unix(), 10)},
	} {
		b.WriteString(", ")
		b.WriteString(kv[0])
		b.WriteString(`="`)
		b.WriteString(oauthEscape(kv[1]))
		b.WriteByte('"')
	}
	return b.String()
}

// oauthEscape percent-encodes everything but RFC 3986's unreserved
// characters, with upper-case hex (RFC 5849 §3.6). url.QueryEscape is not
// the same: it turns a space into "+".
func oauthEscape(s string) string {
	const hexdigits = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case 'A' <= ch && ch <= 'Z', 'a' <= ch && ch <= 'z', '0' <= ch && ch <= '9',
			ch == '-', ch == '.', ch == '_', ch == '~':
			b.WriteByte(ch)
		default:
			b.WriteByte('%')
			b.WriteByte(hexdigits[ch>>4])
			b.WriteByte(hexdigits[ch&0x0f])
		}
	}
	return b.String()
}

// randomNonce is the default nonce source: MAAS stores nonces server-side,
// so each request needs a fresh one (maas-behaviour §1).
func randomNonce() string {
	var buf [16]byte
	// crypto/rand.Read never returns an error on supported platforms (Go
	// 1.24+ crashes the program instead), so there is nothing to handle.
	_, _ = rand.Read(buf[:])
	return hex.EncodeToString(buf[:])
}
