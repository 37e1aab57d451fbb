package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/maasflow/maasflow/shared/store"
)

// Error codes of the envelope {"error":{"code","message","correlation_id"}}.
const (
	CodeInvalidRequest   = "invalid_request"
	CodeUnauthorized     = "unauthorized"
	CodeTokenRejected    = "token_rejected"
	CodeForbidden        = "forbidden"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeConflict         = "conflict"
	CodeOnboardingExists = "onboarding_exists"
	CodePayloadTooLarge  = "payload_too_large"
	CodeInvalidReference = "invalid_reference"
	CodeSiteNotReady     = "site_not_ready"
	CodeCredentialsUnset = "credentials_not_set"
	CodeUnavailable      = "service_unavailable"
	CodeInternal         = "internal"
)

// CodeUnsupportedMediaType: a request body labelled other than JSON (415).
const CodeUnsupportedMediaType = "unsupported_media_type"

// CodeStreamsUnsupported answers a stream where the deployment cannot
// stream (Config.NoStreams): read the resource's GET instead.
const CodeStreamsUnsupported = "streams_unsupported"

// StatusError is an answer other than success: an HTTP status, an envelope
// code, and a message that names the JSON field it is about (Field, in
// snake_case with indexes, e.g. items[3].ipv4_cidr). Messages never hold a
// secret.
type StatusError struct {
	Status  int
	Code    string
	Field   string
	Message string
}

func (e *StatusError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// fieldError is a 400 about one request field.
func fieldError(field, format string, args ...any) *StatusError {
	return &StatusError{
		Status:  http.StatusBadRequest,
		Code:    CodeInvalidRequest,
		Field:   field,
		Message: field + ": " + fmt.Sprintf(format, args...),
	}
}

// referenceError is a 422 about a field that names a missing or inactive
// record.
func referenceError(field, format string, args ...any) *StatusError {
	return &StatusError{
		Status:  http.StatusUnprocessableEntity,
		Code:    CodeInvalidReference,
		Field:   field,
		Message: field + ": " + fmt.Sprintf(format, args...),
	}
}

// errorBody is the wire form of the envelope.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code          string `json:"code"`
	Message       string `json:"message"`
	Field         string `json:"field,omitempty"`
	CorrelationID string `json:"correlation_id"`
}

// classify turns any handler error into a StatusError. Store errors map to
// their statuses; everything unclassified is a 500 whose cause is logged,
// never sent.
func classify(err error) *StatusError {
	var (
		se       *StatusError
		nf       *store.ItemNotFoundError
		conflict *store.ItemConflictError
		open     *store.OpenOnboardingExistsError
		tok      *store.TokenRejectedError
		invalid  *store.InvalidRecordError
		cursor   *store.InvalidCursorError
	)
	if lc := classifyLifecycle(err); lc != nil {
		return lc
	}
	switch {
	case errors.As(err, &se):
		return se
	case errors.As(err, new(*store.AuditWriteError)):
		// The change and its audit entry are one transaction: neither landed.
		return &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: "nothing was changed: the change could not be written together with its audit entry; retry later"}
	case errors.As(err, &nf):
		return &StatusError{Status: http.StatusNotFound, Code: CodeNotFound, Message: nf.Error()}
	case errors.As(err, &open) && open.Identity != "":
		// Another host name, same physical server (BMC, PXE MAC, machine).
		return &StatusError{
			Status: http.StatusConflict, Code: CodeOnboardingExists, Field: open.Identity,
			Message: fmt.Sprintf("%s: the server at %s %s on site %s already has open onboarding %s (hostname %s)",
				open.Identity, open.Identity, open.Value, open.SiteID, open.OnboardingID, open.Hostname),
		}
	case errors.As(err, &open):
		return &StatusError{
			Status: http.StatusConflict, Code: CodeOnboardingExists, Field: "hostname",
			Message: fmt.Sprintf("hostname: %s on site %s already has open onboarding %s", open.Hostname, open.SiteID, open.OnboardingID),
		}
	case errors.As(err, &conflict):
		return &StatusError{Status: http.StatusConflict, Code: CodeConflict, Message: conflict.Error()}
	case errors.As(err, &tok):
		return &StatusError{Status: http.StatusUnauthorized, Code: CodeTokenRejected, Field: "token", Message: tok.Error()}
	case errors.As(err, &invalid):
		return fieldError(invalid.Field, "%s", invalid.Reason)
	case errors.As(err, &cursor):
		return fieldError("cursor", "%s", cursor.Reason)
	case errors.As(err, new(unavailable)):
		// The database could not write (a full disk): nothing was kept.
		return &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
			Message: "nothing was changed: the database could not write; retry later"}
	case errors.Is(err, context.DeadlineExceeded):
		return &StatusError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "a dependency did not answer in time; retry later"}
	default:
		return &StatusError{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error"}
	}
}

// unavailable is a storage error that a later retry may not meet (local
// mode's database on a full disk).
type unavailable interface{ Unavailable() bool }
