package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"unicode/utf8"
)

// readBody reads the whole request body within the configured limit; an
// empty body is a 400.
func readBody(rq *request) ([]byte, error) {
	b, err := readOptionalBody(rq)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return nil, fieldError("request body", "a JSON object is required")
	}
	return b, nil
}

// readOptionalBody reads the whole request body within the configured
// limit, trimmed of surrounding white space; empty means none was sent.
func readOptionalBody(rq *request) ([]byte, error) {
	b, err := io.ReadAll(rq.r.Body)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, &StatusError{Status: http.StatusRequestEntityTooLarge, Code: CodePayloadTooLarge,
			Message: fmt.Sprintf("request body: larger than %d bytes", tooBig.Limit)}
	case err != nil:
		return nil, fieldError("request body", "could not be read")
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return b, nil
	}
	if err := checkContentType(rq.r.Header.Get("Content-Type")); err != nil {
		return nil, err
	}
	if !utf8.Valid(b) {
		// encoding/json would turn each bad byte into U+FFFD in silence,
		// storing something other than what was sent.
		return nil, fieldError("request body", "is not valid UTF-8")
	}
	return b, nil
}

// checkContentType accepts a body labelled as JSON (application/json or a
// +json type, in UTF-8 if a charset is named) or not labelled at all, as
// simple clients send it; any other label is a 415 naming Content-Type.
func checkContentType(v string) error {
	if v == "" {
		return nil
	}
	mt, params, err := mime.ParseMediaType(v)
	if err == nil && (mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))) {
		if cs, ok := params["charset"]; !ok || strings.EqualFold(cs, "utf-8") {
			return nil
		}
	}
	return &StatusError{Status: http.StatusUnsupportedMediaType, Code: CodeUnsupportedMediaType, Field: "Content-Type",
		Message: "Content-Type: a request body must be application/json (UTF-8)"}
}

// refuseBody answers 400 when a route that takes no body was sent one: a
// body there is a client mistake (a field meant for another route) that
// would otherwise be ignored in silence. White space alone is no body.
func refuseBody(rq *request) error {
	b, err := readOptionalBody(rq)
	if err != nil {
		return err
	}
	if len(b) > 0 {
		return fieldError("request body", "this endpoint takes no body")
	}
	return nil
}

// decodeBody decodes the request body strictly into dst.
func decodeBody(rq *request, dst any) error {
	b, err := readBody(rq)
	if err != nil {
		return err
	}
	return decodeStrict(b, dst, "")
}

// decodePatch decodes a PATCH body strictly into dst, a struct of pointer
// members (absent: keep) and json.RawMessage merge patches (where null
// clears). A null pointer member would decode as absent and answer 200
// having changed nothing, so it is refused naming the member.
func decodePatch(rq *request, dst any) error {
	b, err := readBody(rq)
	if err != nil {
		return err
	}
	if err := decodeStrict(b, dst, ""); err != nil {
		return err
	}
	members, err := rawObject(b, "request body")
	if err != nil {
		return err
	}
	fields, _ := structFields(deref(reflect.TypeOf(dst)))
	for name, raw := range members {
		if t, ok := fields[name]; ok && t != rawMessageType && isNull(raw) {
			return fieldError(name, "must not be null: omit it to keep the current value")
		}
	}
	return nil
}

var unknownFieldPattern = regexp.MustCompile(`unknown (?:field|object member name) "([^"]*)"`)

// decodeStrict decodes one JSON object into dst: unknown fields, wrong types
// and trailing data are 400s naming the field, prefixed with prefix (e.g.
// "policy." or "items[3].").
func decodeStrict(b []byte, dst any, prefix string) error {
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return fieldError(nameOr(strings.TrimSuffix(prefix, "."), "request body"), "must be a JSON object")
	}
	// encoding/json matches member names case-insensitively and lets a
	// repeated member overwrite the first: checkMembers refuses both before
	// the decode, so what is validated is exactly what was sent.
	if err := checkMembers(trimmed, reflect.TypeOf(dst), prefix); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err, prefix)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fieldError(nameOr(strings.TrimSuffix(prefix, "."), "request body"), "unexpected data after the JSON object")
	}
	return nil
}

func nameOr(name, fallback string) string {
	if name == "" {
		return fallback
	}
	return name
}

// decodeError names the field an encoding/json error is about. The json
// messages themselves are not passed on: they can quote the input.
func decodeError(err error, prefix string) error {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
		se     *StatusError
	)
	switch {
	case errors.As(err, &se):
		return se
	case errors.As(err, &syntax):
		return fieldError(nameOr(strings.TrimSuffix(prefix, "."), "request body"), "is not valid JSON (at byte %d)", syntax.Offset)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return fieldError(nameOr(strings.TrimSuffix(prefix, "."), "request body"), "must be a JSON object")
		}
		return fieldError(prefix+field, "must be %s", jsonKind(typ.Type.Kind().String()))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fieldError(nameOr(strings.TrimSuffix(prefix, "."), "request body"), "is not valid JSON (truncated)")
	}
	if m := unknownFieldPattern.FindStringSubmatch(err.Error()); m != nil {
		return fieldError(prefix+m[1], "unknown field")
	}
	return fieldError(nameOr(strings.TrimSuffix(prefix, "."), "request body"), "is not valid JSON")
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "slice", "array":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	default:
		return "of another type"
	}
}

// rawObject decodes a JSON object into its members, so that a handler can
// tell "absent" from "null" (PATCH) and name unknown members itself.
func rawObject(b []byte, field string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, fieldError(field, "must be a JSON object")
	}
	return m, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }
