package enroll

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"

	"github.com/maasflow/maasflow/shared/domain"
)

// tokenBytes is the token's entropy: 256 bits, so the hash the store keeps
// cannot be reversed by brute force and two tokens never collide.
const tokenBytes = 32

// NewToken returns a fresh enrollment token: 32 bytes from crypto/rand,
// base64url without padding (43 characters, safe in URLs, JSON and env files).
// Callers store only HashToken of it and hand the value to the node once,
// inside its bootstrap bundle.
func NewToken() (domain.Secret, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("enrollment token: read random bytes: %w", err)
	}
	return domain.Secret(base64.RawURLEncoding.EncodeToString(b)), nil
}

// HashToken is the lower-case hex SHA-256 of the token's text, the only form
// the store keeps. A plain hash is enough (no salt or KDF): the token carries
// 256 random bits, so there is no dictionary to attack.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// TokenMatches reports whether token hashes to hash, comparing in constant
// time. Pre-deploy hardening uses it to check that the token rendered into a
// bundle is the one the store holds for the node and attempt (requirements readiness §8.1,
// §8.5).
func TokenMatches(token domain.Secret, hash string) bool {
	return subtle.ConstantTimeCompare([]byte(HashToken(token.Reveal())), []byte(hash)) == 1
}
