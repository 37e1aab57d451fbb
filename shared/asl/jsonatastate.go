package asl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/maasflow/maasflow/shared/asl/jsonata"
)

// jvalue is the value of a field of a JSONata state: JSON in which every
// string written "{% … %}" is a JSONata expression, at any depth.
type jvalue struct {
	field string // where it sits, as AWS names it: "Output", "Arguments/Input/x", "Items[2]"
	lit   any    // the value itself when nothing in it is an expression
	expr  *jsonata.Expr
	keys  []string // an object holding expressions: its keys and values
	vals  []*jvalue
	arr   []*jvalue // an array holding expressions
	kind  jkind
	// context says some expression reads $states.context, which is then
	// built for the evaluation (it costs a few maps).
	context bool
}

type jkind uint8

const (
	jLiteral jkind = iota
	jExpr
	jObject
	jArray
)

// jsonataExpression returns the expression of a "{% … %}" string.
func jsonataExpression(s string) (string, bool) {
	if len(s) >= 4 && strings.HasPrefix(s, "{%") && strings.HasSuffix(s, "%}") {
		return strings.TrimSpace(s[2 : len(s)-2]), true
	}
	return "", false
}

// compileJValue compiles a field value; problems are "field: message".
func compileJValue(v any, field string, problems *[]string) *jvalue {
	switch t := v.(type) {
	case string:
		src, ok := jsonataExpression(t)
		if !ok {
			return &jvalue{field: field, lit: t}
		}
		x, err := jsonata.Compile(src)
		if err != nil {
			*problems = append(*problems, fmt.Sprintf("%s: the JSONata expression '%s' is invalid: %v", field, src, err))
			return &jvalue{field: field, lit: nil}
		}
		return &jvalue{field: field, kind: jExpr, expr: x, context: strings.Contains(src, "context")}
	case map[string]any:
		j := &jvalue{field: field, kind: jObject}
		dynamic := false
		for _, k := range sortedKeys(t) {
			e := compileJValue(t[k], field+"/"+k, problems)
			j.keys = append(j.keys, k)
			j.vals = append(j.vals, e)
			dynamic = dynamic || e.kind != jLiteral
			j.context = j.context || e.context
		}
		if !dynamic {
			return &jvalue{field: field, lit: t}
		}
		return j
	case []any:
		j := &jvalue{field: field, kind: jArray}
		dynamic := false
		for i, e := range t {
			c := compileJValue(e, fmt.Sprintf("%s[%d]", field, i), problems)
			j.arr = append(j.arr, c)
			dynamic = dynamic || c.kind != jLiteral
			j.context = j.context || c.context
		}
		if !dynamic {
			return &jvalue{field: field, lit: t}
		}
		return j
	}
	return &jvalue{field: field, lit: v}
}

// jstates is what $states holds for one evaluation.
type jstates struct {
	result, errorOutput       any
	hasResult, hasErrorOutput bool
}

// eval evaluates the value for the state visit r.
func (j *jvalue) eval(r *stateRun, s jstates) (any, *failure) {
	switch j.kind {
	case jLiteral:
		return j.lit, nil
	case jObject:
		out := make(map[string]any, len(j.keys))
		for i, k := range j.keys {
			v, f := j.vals[i].eval(r, s)
			if f != nil {
				return nil, f
			}
			out[k] = v
		}
		return out, nil
	case jArray:
		out := make([]any, len(j.arr))
		for i, e := range j.arr {
			v, f := e.eval(r, s)
			if f != nil {
				return nil, f
			}
			out[i] = v
		}
		return out, nil
	}
	r.jsNow, r.jsContext = s, j.context
	v, err := j.expr.Eval(jsonata.Env{Vars: r, Entropy: r.t.x.e.entropy})
	switch {
	case errors.Is(err, jsonata.ErrUndefined):
		return nil, r.queryFailure(j.field, fmt.Sprintf("The JSONata expression '%s' specified for the field '%s' returned nothing (undefined).", j.expr, j.field))
	case errors.Is(err, jsonata.ErrUnsupportedResult):
		return nil, r.queryFailure(j.field, fmt.Sprintf("The JSONata expression '%s' specified for the field '%s' returned an unsupported result type.", j.expr, j.field))
	case err != nil:
		// AWS follows its sentence with jsonata's own error after ". "
		// ("… threw an error during evaluation. T0410: Argument 1 …"); a
		// failure without a jsonata code follows after ": ".
		sep := ": "
		var je *jsonata.Error
		if errors.As(err, &je) && je.Code != "" {
			sep = ". "
		}
		return nil, r.queryFailure(j.field, fmt.Sprintf("The JSONata expression '%s' specified for the field '%s' threw an error during evaluation%s%v", j.expr, j.field, sep, err))
	}
	return v, nil
}

