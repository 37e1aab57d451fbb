// Package connector relays a site's MAAS API calls and pre-deploy fetches
// through `maasflow connector`, a small process an operator runs next to
// MAAS that makes only outbound connections (docs/decisions.md, "Site
// connector").
//
// The control plane side is a Relay: Transport turns each HTTP request of
// the MAAS client (or of a pre-deploy check) into a Request, the Relay
// delivers it to the site's connector and waits for its Response until
// the request's context ends. The connector side is a Runner that
// receives Requests through a Link, runs them against MAAS before their
// deadline and replies. A Runner never runs a mutation twice: it journals
// the ID of every mutation before sending it to MAAS.
//
// Two transports implement the same contract: AWS (SQS request queue per
// site, DynamoDB reply table; shared/connector/sqsrelay) and local (an
// in-process Broker whose HTTP long-poll endpoint `maasflow local` serves).
package connector

import (
	"fmt"
	"net/http"
	"time"
)

// Request kinds.
const (
	// KindMAAS is a MAAS API 2.0 call; URL is relative to the API root
	// ("machines/abc/?op=deploy") and the connector joins it to its own
	// MAAS URL, so a request can only reach the site's MAAS API.
	KindMAAS = "maas"
	// KindFetch is a GET of an absolute URL from the site's network (the
	// pre-deploy fetch checks, requirements readiness §8.1).
	KindFetch = "fetch"
)

// Attribute names of the AWS reply table (infra creates it).
const (
	AttrSite = "site" // partition key: the site ID
	AttrKey  = "key"  // sort key: "reply#<request id>" or "heartbeat"
	AttrTTL  = "ttl"
)

// Request is one call the control plane asks a site's connector to make.
type Request struct {
	// ID identifies the request; a connector runs each mutation ID once.
	ID   string `json:"id"`
	Site string `json:"site"`
	Kind string `json:"kind"`
	// Method and URL: see KindMAAS and KindFetch.
	Method string            `json:"method"`
	URL    string            `json:"url"`
	Header map[string]string `json:"header,omitempty"`
	Body   []byte            `json:"body,omitempty"`
	// Deadline is when the caller stops waiting: a connector never starts
	// a request after it, and bounds the MAAS call by it.
	Deadline time.Time `json:"deadline"`
}

// Mutation reports whether the request may change MAAS: everything but
// GET and HEAD.
func (r Request) Mutation() bool { return r.Method != http.MethodGet && r.Method != http.MethodHead }

// Response is the connector's answer: an HTTP answer, or Error when there
// was none.
type Response struct {
	ID     string            `json:"id"`
	Status int               `json:"status,omitempty"`
	Header map[string]string `json:"header,omitempty"`
	Body   []byte            `json:"body,omitempty"`
	Error  *Failure          `json:"error,omitempty"`
}

// Failure kinds: why a connector has no HTTP answer.
const (
	// FailTimeout: MAAS did not answer before the deadline.
	FailTimeout = "timeout"
	// FailUnreachable: the connector could not reach MAAS or the URL.
	FailUnreachable = "unreachable"
	// FailExpired: the request arrived after its deadline and was not run.
	FailExpired = "expired"
	// FailUnknownOutcome: the connector began this mutation before and
	// stopped before recording its answer; it does not run it again. The
	// caller must observe MAAS to learn what happened.
	FailUnknownOutcome = "unknown_outcome"
	// FailRefused: the connector will not run the request (another site's,
	// a URL outside the MAAS API, a method a fetch may not use).
	FailRefused = "refused"
	// FailTooLarge: the answer does not fit the transport.
	FailTooLarge = "too_large"
)

// Failure says why a request has no HTTP answer. Message never holds a
// credential: the connector builds it from the error kind and the URL
// without its query.
type Failure struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// Heartbeat is what a connector reports about itself every HeartbeatEvery.
type Heartbeat struct {
	Site      string    `json:"site"`
	Version   string    `json:"version"`
	Hostname  string    `json:"hostname,omitempty"`
	StartedAt time.Time `json:"started_at"`
	At        time.Time `json:"at"`
	// MAASReachable is the result of the connector's last MAAS call.
	MAASReachable bool `json:"maas_reachable"`
}

// HeartbeatEvery is how often a connector reports; a heartbeat older than
// three periods means the connector is offline.
const HeartbeatEvery = 15 * time.Second

// Online reports whether hb is recent enough at now.
func (hb Heartbeat) Online(now time.Time) bool {
	return !hb.At.IsZero() && now.Sub(hb.At) <= 3*HeartbeatEvery
}

// RelayError: the relay itself failed (the queue or the reply store), not
// the site.
type RelayError struct {
	Site    string
	Message string
}

func (e *RelayError) Error() string {
	return fmt.Sprintf("connector relay for site %s: %s", e.Site, e.Message)
}
