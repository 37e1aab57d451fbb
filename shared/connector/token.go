package connector

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Lifetimes of the local transport's connector tokens.
const (
	// DefaultTokenTTL is how long an issued token is valid: long enough
	// that a connector restarted now and then keeps working, short enough
	// that a token copied once does not work for ever.
	DefaultTokenTTL = 30 * 24 * time.Hour
	// DefaultRotationOverlap is how long the tokens of a site's previous
	// generation still work after a rotation: time to restart the
	// connector with the new one.
	DefaultRotationOverlap = 10 * time.Minute
)

// Reasons a token is refused (TokenError.Reason).
var (
	ErrTokenMalformed = errors.New("not a connector token")
	ErrTokenExpired   = errors.New("the connector token has expired; issue a new one")
	ErrTokenRotated   = errors.New("the connector token was replaced by a rotation; use the new one")
)

// Tokens issues and checks the local transport's site tokens:
// "<site>.<generation>.<expiry unix>.<mac>", the mac an HMAC-SHA256 over
// the rest under the deployment's key. A token names its site, expires, and
// belongs to a generation: rotating a site starts a new generation, and
// the previous one stops working after the overlap. Generations survive a
// restart in a small JSON file (path).
type Tokens struct {
	key     []byte
	now     func() time.Time
	ttl     time.Duration
	overlap time.Duration
	path    string

	mu   sync.Mutex
	gens map[string]generation
}

// generation is a site's current token generation and when it began.
type generation struct {
	N         int       `json:"n"`
	RotatedAt time.Time `json:"rotated_at"`
}

// OpenTokens loads the generations kept at path (none yet is fine); a zero
// ttl or overlap takes the default.
func OpenTokens(key []byte, path string, ttl, overlap time.Duration, now func() time.Time) (*Tokens, error) {
	if now == nil {
		now = time.Now
	}
	if ttl <= 0 {
		ttl = DefaultTokenTTL
	}
	if overlap <= 0 {
		overlap = DefaultRotationOverlap
	}
	t := &Tokens{key: key, now: now, ttl: ttl, overlap: overlap, path: path, gens: map[string]generation{}}
	if path == "" {
		return t, nil
	}
	raw, err := os.ReadFile(path) //nolint:gosec // G304: a file in the stack's data directory
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return t, nil
	case err != nil:
		return nil, fmt.Errorf("read connector token generations: %w", err)
	}
	if err := json.Unmarshal(raw, &t.gens); err != nil {
		return nil, fmt.Errorf("%s is not the connector token generations (JSON): %w", path, err)
	}
	return t, nil
}

// TTL is how long an issued token is valid.
func (t *Tokens) TTL() time.Duration { return t.ttl }

// Overlap is how long a rotated-out generation still works.
func (t *Tokens) Overlap() time.Duration { return t.overlap }

// Issue returns a new token for site's current generation and its expiry.
func (t *Tokens) Issue(site string) (string, time.Time) {
	t.mu.Lock()
	n := t.gens[site].N
	t.mu.Unlock()
	return t.issue(site, n)
}

func (t *Tokens) issue(site string, n int) (string, time.Time) {
	exp := t.now().Add(t.ttl).UTC().Truncate(time.Second)
	body := site + "." + strconv.Itoa(n) + "." + strconv.FormatInt(exp.Unix(), 10)
	return body + "." + t.mac(body), exp
}

// Rotate starts a new generation for site and returns its first token;
// tokens of the previous generation work for Overlap more, older ones no
// longer.
func (t *Tokens) Rotate(site string) (string, time.Time, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := generation{N: t.gens[site].N + 1, RotatedAt: t.now().UTC()}
	next := make(map[string]generation, len(t.gens)+1)
	for k, v := range t.gens {
		next[k] = v
	}
	next[site] = g
	if err := t.save(next); err != nil {
		return "", time.Time{}, err
	}
	t.gens = next
	tok, exp := t.issue(site, g.N)
	return tok, exp, nil
}

// save writes gens atomically (temporary file, rename), so a crash leaves
// the old generations or the new ones, never half of a file.
func (t *Tokens) save(gens map[string]generation) error {
	if t.path == "" {
		return nil
	}
	raw, err := json.Marshal(gens)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(t.path), ".connector-tokens-*")
	if err != nil {
		return fmt.Errorf("save connector token generations: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(raw); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("save connector token generations: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("save connector token generations: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save connector token generations: %w", err)
	}
	if err := os.Rename(tmp.Name(), t.path); err != nil {
		return fmt.Errorf("save connector token generations: %w", err)
	}
	return nil
}

// Site returns the site tok authenticates, or why it does not.
func (t *Tokens) Site(tok string) (string, error) {
	// The site comes first and may hold dots; the three fields after it
	// do not.
	parts := strings.Split(tok, ".")
	k := len(parts)
	if k < 4 || parts[0] == "" {
		return "", ErrTokenMalformed
	}
	body := strings.Join(parts[:k-1], ".")
	if !hmac.Equal([]byte(parts[k-1]), []byte(t.mac(body))) {
		return "", ErrTokenMalformed
	}
	site := strings.Join(parts[:k-3], ".")
	n, err1 := strconv.Atoi(parts[k-3])
	exp, err2 := strconv.ParseInt(parts[k-2], 10, 64)
	if err1 != nil || err2 != nil {
		return "", ErrTokenMalformed
	}
	now := t.now()
	if !now.Before(time.Unix(exp, 0)) {
		return "", ErrTokenExpired
	}
	t.mu.Lock()
	g := t.gens[site]
	t.mu.Unlock()
	switch {
	case n == g.N:
		return site, nil
	case n == g.N-1 && now.Before(g.RotatedAt.Add(t.overlap)):
		return site, nil
	default:
		return "", ErrTokenRotated
	}
}

func (t *Tokens) mac(body string) string {
	m := hmac.New(sha256.New, t.key)
	m.Write([]byte("maasflow-connector-token:" + body))
	return hex.EncodeToString(m.Sum(nil))
}
