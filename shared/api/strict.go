package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Bounds every request member is held to before any handler reads it. The
// handlers check each field more narrowly; these make sure no field, even
// one a handler forgets, can carry a megabyte into a record or a log line.
const (
	// maxStringMember bounds every JSON string in a request body.
	maxStringMember = 4096
	// maxPEMMember bounds the one member that holds certificates.
	maxPEMMember = 64 << 10
	// maxNesting bounds how deep objects and arrays may nest.
	maxNesting = 16
)

// longMembers are the members allowed past maxStringMember.
var longMembers = map[string]int{"ca_bundle_pem": maxPEMMember}

// rawMessageType is json.RawMessage: its content is decoded later by
// decodeStrict with its own target type, so only duplicates and sizes are
// checked here.
var rawMessageType = reflect.TypeFor[json.RawMessage]()

// checkMembers walks one JSON document alongside the Go type it will be
// decoded into (nil: any type) and refuses, naming the member: a member
// repeated in one object, a member whose name matches a field only when
// case is ignored (encoding/json would accept it), a string longer than its
// bound, and nesting deeper than maxNesting. Unknown members and type
// errors are left to the decoder, which names them the same way.
func checkMembers(doc []byte, t reflect.Type, prefix string) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	w := memberWalker{dec: dec}
	err := w.value(t, strings.TrimSuffix(prefix, "."), "", 0)
	if err != nil && !errors.Is(err, errSyntax) {
		return err
	}
	// Syntax errors are the decoder's to report, with their offset.
	return nil
}

var errSyntax = errors.New("json syntax")

type memberWalker struct {
	dec *json.Decoder
}

// value reads one value of type t at path; member is the name of the
// member that holds it ("" for array elements and the document).
func (w memberWalker) value(t reflect.Type, path, member string, depth int) error {
	tok, err := w.dec.Token()
	if err != nil {
		return errSyntax
	}
	t = deref(t)
	switch v := tok.(type) {
	case json.Delim:
		if depth >= maxNesting {
			return fieldError(nameOr(path, "request body"), "nests objects and arrays deeper than %d levels", maxNesting)
		}
		if v == '{' {
			return w.object(t, path, depth+1)
		}
		var elem reflect.Type
		if t != nil && t != rawMessageType && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; w.dec.More(); i++ {
			if err := w.value(elem, indexPath(path, i), "", depth+1); err != nil {
				return err
			}
		}
		if _, err := w.dec.Token(); err != nil {
			return errSyntax
		}
	case string:
		limit := maxStringMember
		if l, ok := longMembers[member]; ok {
			limit = l
		}
		if len(v) > limit || utf8.RuneCountInString(v) > limit {
			return fieldError(nameOr(path, "request body"), "must be at most %d characters", limit)
		}
	}
	return nil
}

func (w memberWalker) object(t reflect.Type, path string, depth int) error {
	var fields map[string]reflect.Type
	var folded map[string]string
	var elem reflect.Type
	if t != nil && t != rawMessageType {
		switch t.Kind() {
		case reflect.Struct:
			fields, folded = structFields(t)
		case reflect.Map:
			elem = t.Elem()
		}
	}
	seen := map[string]bool{}
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return errSyntax
		}
		name, ok := tok.(string)
		if !ok {
			return errSyntax
		}
		field := joinPath(path, name)
		if name == "" {
			return fieldError(nameOr(path, "request body"), "has a member with an empty name")
		}
		if len(name) > 128 {
			// The name would be echoed in the error: do not quote it.
			return fieldError(nameOr(path, "request body"), "has a member name longer than 128 characters")
		}
		if seen[name] {
			return fieldError(field, "is given more than once")
		}
		seen[name] = true
		vt := elem
		if fields != nil {
			ft, exact := fields[name]
			if !exact {
				if want, ok := folded[strings.ToLower(name)]; ok {
					return fieldError(field, "unknown field (member names are case-sensitive: did you mean %q?)", want)
				}
				// Unknown: the decoder refuses it with the same name.
			}
			vt = ft
		}
		if err := w.value(vt, field, name, depth); err != nil {
			return err
		}
	}
	if _, err := w.dec.Token(); err != nil {
		return errSyntax
	}
	return nil
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func indexPath(path string, i int) string {
	return nameOr(path, "request body") + "[" + strconv.Itoa(i) + "]"
}

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

type fieldSet struct {
	exact  map[string]reflect.Type
	folded map[string]string
}

var fieldCache sync.Map // reflect.Type → fieldSet

// structFields lists the JSON member names of struct t (embedded structs
// without a tag flattened, as encoding/json does), and the same names
// lower-cased for the hint.
func structFields(t reflect.Type) (map[string]reflect.Type, map[string]string) {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.(fieldSet).exact, fs.(fieldSet).folded
	}
	fs := fieldSet{exact: map[string]reflect.Type{}, folded: map[string]string{}}
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		for f := range t.Fields() {
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" && deref(f.Type).Kind() == reflect.Struct {
				add(deref(f.Type))
				continue
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			fs.exact[name] = f.Type
			fs.folded[strings.ToLower(name)] = name
		}
	}
	add(t)
	fieldCache.Store(t, fs)
	return fs.exact, fs.folded
}
