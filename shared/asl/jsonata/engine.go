package jsonata

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dop251/goja"
)

// reference is jsonata-js 2.0.6, the implementation Step Functions runs,
// as the npm package jsonata@2.0.6 ships it (jsonata.js, MIT licence in
// jsonata-2.0.6.LICENSE). To update it: `npm pack jsonata@X`, copy
// package/jsonata.js over this file and run this package's tests.
//
//go:embed jsonata-2.0.6.js
var reference string

// desync makes the reference's evaluator synchronous. jsonata 2.x declares
// its evaluator async so that user-supplied functions may return promises;
// nothing here does (the functions it may call are its own and Step
// Functions', all synchronous), so every await is on a plain value and
// removing async/await changes no result, only the cost: a JavaScript
// interpreter runs the synchronous form several times faster, and its
// result needs no promise job queue. The rewrite is checked: the source
// must hold exactly the forms below, so an updated reference that uses
// async otherwise fails loudly instead of half-converted.
func desync(src string) (string, error) {
	const parallel = "await Promise.all("
	if n := strings.Count(src, parallel); n != 2 {
		return "", fmt.Errorf("expected 2 %q in the JSONata source, found %d", parallel, n)
	}
	src = strings.ReplaceAll(src, parallel, "(")
	src = asyncFunction.ReplaceAllString(src, "function")
	src = asyncArrow.ReplaceAllString(src, "(")
	src = await.ReplaceAllString(src, "")
	// What is left is the frame's `async` property, a plain field.
	const field = "async: enclosingEnvironment ? enclosingEnvironment.async : false"
	if rest := leftover.FindAllString(strings.Replace(src, field, "", 1), -1); len(rest) != 0 {
		return "", fmt.Errorf("the JSONata source holds async forms the rewrite does not know: %q", rest)
	}
	return src, nil
}

var (
	asyncFunction = regexp.MustCompile(`\basync function\b`)
	asyncArrow    = regexp.MustCompile(`\basync \(`)
	await         = regexp.MustCompile(`\bawait `)
	leftover      = regexp.MustCompile(`\b(?:async|await)\b`)
)

// glue names the reference's entry points for Go: __compile parses (and
// throws jsonata's S0xxx errors), __ast gives the parse tree as JSON (the
// fast path reads it), __eval evaluates with the given bindings.
const glue = `
var __jsonata = module.exports;
function __compile(src) { return __jsonata(src); }
function __ast(x) { return JSON.stringify(x.ast()); }
function __eval(x, input, bindings) { return x.evaluate(input, bindings); }
`

var (
	programOnce sync.Once
	program     *goja.Program
	errProgram  error
)

func compiledReference() (*goja.Program, error) {
	programOnce.Do(func() {
		src, err := desync(reference)
		if err != nil {
			errProgram = err
			return
		}
		program, errProgram = goja.Compile("jsonata.js", "var module = {exports: {}}; var exports = module.exports;\n"+src+glue, true)
	})
	return program, errProgram
}

// maxCallStack bounds the interpreter's stack, so a runaway recursive
// expression fails its evaluation instead of growing without end.
const maxCallStack = 20000

// evalLimit stops an evaluation that does not end (jsonata optimizes tail
// calls, so a recursive function can loop without growing the stack).
var evalLimit = 10 * time.Second

var errTooLong = errors.New("evaluation time limit")

// maxCached bounds the compiled expressions one interpreter keeps; past it
// the cache starts again (a state machine holds far fewer).
const maxCached = 4096

// vm is one JavaScript interpreter holding the reference. An interpreter
// is not safe for concurrent use: an evaluation borrows one from the pool.
type vm struct {
	rt      *goja.Runtime
	compile goja.Callable
	ast     goja.Callable
	eval    goja.Callable
	exprs   map[string]goja.Value
	fns     map[string]goja.Value // Step Functions' functions
	entropy io.Reader             // the current evaluation's
}

