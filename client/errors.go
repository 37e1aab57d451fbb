package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// The API's error codes (openapi.yaml, components.schemas.Error).
const (
	CodeInvalidRequest     = "invalid_request"
	CodeUnauthorized       = "unauthorized"
	CodeTokenRejected      = "token_rejected"
	CodeForbidden          = "forbidden"
	CodeNotFound           = "not_found"
	CodeMethodNotAllowed   = "method_not_allowed"
	CodeConflict           = "conflict"
	CodeOnboardingExists   = "onboarding_exists"
	CodePayloadTooLarge    = "payload_too_large"
	CodeInvalidReference   = "invalid_reference"
	CodeSiteNotReady       = "site_not_ready"
	CodePolicyIncomplete   = "policy_incomplete"
	CodeCredentialsNotSet  = "credentials_not_set"
	CodeServiceUnavailable = "service_unavailable"
	CodeInternal           = "internal"
	CodeWorkflowOpen       = "workflow_open"
	CodeNodeInUse          = "node_in_use"
)

// APIError is an answer outside 2xx, read from the error envelope
// {"error":{"code","message","field","correlation_id"}}.
type APIError struct {
	// Status is the HTTP status.
	Status int
	// Code is the API's error code (Code… constants), or http_<status>
	// when the answer carried no envelope (a proxy's page, say).
	Code    string
	Message string
	// Field is the JSON field a 4xx is about, when the API names one.
	Field string
	// CorrelationID names the request in the server's logs and audit.
	CorrelationID string
}

func (e *APIError) Error() string {
	s := e.Code + ": " + e.Message
	if e.CorrelationID != "" {
		s += " (correlation_id " + e.CorrelationID + ")"
	}
	return s
}

// IsCode reports whether err is an *APIError with the given code.
func IsCode(err error, code string) bool {
	var e *APIError
	return errors.As(err, &e) && e.Code == code
}

// IsStatus reports whether err is an *APIError with the given HTTP status.
func IsStatus(err error, status int) bool {
	var e *APIError
	return errors.As(err, &e) && e.Status == status
}

// errorFrom reads the error envelope; an answer without one becomes
// http_<status> with the status text.
func errorFrom(resp *http.Response, b []byte) *APIError {
	var env struct {
		Error *struct {
			Code          string `json:"code"`
			Message       string `json:"message"`
			Field         string `json:"field"`
			CorrelationID string `json:"correlation_id"`
		} `json:"error"`
	}
	e := &APIError{Status: resp.StatusCode, CorrelationID: resp.Header.Get(HeaderCorrelationID)}
	if json.Unmarshal(b, &env) == nil && env.Error != nil && env.Error.Code != "" {
		e.Code, e.Message, e.Field = env.Error.Code, env.Error.Message, env.Error.Field
		if env.Error.CorrelationID != "" {
			e.CorrelationID = env.Error.CorrelationID
		}
		return e
	}
	e.Code = fmt.Sprintf("http_%d", resp.StatusCode)
	e.Message = strings.ToLower(http.StatusText(resp.StatusCode)) + " (the answer carried no error envelope)"
	return e
}
