package maas

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	redactedText = "[redacted]"
	// minSecretLen: shorter values are not scrubbed, because replacing every
	// "ab" in a message would destroy it while hiding nothing of value.
	minSecretLen = 4
	// maxMessageLen bounds a MAAS body copied into an error: MAAS's 409
	// retry page is HTML, and error text travels into ASL execution history.
	maxMessageLen = 512
)

// scrubber removes secrets from text MAAS sent back. MAAS may echo what it
// was given (a form error quoting a value, a proxy page quoting a header),
// so every body that reaches an error goes through it first, in each form the
// secret travelled in: raw, form-encoded, JSON-escaped and base64.
type scrubber struct {
	needles []string
}

// newScrubber builds a scrubber for the given secret values.
func newScrubber(secrets ...string) scrubber {
	var s scrubber
	for _, v := range secrets {
		s = s.with(v)
	}
	return s
}

// with returns a scrubber that also removes v. The receiver is not changed,
// so the client's key scrubber can be extended per call without races.
func (s scrubber) with(v string) scrubber {
	if len(v) < minSecretLen {
		return s
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(v))
	jsonEsc, _ := json.Marshal(v) // a string always marshals
	variants := []string{
		v,
		url.QueryEscape(v),
		url.PathEscape(v),
		oauthEscape(v),
		strings.Trim(string(jsonEsc), `"`),
		b64,
		url.QueryEscape(b64),
	}
	out := scrubber{needles: make([]string, 0, len(s.needles)+len(variants))}
	out.needles = append(out.needles, s.needles...)
	for _, n := range variants {
		if len(n) >= minSecretLen && !contains(out.needles, n) {
			out.needles = append(out.needles, n)
		}
	}
	return out
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// scrub replaces every secret in text. Longer needles go first so that a
// secret containing another is removed whole.
func (s scrubber) scrub(text string) string {
	if len(s.needles) == 0 || text == "" {
		return text
	}
	order := make([]string, len(s.needles))
	copy(order, s.needles)
	for i := 1; i < len(order); i++ { // insertion sort, longest first; lists are short
		for j := i; j > 0 && len(order[j]) > len(order[j-1]); j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	for _, n := range order {
		text = strings.ReplaceAll(text, n, redactedText)
	}
	return text
}

// message turns a MAAS body into one line fit for an error: scrubbed first
// (so truncation cannot leave half a secret), control characters folded to
// spaces, and truncated on a rune boundary.
func (s scrubber) message(body string) string {
	text := s.scrub(body)
	text = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, text)
	text = strings.Join(strings.Fields(text), " ")
	if len(text) <= maxMessageLen {
		return text
	}
	cut := maxMessageLen
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "…"
}