// pool keeps up to GOMAXPROCS idle interpreters; a burst beyond that makes
// more and lets the extra ones go.
var pool = make(chan *vm, runtime.GOMAXPROCS(0))

func borrow() (*vm, error) {
	select {
	case m := <-pool:
		return m, nil
	default:
		return newVM()
	}
}

func giveBack(m *vm) {
	select {
	case pool <- m:
	default:
	}
}

func newVM() (*vm, error) {
	prog, err := compiledReference()
	if err != nil {
		return nil, err
	}
	rt := goja.New()
	rt.SetMaxCallStackSize(maxCallStack)
	if _, err := rt.RunProgram(prog); err != nil {
		return nil, fmt.Errorf("loading the JSONata implementation: %w", err)
	}
	m := &vm{rt: rt, exprs: map[string]goja.Value{}}
	for name, dst := range map[string]*goja.Callable{"__compile": &m.compile, "__ast": &m.ast, "__eval": &m.eval} {
		f, ok := goja.AssertFunction(rt.Get(name))
		if !ok {
			return nil, fmt.Errorf("the JSONata implementation lacks %s", name)
		}
		*dst = f
	}
	m.fns = stepFunctionsFunctions(m)
	return m, nil
}

// compiled returns the interpreter's compiled form of src, compiling it
// the first time.
func (m *vm) compiled(src string) (goja.Value, error) {
	if x, ok := m.exprs[src]; ok {
		return x, nil
	}
	x, err := m.compile(goja.Undefined(), m.rt.ToValue(src))
	if err != nil {
		return nil, jsError(err)
	}
	if len(m.exprs) >= maxCached {
		clear(m.exprs)
	}
	m.exprs[src] = x
	return x, nil
}

// forget drops the compiled form of src.
func (m *vm) forget(src string) { delete(m.exprs, src) }

// evaluate runs src with the given variables bound and input as the
// context (`$`; Step Functions gives none: noInput); undefined comes back
// as ErrUndefined.
func (m *vm) evaluate(src string, names []string, env Env, input any) (any, error) {
	x, err := m.compiled(src)
	if err != nil {
		return nil, err
	}
	b := m.rt.NewObject()
	for _, name := range names {
		if f, ok := m.fns[name]; ok {
			_ = b.Set(name, f)
			continue
		}
		if env.Vars == nil {
			continue
		}
		if v, ok := env.Vars.Var(name); ok {
			_ = b.Set(name, toJS(m.rt, v))
		}
	}
	m.entropy = env.Entropy
	defer func() { m.entropy = nil }()
	in := goja.Undefined()
	switch t := input.(type) {
	case noInputType:
	case rawJSON:
		parse, _ := goja.AssertFunction(m.rt.Get("JSON").ToObject(m.rt).Get("parse"))
		if in, err = parse(goja.Undefined(), m.rt.ToValue(string(t))); err != nil {
			return nil, err
		}
	default:
		in = toJS(m.rt, input)
	}
	fired := make(chan struct{})
	timer := time.AfterFunc(evalLimit, func() {
		m.rt.Interrupt(errTooLong)
		close(fired)
	})
	v, err := m.eval(goja.Undefined(), x, in, b)
	if !timer.Stop() {
		<-fired // the interrupt is set: clear it only once it is
	}
	m.rt.ClearInterrupt()
	if err != nil {
		var stopped *goja.InterruptedError
		if errors.As(err, &stopped) {
			return nil, fmt.Errorf("the evaluation did not finish within %s", evalLimit)
		}
		return nil, jsError(err)
	}
	return fromJS(v)
}

// noInput is the context Step Functions gives an expression: none, so `$`
// is undefined.
type noInputType struct{}

var noInput any = noInputType{}

// rawJSON is an input given as JSON text, parsed by the interpreter so
// that its keys keep their order (jsonata's test suite relies on it).
type rawJSON string

// Error is a failure jsonata itself reports, with its code ("T0410") and
// message, worded as jsonata-js words it.
type Error struct {
	Code     string
	Message  string
	Position int // in the expression, when jsonata gives one
}