// unexpectedType fails a field whose value has the wrong JSON type, in
// AWS's recorded words ("… returned an unexpected result type. Expected
// 'array', but was 'string' for value: "string"").
func (r *stateRun) unexpectedType(j *jvalue, expected string, v any) *failure {
	src := ""
	if j.expr != nil {
		src = j.expr.String()
	} else {
		src = toJSON(j.lit)
	}
	return r.queryFailure(j.field, fmt.Sprintf("The JSONata expression '%s' specified for the field '%s' returned an unexpected result type. Expected '%s', but was '%s' for value: %s",
		src, j.field, expected, jsonTypeName(v), toJSON(v)))
}

// jsonTypeName names a value's JSON type as AWS's causes do.
func jsonTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case int64, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

// Var gives a JSONata expression of this visit $states and the workflow
// variables. The $states object is built once per visit and phase (input;
// input and result; input and error output) and kept until the phase
// changes or a retry starts.
func (r *stateRun) Var(name string) (any, bool) {
	if name != "states" {
		return r.variable(name)
	}
	s := r.jsNow
	if r.jsStates == nil || r.jsFor != s.phase() || (r.jsContext && r.jsStates["context"] == nil) {
		st := make(map[string]any, 4)
		st["input"] = r.raw
		if r.jsContext {
			st["context"] = r.context()
		}
		if s.hasResult {
			st["result"] = s.result
		}
		if s.hasErrorOutput {
			st["errorOutput"] = s.errorOutput
		}
		r.jsStates, r.jsFor = st, s.phase()
	}
	return r.jsStates, true
}

// phase tells the $states objects of one visit apart.
func (s jstates) phase() uint8 {
	p := uint8(1)
	if s.hasResult {
		p |= 2
	}
	if s.hasErrorOutput {
		p |= 4
	}
	return p
}

// queryFailure is States.QueryEvaluationError with AWS's prefix naming the
// state and its *StateEntered event. As AWS does, it records an
// EvaluationFailed event naming the state and the field (location; empty
// when the failure is not one field's), which follows the event before the
// state was entered.
func (r *stateRun) queryFailure(location, cause string) *failure {
	f := (&failure{Error: ErrQueryEvaluationError, Cause: cause, HasCause: true}).placed(r.st.name, r.enteredID)
	t := r.t
	if t.cx == nil {
		t.last = r.enteredPrev
	}
	t.record(event{typ: "EvaluationFailed", name: r.st.name, err: f.Error, cause: f.Cause, text: location})
	return f
}

// jsonataState holds what a JSONata state has instead of the JSONPath
// fields.
type jsonataState struct {
	arguments    *jvalue // Task, Parallel
	output       *jvalue
	assign       *jvalue // an object: variable name → value
	items        *jvalue // Map
	itemSelector *jvalue // Map
	condition    *jvalue // a Choice rule's
	seconds      *jvalue // Wait
	timestamp    *jvalue // Wait
	errorValue   *jvalue // Fail
	causeValue   *jvalue // Fail
	// Numbers written as expressions: Task TimeoutSeconds and
	// HeartbeatSeconds, Map MaxConcurrency and ToleratedFailure*.
	timeout, heartbeat                   *jvalue
	maxConcurrency, tolCount, tolPercent *jvalue
}

// jsonataNumberFields are the number fields a JSONata state may write as
// an expression, evaluated when the state runs.
var jsonataNumberFields = []string{"TimeoutSeconds", "HeartbeatSeconds", "MaxConcurrency", "ToleratedFailureCount", "ToleratedFailurePercentage"}

// withoutExpressions returns m without the fields whose values are
// "{% %}" expressions, for the checks of literal values.
func withoutExpressions(m map[string]any, fields []string) map[string]any {
	var out map[string]any
	for _, f := range fields {
		s, isStr := m[f].(string)
		if !isStr {
			continue
		}
		if _, isExpr := jsonataExpression(s); !isExpr {
			continue
		}
		if out == nil {
			out = make(map[string]any, len(m))
			for k, v := range m {
				out[k] = v
			}
		}
		delete(out, f)
	}
	if out == nil {
		return m
	}
	return out
}

// jsonPathOnlyFields are refused in a JSONata state, as Step Functions
// refuses them: Arguments and Output replace them, and "{% %}" replaces
// the …Path variants.
var jsonPathOnlyFields = map[string]string{
	"InputPath": "", "OutputPath": "", "ResultPath": "", "Parameters": "", "ResultSelector": "",
	"ItemsPath": "", "Iterator": "", "Result": "",
	"SecondsPath": "", "TimestampPath": "", "ErrorPath": "", "CausePath": "",
	"TimeoutSecondsPath": "", "HeartbeatSecondsPath": "", "MaxConcurrencyPath": "",
	"ToleratedFailureCountPath": "", "ToleratedFailurePercentagePath": "",
}

// jsonataOnlyFields are refused in a JSONPath state.
var jsonataOnlyFields = map[string]bool{"Arguments": true, "Output": true, "Items": true}

