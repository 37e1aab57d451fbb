package asl

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/maasflow/maasflow/shared/asl/intrinsic"
)

// template is a compiled payload template (Parameters, ItemSelector,
// ResultSelector): a key ending in ".$" takes a path, a context path or an
// intrinsic function call; every other value is a literal. A template with
// nothing dynamic in it is kept as its literal value and costs nothing to
// evaluate.
type template struct {
	static  bool
	literal any // when static
	fields  []templateField
	items   []*template // when the template is an array with dynamic members
	isArray bool
}

type templateField struct {
	key  string // output key (without ".$")
	sub  *template
	path *path
	call *intrinsic.Call
	src  string // the original key, for messages
	expr string // the original path or call text
}

// compileTemplate compiles a JSON value used as a payload template,
// reporting problems under field.
func compileTemplate(v any, field string, problems *[]string) *template {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		tp := &template{static: true}
		for _, k := range keys {
			val := t[k]
			if strings.HasSuffix(k, ".$") {
				tp.static = false
				f := templateField{key: strings.TrimSuffix(k, ".$"), src: k}
				s, ok := val.(string)
				if !ok {
					*problems = append(*problems, fmt.Sprintf("%s: the value of %q must be a JSONPath or an intrinsic function call string", field, k))
					continue
				}
				f.expr = s
				if intrinsic.IsCall(s) {
					call, err := intrinsic.Parse(s)
					if err != nil {
						*problems = append(*problems, fmt.Sprintf("%s: %q: %v", field, k, err))
						continue
					}
					for _, ps := range call.Paths() {
						if _, err := parsePath(ps); err != nil {
							*problems = append(*problems, fmt.Sprintf("%s: %q: %v", field, k, err))
						}
					}
					f.call = call
				} else {
					p, err := parsePath(s)
					if err != nil {
						*problems = append(*problems, fmt.Sprintf("%s: %q: %v", field, k, err))
						continue
					}
					f.path = p
				}
				tp.fields = append(tp.fields, f)
				continue
			}
			sub := compileTemplate(val, field+"."+k, problems)
			if !sub.static {
				tp.static = false
			}
			tp.fields = append(tp.fields, templateField{key: k, sub: sub, src: k})
		}
		if tp.static {
			return &template{static: true, literal: v}
		}
		return tp
	case []any:
		tp := &template{static: true, isArray: true}
		for i, e := range t {
			sub := compileTemplate(e, fmt.Sprintf("%s[%d]", field, i), problems)
			if !sub.static {
				tp.static = false
			}
			tp.items = append(tp.items, sub)
		}
		if tp.static {
			return &template{static: true, literal: v}
		}
		return tp
	default:
		return &template{static: true, literal: v}
	}
}

// evalError is a failure while evaluating a template or path; it carries the
// ASL error name.
type evalError struct{ f *failure }

func (e *evalError) Error() string { return e.f.Error + ": " + e.f.Cause }

// eval builds the payload from input and the context object.
func (t *template) eval(input any, ctx scope, entropy io.Reader) (any, *failure) {
	if t.static {
		return t.literal, nil
	}
	if t.isArray {
		out := make([]any, len(t.items))
		for i, it := range t.items {
			v, f := it.eval(input, ctx, entropy)
			if f != nil {
				return nil, f
			}
			out[i] = v
		}
		return out, nil
	}
	out := make(map[string]any, len(t.fields))
	for i := range t.fields {
		fd := &t.fields[i]
		switch {
		case fd.sub != nil:
			v, f := fd.sub.eval(input, ctx, entropy)
			if f != nil {
				return nil, f
			}
			out[fd.key] = v
		case fd.path != nil:
			v, ok := fd.path.get(input, ctx)
			if !ok {
				src := input
				if fd.path.context {
					src = ctx.context()
				}
				return nil, runtimeFailure(fmt.Sprintf("The JSONPath '%s' specified for the field '%s' could not be found in the input '%s'", fd.expr, fd.src, toJSON(src)))
			}
			out[fd.key] = v
		case fd.call != nil:
			v, err := fd.call.EvalWith(func(ps string) (any, error) {
				p, err := parsePath(ps)
				if err != nil {
					return nil, &evalError{runtimeFailure(err.Error())}
				}
				v, ok := p.get(input, ctx)
				if !ok {
					src := input
					if p.context {
						src = ctx.context()
					}
					return nil, &evalError{runtimeFailure(fmt.Sprintf("The JSONPath '%s' specified for the field '%s' could not be found in the input '%s'", ps, fd.src, toJSON(src)))}
				}
				return v, nil
			}, entropy)
			if err != nil {
				var ee *evalError
				if errors.As(err, &ee) {
					return nil, ee.f
				}
				return nil, &failure{Error: ErrIntrinsicFailure, Cause: err.Error(), HasCause: true}
			}
			out[fd.key] = v
		}
	}
	return out, nil
}
