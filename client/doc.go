// Package client is the Go SDK for the maasflow admin API
// (shared/api/openapi.yaml describes the wire format).
//
// A Client carries the API's base URL and the operator's bearer token. It
// has one typed method per admin endpoint, iterators over every paged
// listing (Go 1.23 range-over-func, one item at a time, following
// next_cursor), streams (OpenStream, Follow, StreamOnboarding,
// StreamDecommission, StreamBatch: the server pushes the resource at once
// and after each change, as server-sent events) and waiters that follow an
// onboarding, a decommission or a batch until it reaches a terminal status
// or the context ends: on its stream, or by polling where the server cannot
// stream (ErrStreamsUnsupported, e.g. behind API Gateway).
//
// An answer outside 2xx is an *APIError carrying the HTTP status, the
// API's error code, the field a 4xx is about and the correlation id that
// names the request in the server's logs and audit trail:
//
//	var apiErr *client.APIError
//	if errors.As(err, &apiErr) && apiErr.Code == client.CodeNotFound { … }
//
// A caller that needs the API's JSON exactly as it was sent (the CLI's
// -o json) passes RawResponse to any method.
package client