// jsonataFieldsByType adds the JSONata fields to each state type's.
var jsonataFieldsByType = map[stateType][]string{
	typePass:     {"Output"},
	typeTask:     {"Output", "Arguments"},
	typeChoice:   {"Output"},
	typeWait:     {"Output"},
	typeSucceed:  {"Output"},
	typeParallel: {"Output", "Arguments"},
	typeMap:      {"Output", "Items"},
}

// compileJSONataFields compiles the JSONata fields of a state.
func (c *compiler) compileJSONataFields(st *state, m map[string]any, where string) {
	j := &jsonataState{}
	st.j = j
	field := func(name string) *jvalue {
		v, ok := m[name]
		if !ok {
			return nil
		}
		return c.jvalue(v, where, name)
	}
	j.output = field("Output")
	j.arguments = field("Arguments")
	if v, ok := m["Assign"]; ok {
		j.assign = c.jsonataAssign(v, where, "Assign")
	}
	expr := func(name string) *jvalue {
		if s, isStr := m[name].(string); isStr {
			if _, isExpr := jsonataExpression(s); isExpr {
				return field(name)
			}
		}
		return nil
	}
	j.timeout, j.heartbeat = expr("TimeoutSeconds"), expr("HeartbeatSeconds")
	j.maxConcurrency, j.tolCount, j.tolPercent = expr("MaxConcurrency"), expr("ToleratedFailureCount"), expr("ToleratedFailurePercentage")
	switch st.typ {
	case typeMap:
		j.items = field("Items")
		if j.items != nil && j.items.kind == jLiteral {
			if _, isArr := j.items.lit.([]any); !isArr {
				c.add(where, "Items", "must be a JSON array or a JSONata expression")
			}
		}
		j.itemSelector = field("ItemSelector")
	case typeWait:
		j.seconds = field("Seconds")
		j.timestamp = field("Timestamp")
	case typeFail:
		j.errorValue = field("Error")
		j.causeValue = field("Cause")
	}
}

// jsonataAssign compiles a JSONata Assign: plain variable names (no ".$").
func (c *compiler) jsonataAssign(v any, where, field string) *jvalue {
	obj, ok := v.(map[string]any)
	if !ok {
		c.add(where, field, "must be an object")
		return nil
	}
	for _, k := range sortedKeys(obj) {
		if !validVariableName(k) {
			c.add(where, field, "%q is not a valid variable name (a letter or '_' first, then letters, digits or '_'; not \"states\"; no \".$\" in a JSONata state)", k)
		}
	}
	return c.jvalue(obj, where, field)
}

// jsonataRule compiles one rule of a JSONata Choice state: a Condition
// with Next, and optionally Assign and Output.
func (c *compiler) jsonataRule(rm map[string]any, where, field string) *choiceRule {
	r := &choiceRule{j: &jsonataState{}}
	for _, k := range sortedKeys(rm) {
		switch k {
		case "Condition", "Next", "Assign", "Output", "Comment":
		default:
			c.add(where, field+"."+k, "is not a field of a JSONata Choice rule (Condition, Next, Assign, Output, Comment)")
		}
	}
	if cond, has := rm["Condition"]; !has {
		c.add(where, field+".Condition", "is required in a JSONata Choice rule")
	} else {
		r.j.condition = c.jvalue(cond, where, field+"/Condition")
		if r.j.condition.kind == jLiteral {
			if _, isBool := r.j.condition.lit.(bool); !isBool {
				c.add(where, field+".Condition", "must be a boolean or a JSONata expression")
			}
		}
	}
	next, _ := rm["Next"].(string)
	if next == "" {
		c.add(where, field+".Next", "is required and must be a state name")
	}
	r.next = next
	if v, ok := rm["Assign"]; ok {
		r.j.assign = c.jsonataAssign(v, where, field+"/Assign")
	}
	if v, ok := rm["Output"]; ok {
		r.j.output = c.jvalue(v, where, field+"/Output")
	}
	return r
}

// jsonataExpr compiles m[key] when it is a "{% %}" expression (nil
// otherwise), naming it field/key.
func (c *compiler) jsonataExpr(m map[string]any, where, field, key string) *jvalue {
	s, isStr := m[key].(string)
	if !isStr {
		return nil
	}
	if _, isExpr := jsonataExpression(s); !isExpr {
		return nil
	}
	return c.jvalue(s, where, field+"/"+key)
}

// jvalue compiles a JSONata field value, reporting its problems.
func (c *compiler) jvalue(v any, where, field string) *jvalue {
	var probs []string
	jv := compileJValue(v, field, &probs)
	c.addAll(where, probs)
	return jv
}

// addAll reports problems written "field: message".
func (c *compiler) addAll(where string, probs []string) {
	for _, p := range probs {
		f, msg, _ := strings.Cut(p, ": ")
		c.add(where, f, "%s", msg)
	}
}
