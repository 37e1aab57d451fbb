package api

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"
)

// RefusalCounter counts the requests the API refused before it knew who
// sent them (no or a bad credential, a rejected enrollment token, an
// unknown route, a malformed path id), by error code. Such requests cost no
// record: they are counted here and sampled into the log, never written to
// the audit trail one by one, so that nobody can grow the stored state
// without a credential. The zero value is ready to use.
type RefusalCounter struct {
	mu     sync.Mutex
	counts map[string]int64
	// nextLog is when the next sample may be logged; suppressed counts
	// the refusals since the last sample.
	nextLog    time.Time
	suppressed int64
}

// refusalLogInterval is the least time between two sampled log lines.
const refusalLogInterval = 10 * time.Second

// Counts returns the refusals so far by error code (unauthorized,
// forbidden, token_rejected, not_found, invalid_request, …).
func (c *RefusalCounter) Counts() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

// record counts one refusal and reports whether it is logged, with how
// many refusals went unlogged since the last line and the total so far.
func (c *RefusalCounter) record(code string, now time.Time) (logIt bool, suppressed, total int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = map[string]int64{}
	}
	c.counts[code]++
	for _, n := range c.counts {
		total += n
	}
	if now.Before(c.nextLog) {
		c.suppressed++
		return false, 0, total
	}
	suppressed, c.suppressed = c.suppressed, 0
	c.nextLog = now.Add(refusalLogInterval)
	return true, suppressed, total
}

// refused counts a refused request and logs at most one line per
// refusalLogInterval, with the refusals it stands for.
func (s *server) refused(ctx context.Context, rq *request, rt route, status int, code string) {
	logIt, suppressed, total := s.refusals.record(code, s.clock.Now())
	if !logIt {
		return
	}
	attrs := []any{"method", boundedForRecord(rq.r.Method, maxMethod), "route", rt.pattern, "status", status, "code", code,
		"refused_since_last_line", suppressed, "refused_total", total}
	if rq.refusalReason != "" {
		attrs = append(attrs, "reason", rq.refusalReason)
	}
	rq.log.WarnContext(ctx, "request refused (sampled)", attrs...)
}

// maxMethod bounds the request method in answers and logs: any token is a
// valid method on the wire.
const maxMethod = 16

// maxPathValue bounds an id taken from the path: server-made ids are UUIDs,
// SKU ids at most 63 characters, RoCE assignment ids a host name and an
// interface name.
const maxPathValue = 270

// checkPathValues refuses, as 404, a path id that no record can have: too
// long, not UTF-8, or holding control characters. The value is not quoted.
func checkPathValues(rq *request, names []string) error {
	for _, name := range names {
		v := rq.r.PathValue(name)
		if !boundedText(v, maxPathValue) {
			return &StatusError{Status: http.StatusNotFound, Code: CodeNotFound,
				Message: fmt.Sprintf("no such %s: an id is at most %d characters of printable text", name, maxPathValue)}
		}
	}
	return nil
}

func boundedText(v string, max int) bool {
	if len(v) > max || !utf8.ValidString(v) {
		return false
	}
	for _, r := range v {
		if unprintable(r) {
			return false
		}
	}
	return true
}

// boundedForRecord shortens an attacker-chosen string before it goes into a
// record or a log line: control characters become '?', and more than max
// bytes are cut, marked with "…".
func boundedForRecord(v string, max int) string {
	if boundedText(v, max) {
		return v
	}
	b := make([]rune, 0, max)
	n := 0
	for _, r := range v {
		if unprintable(r) {
			r = '?'
		}
		n += utf8.RuneLen(r)
		if n > max {
			return string(b) + "…"
		}
		b = append(b, r)
	}
	return string(b)
}