func (e *Error) Error() string {
	if e.Code == "" {
		return e.Message
	}
	return e.Code + ": " + e.Message
}

// jsError converts what the interpreter threw.
func jsError(err error) error {
	var ex *goja.Exception
	if !errors.As(err, &ex) {
		var stack *goja.StackOverflowError
		if errors.As(err, &stack) {
			return &Error{Code: "U1001", Message: "Stack overflow error: Check for non-terminating recursive function.  Consider rewriting as tail-recursive."}
		}
		return err
	}
	obj, ok := ex.Value().(*goja.Object)
	if !ok {
		return &Error{Message: ex.Value().String()}
	}
	out := &Error{}
	if c := obj.Get("code"); c != nil && !goja.IsUndefined(c) {
		out.Code = c.String()
	}
	if msg := obj.Get("message"); msg != nil && !goja.IsUndefined(msg) {
		out.Message = msg.String()
	}
	if p := obj.Get("position"); p != nil && !goja.IsUndefined(p) {
		out.Position = int(p.ToInteger())
	}
	if out.Message == "" {
		out.Message = ex.Value().String()
	}
	return out
}

// toJS builds the interpreter's value of a JSON model value: plain arrays
// and objects (keys in sorted order, so results that list keys are
// reproducible), numbers as numbers.
func toJS(rt *goja.Runtime, v any) goja.Value {
	switch t := v.(type) {
	case nil:
		return goja.Null()
	case map[string]any:
		o := rt.NewObject()
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			_ = o.Set(k, toJS(rt, t[k]))
		}
		return o
	case []any:
		items := make([]any, len(t))
		for i, e := range t {
			items[i] = toJS(rt, e)
		}
		return rt.NewArray(items...)
	case int64:
		if t > 1<<53 || t < -(1<<53) {
			return rt.ToValue(float64(t))
		}
		return rt.ToValue(t)
	case bool, string, float64:
		return rt.ToValue(v)
	}
	// Anything else (another integer type, a typed slice or map) goes
	// through the JSON model first, so the interpreter never sees a Go
	// value it would wrap as a host object.
	m, err := normalize(reflect.ValueOf(v))
	if err != nil {
		return goja.Undefined()
	}
	return toJS(rt, m)
}

// fromJS converts a result to the JSON model: whole numbers as int64;
// undefined is ErrUndefined, a function or a non-finite number
// ErrUnsupportedResult.
func fromJS(v goja.Value) (any, error) {
	if v == nil || goja.IsUndefined(v) {
		return nil, ErrUndefined
	}
	return fromJSValue(v)
}

func fromJSValue(v goja.Value) (any, error) {
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return nil, nil //nolint:nilnil // nil is JSON null, a value
	}
	switch e := v.Export().(type) {
	case bool, string:
		return e, nil
	case int64:
		return e, nil
	case float64:
		if math.IsInf(e, 0) || math.IsNaN(e) {
			return nil, ErrUnsupportedResult
		}
		if e == math.Trunc(e) && math.Abs(e) <= 1<<53 {
			return int64(e), nil
		}
		return e, nil
	}
	obj, ok := v.(*goja.Object)
	if !ok {
		return nil, ErrUnsupportedResult
	}
	if _, isFn := goja.AssertFunction(obj); isFn {
		return nil, ErrUnsupportedResult
	}
	if obj.ClassName() == "Array" {
		n := int(obj.Get("length").ToInteger())
		out := make([]any, n)
		for i := range n {
			item := obj.Get(fmt.Sprint(i))
			if item == nil || goja.IsUndefined(item) {
				// JSON.stringify writes an undefined array item as null.
				continue
			}
			x, err := fromJSValue(item)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	}
	keys := obj.Keys()
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		item := obj.Get(k)
		if item == nil || goja.IsUndefined(item) {
			continue // JSON has no undefined: the key is left out
		}
		x, err := fromJSValue(item)
		if err != nil {
			return nil, err
		}
		out[k] = x
	}
	return out, nil
}
