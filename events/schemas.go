// Package schemas holds the JSON Schema (draft 2020-12) of every event detail
// maasflow puts on its bus, one file per detail type named
// <detail-type>.schema.json, and validates details against them. The files
// are the contract consumers code against (asyncapi.yaml describes the bus);
// every publisher validates before it sends, so an event that does not match
// its schema is never emitted.
//
// Each schema sets additionalProperties to false: a field that is not in the
// schema, a token for instance, cannot ride along by mistake.
//
// It imports nothing of maasflow.
package schemas

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

//go:embed *.json
var files embed.FS

const suffix = ".schema.json"

// UnknownDetailTypeError is returned for a detail type without a schema.
type UnknownDetailTypeError struct {
	DetailType string `json:"detail_type"`
}

func (e *UnknownDetailTypeError) Error() string {
	return fmt.Sprintf("event detail type %q has no schema", e.DetailType)
}

// DetailSchemaError is a detail that does not match its schema. Problems name
// JSON locations, keywords and property names, never values, so the error is
// safe to log even when a caller put a secret in the wrong field.
type DetailSchemaError struct {
	DetailType string   `json:"detail_type"`
	Problems   []string `json:"problems"`
}

func (e *DetailSchemaError) Error() string {
	return fmt.Sprintf("event %s detail does not match its schema: %s", e.DetailType, strings.Join(e.Problems, "; "))
}

// compiled holds every schema, compiled once per process on first use. It
// is immutable afterwards, so concurrent validation needs no lock.
var compiled = sync.OnceValues(compileAll)

func compileAll() (map[string]*jsonschema.Schema, error) {
	names, err := fs.Glob(files, "*"+suffix)
	if err != nil {
		return nil, fmt.Errorf("list event schemas: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	// format is only an annotation in 2020-12 unless asserted; occurred_at
	// must really be RFC 3339.
	c.AssertFormat()
	for _, name := range names {
		raw, err := files.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read event schema %s: %w", name, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("parse event schema %s: %w", name, err)
		}
		if err := c.AddResource(name, doc); err != nil {
			return nil, fmt.Errorf("add event schema %s: %w", name, err)
		}
	}
	out := make(map[string]*jsonschema.Schema, len(names))
	for _, name := range names {
		s, err := c.Compile(name)
		if err != nil {
			return nil, fmt.Errorf("compile event schema %s: %w", name, err)
		}
		out[strings.TrimSuffix(name, suffix)] = s
	}
	return out, nil
}

// DetailTypes lists the detail types that have a schema, sorted.
func DetailTypes() []string {
	names, err := fs.Glob(files, "*"+suffix)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, strings.TrimSuffix(n, suffix))
	}
	sort.Strings(out)
	return out
}

// Schema returns the raw schema document of a detail type.
func Schema(detailType string) ([]byte, error) {
	raw, err := files.ReadFile(detailType + suffix)
	if err != nil {
		return nil, &UnknownDetailTypeError{DetailType: detailType}
	}
	return raw, nil
}

// Validate checks one event detail (its JSON) against the schema of its
// detail type. It returns *UnknownDetailTypeError when the type has no
// schema and *DetailSchemaError when the detail is not JSON or does not
// match. It is safe for concurrent use.
func Validate(detailType string, detail []byte) error {
	all, err := compiled()
	if err != nil {
		return err
	}
	s, ok := all[detailType]
	if !ok {
		return &UnknownDetailTypeError{DetailType: detailType}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(detail))
	if err != nil {
		return &DetailSchemaError{DetailType: detailType, Problems: []string{"detail is not a single JSON value"}}
	}
	err = s.Validate(doc)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &DetailSchemaError{DetailType: detailType, Problems: []string{"validation failed"}}
	}
	var problems []string
	collect(ve, &problems)
	sort.Strings(problems)
	return &DetailSchemaError{DetailType: detailType, Problems: problems}
}

// collect turns the leaves of a validation error tree into value-free
// problem lines such as "/attempt: minimum" or "/: unexpected properties
// token".
func collect(ve *jsonschema.ValidationError, out *[]string) {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			collect(c, out)
		}
		return
	}
	at := "/" + strings.Join(ve.InstanceLocation, "/")
	var what string
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		what = "missing properties " + strings.Join(k.Missing, ", ")
	case *kind.AdditionalProperties:
		what = "unexpected properties " + strings.Join(k.Properties, ", ")
	case *kind.Type:
		what = fmt.Sprintf("got %s, want %s", k.Got, strings.Join(k.Want, " or "))
	case *kind.Format:
		what = "not a valid " + k.Want
	default:
		what = strings.Join(ve.ErrorKind.KeywordPath(), "/")
		if what == "" {
			what = "invalid"
		}
	}
	*out = append(*out, at+": "+what)
}
