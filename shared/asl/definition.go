package asl

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/maasflow/maasflow/shared/asl/intrinsic"
)

// StateMachine is a parsed, validated definition, ready to be registered
// with an Engine.
type StateMachine struct {
	root       *machine
	definition string // after substitutions
}

// Definition returns the definition text after substitutions.
func (sm *StateMachine) Definition() string { return sm.definition }

// StateNames returns the top-level state names in definition order.
func (sm *StateMachine) StateNames() []string { return append([]string(nil), sm.root.order...) }

type stateType uint8

const (
	typePass stateType = iota + 1
	typeTask
	typeChoice
	typeWait
	typeSucceed
	typeFail
	typeParallel
	typeMap
)

var stateTypes = map[string]stateType{
	"Pass": typePass, "Task": typeTask, "Choice": typeChoice, "Wait": typeWait,
	"Succeed": typeSucceed, "Fail": typeFail, "Parallel": typeParallel, "Map": typeMap,
}

// machine is a compiled state machine: the top level, a Parallel branch or
// a Map item processor.
type machine struct {
	startAt string
	states  map[string]*state
	order   []string
	timeout int64 // execution TimeoutSeconds; top level only
}

type state struct {
	name     string
	typ      stateType
	typeName string
	// The history event types of a visit, named once rather than at
	// every transition.
	enteredType, exitedType, abortedType string
	next                                 string
	end                                  bool

	inputPath, outputPath *path
	inputNull, outputNull bool
	resultPath            *path
	resultNull            bool
	parameters            *template
	resultSelector        *template
	assign                *template // Assign; nil when absent
	// j holds the fields of a JSONata state (nil for a JSONPath state),
	// which replace the paths, Parameters, ResultSelector and Assign above.
	j *jsonataState

	// Pass
	result    any
	hasResult bool

	// Task
	resource         string
	taskRes          *taskResource // classified once: every attempt's events share it
	timeoutSeconds   int64
	timeoutPath      *path
	heartbeatSeconds int64
	heartbeatPath    *path

	// Choice
	choices     []*choiceRule
	defaultNext string

	// Wait
	waitSeconds   int64
	hasSeconds    bool
	secondsPath   *path
	timestamp     time.Time
	hasTimestamp  bool
	timestampPath *path

	// Fail
	errorName, cause     string
	hasError, hasCause   bool
	errorExpr, causeExpr *dynamicValue

	// Parallel
	branches []*machine

	// Map
	processor            *machine
	itemsPath            *path
	itemSelector         *template
	maxConcurrency       int64
	maxConcurrencyPath   *path
	toleratedCount       int64
	toleratedCountPath   *path
	toleratedPercent     float64
	toleratedPercentPath *path
	dist                 *distributedMap // nil for an inline Map

	retry []*retrier
	catch []*catcher
}

type retrier struct {
	errorEquals []string
	interval    float64
	maxAttempts int64
	backoff     float64
	maxDelay    float64
	jitterFull  bool
}

type catcher struct {
	errorEquals []string
	next        string
	resultPath  *path
	resultNull  bool
	assign      *template     // Assign; nil when absent
	j           *jsonataState // Assign and Output in a JSONata state
}

// dynamicValue is a path or an intrinsic call (Fail's ErrorPath/CausePath).
type dynamicValue struct {
	text string
	path *path
	call *intrinsic.Call
}

// Parse loads and validates a definition, applying CloudFormation-style
// ${Name} substitutions to the text first (as DefinitionSubstitutions does:
// a plain text replacement; a ${Name} without a substitution is left as
// is). An invalid definition returns *DefinitionError listing every problem
// with its state and field.
func Parse(definition []byte, substitutions map[string]string) (*StateMachine, error) {
	text := substitute(string(definition), substitutions)
	raw, err := parseJSON([]byte(text))
	if err != nil {
		return nil, &DefinitionError{Problems: []Problem{{Message: "the definition is not valid JSON: " + err.Error()}}}
	}
	top, ok := raw.(map[string]any)
	if !ok {
		return nil, &DefinitionError{Problems: []Problem{{Message: "the definition must be a JSON object"}}}
	}
	c := &compiler{}
	root := c.machine(top, "", true)
	c.checkVariableRefs(top)
	if len(c.problems) > 0 {
		return nil, &DefinitionError{Problems: c.problems}
	}
	return &StateMachine{root: root, definition: text}, nil
}

func substitute(text string, subs map[string]string) string {
	if len(subs) == 0 || !strings.Contains(text, "${") {
		return text
	}
	var b strings.Builder
	for {
		i := strings.Index(text, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(text[i:], '}')
		if j < 0 {
			break
		}
		name := text[i+2 : i+j]
		b.WriteString(text[:i])
		if v, ok := subs[name]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(text[i : i+j+1])
		}
		text = text[i+j+1:]
	}
	b.WriteString(text)
	return b.String()
}

type compiler struct {
	problems []Problem
	// where maps every state name seen so far to the scope that declared
	// it: names are unique across the whole machine, branches included.
	where map[string]string
	// jsonata is the top level's QueryLanguage: every state without its
	// own inherits it, those inside Parallel branches and Map processors too.
	jsonata bool
}

// unique refuses a state name declared earlier anywhere in the machine, as
// Step Functions and asl-validator do: a name must identify one state even
// across Parallel branches and Map processors, or histories, Catch targets
// and redrives could not tell them apart.
func (c *compiler) unique(name, scope string) {
	if c.where == nil {
		c.where = map[string]string{}
	}
	if other, dup := c.where[name]; dup {
		at := other
		if at == "" {
			at = "the top level"
		}
		c.add(prefixed(scope, name), "", "the state name %q is already used (in %s); state names must be unique across the state machine, branches included", name, at)
		return
	}
	c.where[name] = scope
}

func prefixed(scope, name string) string {
	if scope == "" {
		return name
	}
	return scope + "/" + name
}

func (c *compiler) add(state, field, format string, args ...any) {
	c.problems = append(c.problems, Problem{State: state, Field: field, Message: fmt.Sprintf(format, args...)})
}

var topFields = map[string]bool{"StartAt": true, "States": true, "Comment": true, "Version": true, "TimeoutSeconds": true, "QueryLanguage": true}
var branchFields = map[string]bool{"StartAt": true, "States": true, "Comment": true, "ProcessorConfig": true}

// machine compiles a state machine object. prefix names the enclosing state
// for problems inside branches ("Outer/Branch 0/").
func (c *compiler) machine(m map[string]any, prefix string, top bool) *machine {
	mc := &machine{states: map[string]*state{}}
	scope := strings.TrimSuffix(prefix, "/")
	allowed := topFields
	if !top {
		allowed = branchFields
	}
	for _, k := range sortedKeys(m) {
		if k == "QueryLanguage" && !top {
			continue
		}
		if !allowed[k] {
			c.add(scope, k, "unknown field")
		}
	}
	if top {
		c.queryLanguage(m, "")
		c.jsonata = m["QueryLanguage"] == "JSONata"
		if v, ok := m["TimeoutSeconds"]; ok {
			n, ok := isInteger(v)
			if !ok || n <= 0 || n > 99999999 {
				c.add("", "TimeoutSeconds", "must be a positive integer (at most 99999999)")
			} else {
				mc.timeout = n
			}
		}
		if v, ok := m["Version"]; ok {
			if _, isStr := v.(string); !isStr {
				c.add("", "Version", "must be a string")
			}
		}
	}
	start, ok := m["StartAt"].(string)
	if !ok || start == "" {
		c.add(scope, "StartAt", "is required and must be a state name")
	}
	mc.startAt = start
	states, ok := m["States"].(map[string]any)
	if !ok || len(states) == 0 {
		c.add(scope, "States", "is required and must be a non-empty object")
		return mc
	}
	for _, name := range sortedKeys(states) {
		sm, ok := states[name].(map[string]any)
		if !ok {
			c.add(prefix+name, "", "a state must be a JSON object")
			continue
		}
		if len(name) > 80 {
			c.add(prefix+name, "", "state names must be at most 80 characters")
		}
		c.unique(name, scope)
		st := c.state(name, prefix, sm)
		if st != nil {
			mc.states[name] = st
			mc.order = append(mc.order, name)
		}
	}
	if start != "" {
		if _, ok := states[start]; !ok {
			c.add(scope, "StartAt", "names the missing state %q", start)
		}
	}
	c.checkGraph(mc, prefix, states)
	return mc
}

// checkGraph checks transitions, reachability and that a terminal state exists.
func (c *compiler) checkGraph(mc *machine, prefix string, raw map[string]any) {
	exists := func(n string) bool { _, ok := raw[n]; return ok }
	edges := map[string][]string{}
	terminal := false
	for _, name := range mc.order {
		st := mc.states[name]
		var out []string
		if st.next != "" {
			if !exists(st.next) {
				c.add(prefix+name, "Next", "names the missing state %q", st.next)
			}
			out = append(out, st.next)
		}
		for i, r := range st.choices {
			if r.next != "" {
				if !exists(r.next) {
					c.add(prefix+name, fmt.Sprintf("Choices[%d].Next", i), "names the missing state %q", r.next)
				}
				out = append(out, r.next)
			}
		}
		if st.defaultNext != "" {
			if !exists(st.defaultNext) {
				c.add(prefix+name, "Default", "names the missing state %q", st.defaultNext)
			}
			out = append(out, st.defaultNext)
		}
		for i, ct := range st.catch {
			if ct.next != "" {
				if !exists(ct.next) {
					c.add(prefix+name, fmt.Sprintf("Catch[%d].Next", i), "names the missing state %q", ct.next)
				}
				out = append(out, ct.next)
			}
		}
		if st.end || st.typ == typeSucceed || st.typ == typeFail {
			terminal = true
		}
		edges[name] = out
	}
	if !terminal && len(mc.order) > 0 {
		c.add(strings.TrimSuffix(prefix, "/"), "States", "no terminal state: at least one state needs \"End\": true or must be a Succeed or Fail state")
	}
	if _, ok := raw[mc.startAt]; !ok {
		return
	}
	seen := map[string]bool{mc.startAt: true}
	queue := []string{mc.startAt}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, e := range edges[n] {
			if !seen[e] && exists(e) {
				seen[e] = true
				queue = append(queue, e)
			}
		}
	}
	for _, name := range sortedKeys(raw) {
		if !seen[name] {
			c.add(prefix+name, "", "the state is unreachable from StartAt %q", mc.startAt)
		}
	}
}

func (c *compiler) queryLanguage(m map[string]any, state string) {
	v, ok := m["QueryLanguage"]
	if !ok {
		return
	}
	switch v {
	case "JSONPath":
		// A state machine whose top level is JSONata cannot hold a JSONPath
		// state: only the reverse mix is allowed, as Step Functions says.
		if state != "" && c.jsonata {
			c.add(state, "QueryLanguage", "a state cannot use JSONPath when the state machine's QueryLanguage is JSONata")
		}
	case "JSONata":
	default:
		c.add(state, "QueryLanguage", "must be \"JSONPath\" or \"JSONata\"")
	}
}

var commonFields = map[string]bool{"Type": true, "Comment": true, "QueryLanguage": true}

var fieldsByType = map[stateType][]string{
	typePass:     {"Assign", "Next", "End", "InputPath", "OutputPath", "ResultPath", "Parameters", "Result"},
	typeTask:     {"Assign", "Next", "End", "InputPath", "OutputPath", "ResultPath", "Parameters", "ResultSelector", "Resource", "TimeoutSeconds", "TimeoutSecondsPath", "HeartbeatSeconds", "HeartbeatSecondsPath", "Retry", "Catch", "Credentials"},
	typeChoice:   {"Assign", "InputPath", "OutputPath", "Choices", "Default"},
	typeWait:     {"Assign", "Next", "End", "InputPath", "OutputPath", "Seconds", "SecondsPath", "Timestamp", "TimestampPath"},
	typeSucceed:  {"InputPath", "OutputPath"},
	typeFail:     {"Error", "ErrorPath", "Cause", "CausePath"},
	typeParallel: {"Assign", "Next", "End", "InputPath", "OutputPath", "ResultPath", "Parameters", "ResultSelector", "Branches", "Retry", "Catch"},
	typeMap:      {"Assign", "Next", "End", "InputPath", "OutputPath", "ResultPath", "Parameters", "ResultSelector", "ItemsPath", "ItemSelector", "ItemProcessor", "Iterator", "MaxConcurrency", "MaxConcurrencyPath", "ToleratedFailureCount", "ToleratedFailureCountPath", "ToleratedFailurePercentage", "ToleratedFailurePercentagePath", "Retry", "Catch", "ItemReader", "ItemBatcher", "ResultWriter", "Label"},
}

func (c *compiler) state(name, prefix string, m map[string]any) *state {
	where := prefix + name
	typeName, _ := m["Type"].(string)
	typ, ok := stateTypes[typeName]
	if !ok {
		if typeName == "" {
			c.add(where, "Type", "is required")
		} else {
			c.add(where, "Type", "unknown state type %q", typeName)
		}
		return nil
	}
	st := &state{name: name, typ: typ, typeName: typeName,
		enteredType: typeName + "StateEntered", exitedType: typeName + "StateExited", abortedType: typeName + "StateAborted"}
	isJSONata := c.jsonata
	if ql, ok := m["QueryLanguage"].(string); ok {
		isJSONata = ql == "JSONata"
	}
	allowed := map[string]bool{}
	for _, f := range fieldsByType[typ] {
		if _, pathOnly := jsonPathOnlyFields[f]; !isJSONata || !pathOnly {
			allowed[f] = true
		}
	}
	if isJSONata {
		for _, f := range jsonataFieldsByType[typ] {
			allowed[f] = true
		}
	}
	for _, k := range sortedKeys(m) {
		if commonFields[k] || allowed[k] {
			continue
		}
		if _, pathOnly := jsonPathOnlyFields[k]; pathOnly && isJSONata && containsString(fieldsByType[typ], k) {
			c.add(where, k, "%s is a JSONPath field, not allowed in a JSONata state (use Arguments, Output, Items or a {%% %%} expression)", k)
			continue
		}
		if jsonataOnlyFields[k] && !isJSONata && containsString(jsonataFieldsByType[typ], k) {
			c.add(where, k, "%s is a JSONata field, allowed only when the state's QueryLanguage is JSONata", k)
			continue
		}
		switch k {
		case "Retry", "Catch":
			c.add(where, k, "%s is not allowed in a %s state (only Task, Parallel and Map)", k, typeName)
		case "Next", "End":
			c.add(where, k, "a %s state must not have %s", typeName, k)
		default:
			c.add(where, k, "field is not allowed in a %s state", typeName)
		}
	}
	c.queryLanguage(m, where)

	// Transitions.
	if allowed["Next"] {
		next, hasNext := m["Next"]
		end, hasEnd := m["End"]
		switch {
		case hasNext && hasEnd:
			c.add(where, "Next", "a state must have exactly one of Next or \"End\": true")
		case hasNext:
			s, ok := next.(string)
			if !ok || s == "" {
				c.add(where, "Next", "must be a state name")
			}
			st.next = s
		case hasEnd:
			if b, ok := end.(bool); !ok || !b {
				c.add(where, "End", "must be true (or use Next)")
			}
			st.end = true
		default:
			c.add(where, "Next", "a %s state needs Next or \"End\": true", typeName)
		}
	}

	if isJSONata {
		c.compileJSONataFields(st, m, where)
		// The literal checks below see only the numbers written as numbers.
		m = withoutExpressions(m, jsonataNumberFields)
	}

	// Input and output processing.
	if allowed["InputPath"] {
		st.inputPath, st.inputNull = c.pathField(m, where, "InputPath", false)
		st.outputPath, st.outputNull = c.pathField(m, where, "OutputPath", false)
	}
	if allowed["ResultPath"] {
		st.resultPath, st.resultNull = c.pathField(m, where, "ResultPath", true)
	}
	if v, ok := m["Assign"]; ok && allowed["Assign"] && !isJSONata {
		st.assign = c.assignField(v, where, "Assign")
	}
	if allowed["Parameters"] {
		if v, ok := m["Parameters"]; ok {
			st.parameters = c.template(v, where, "Parameters")
		}
	}
	if allowed["ResultSelector"] {
		if v, ok := m["ResultSelector"]; ok {
			if _, isObj := v.(map[string]any); !isObj {
				c.add(where, "ResultSelector", "must be an object")
			} else {
				st.resultSelector = c.template(v, where, "ResultSelector")
			}
		}
	}
	if allowed["Retry"] {
		st.retry = c.retriers(m, where)
		st.catch = c.catchers(m, where, isJSONata)
	}

	switch typ {
	case typePass:
		st.result, st.hasResult = m["Result"]
	case typeTask:
		c.task(st, m, where)
	case typeChoice:
		c.choice(st, m, where, isJSONata)
	case typeWait:
		c.wait(st, m, where, isJSONata)
	case typeFail:
		c.fail(st, m, where)
	case typeParallel:
		list, ok := m["Branches"].([]any)
		if !ok || len(list) == 0 {
			c.add(where, "Branches", "is required and must be a non-empty array of state machines")
			break
		}
		for i, b := range list {
			bm, ok := b.(map[string]any)
			if !ok {
				c.add(where, fmt.Sprintf("Branches[%d]", i), "must be a state machine object")
				continue
			}
			st.branches = append(st.branches, c.machine(bm, fmt.Sprintf("%s/Branch %d/", where, i), false))
		}
	case typeMap:
		c.mapState(st, m, where, isJSONata)
	}
	return st
}

func (c *compiler) pathField(m map[string]any, where, field string, reference bool) (*path, bool) {
	return c.pathFieldAs(m, field, where, field, reference)
}

// pathFieldAs reads m[key] as a path (or null) and reports problems under
// field. A nil path with ok=false means "absent or $" (the default).
func (c *compiler) pathFieldAs(m map[string]any, key, where, field string, reference bool) (*path, bool) {
	v, ok := m[key]
	if !ok {
		return nil, false
	}
	if v == nil {
		return nil, true
	}
	s, ok := v.(string)
	if !ok {
		c.add(where, field, "must be a path string or null")
		return nil, false
	}
	var p *path
	var err error
	if reference {
		p, err = parseReferencePath(s)
		if err == nil && p.context {
			err = fmt.Errorf("%q: a reference path cannot address the context object", s)
		}
		if err == nil && p.variable != "" && field == "ResultPath" {
			err = fmt.Errorf("%q: ResultPath cannot address a variable (set variables with Assign)", s)
		}
	} else {
		p, err = parsePath(s)
	}
	if err != nil {
		c.add(where, field, "%v", err)
		return nil, false
	}
	if p.isRoot() {
		return nil, false
	}
	return p, false
}

// assignField compiles an Assign object: its keys name variables, its
// values are a Parameters-style template.
func (c *compiler) assignField(v any, where, field string) *template {
	obj, ok := v.(map[string]any)
	if !ok {
		c.add(where, field, "must be an object")
		return nil
	}
	for _, k := range sortedKeys(obj) {
		if !validVariableName(strings.TrimSuffix(k, ".$")) {
			c.add(where, field, "%q is not a valid variable name (a letter or '_' first, then letters, digits or '_'; not \"states\")", k)
		}
	}
	return c.template(v, where, field)
}

func (c *compiler) template(v any, where, field string) *template {
	var probs []string
	t := compileTemplate(v, field, &probs)
	for _, p := range probs {
		c.add(where, field, "%s", strings.TrimPrefix(p, field+": "))
	}
	return t
}

func (c *compiler) errorEquals(v any, where, field string) []string {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		c.add(where, field, "ErrorEquals is required and must be a non-empty array of error names")
		return nil
	}
	var out []string
	for _, e := range list {
		s, ok := e.(string)
		if !ok || s == "" {
			c.add(where, field, "ErrorEquals entries must be non-empty strings")
			continue
		}
		if isReservedPrefix(s) && !reservedErrorNames[s] {
			c.add(where, field, "%q is not a reserved error name; custom names must not start with \"States.\"", s)
		}
		out = append(out, s)
	}
	for _, s := range out {
		if s == ErrALL && len(out) > 1 {
			c.add(where, field, "States.ALL must appear alone in ErrorEquals")
		}
	}
	return out
}

func (c *compiler) retriers(m map[string]any, where string) []*retrier {
	items, n := c.objectList(m, "Retry", "retriers", where)
	var out []*retrier
	for _, it := range items {
		i, field, rm := it.index, it.field, it.m
		for _, k := range sortedKeys(rm) {
			switch k {
			case "ErrorEquals", "IntervalSeconds", "MaxAttempts", "BackoffRate", "MaxDelaySeconds", "JitterStrategy", "Comment":
			default:
				c.add(where, field+"."+k, "unknown retrier field")
			}
		}
		r := &retrier{interval: 1, maxAttempts: 3, backoff: 2}
		r.errorEquals = c.errorEquals(rm["ErrorEquals"], where, field+".ErrorEquals")
		if containsString(r.errorEquals, ErrALL) && i != n-1 {
			c.add(where, field+".ErrorEquals", "States.ALL must appear in the last retrier")
		}
		if n, ok := c.intInRange(rm, "IntervalSeconds", where, field, 1, 99999999); ok {
			r.interval = float64(n)
		}
		if n, ok := c.intInRange(rm, "MaxAttempts", where, field, 0, 99999999); ok {
			r.maxAttempts = n
		}
		if v, ok := rm["BackoffRate"]; ok {
			f, ok := toFloat(v)
			if !ok || f < 1 {
				c.add(where, field+".BackoffRate", "must be a number greater than or equal to 1.0")
			}
			r.backoff = f
		}
		if n, ok := c.intInRange(rm, "MaxDelaySeconds", where, field, 1, 31622401); ok {
			r.maxDelay = float64(n)
		}
		if v, ok := rm["JitterStrategy"]; ok {
			switch v {
			case "FULL":
				r.jitterFull = true
			case "NONE":
			default:
				c.add(where, field+".JitterStrategy", "must be \"FULL\" or \"NONE\"")
			}
		}
		out = append(out, r)
	}
	return out
}

func (c *compiler) catchers(m map[string]any, where string, isJSONata bool) []*catcher {
	items, n := c.objectList(m, "Catch", "catchers", where)
	var out []*catcher
	for _, it := range items {
		i, field, cm := it.index, it.field, it.m
		for _, k := range sortedKeys(cm) {
			switch k {
			case "ErrorEquals", "Next", "Comment", "Assign":
			case "ResultPath":
				if isJSONata {
					c.add(where, field+"."+k, "ResultPath is a JSONPath field, not allowed in a JSONata state (use Output)")
				}
			case "Output":
				if !isJSONata {
					c.add(where, field+"."+k, "Output is a JSONata field, allowed only when the state's QueryLanguage is JSONata")
				}
			default:
				c.add(where, field+"."+k, "unknown catcher field")
			}
		}
		ct := &catcher{}
		if isJSONata {
			ct.j = &jsonataState{}
			if v, ok := cm["Assign"]; ok {
				ct.j.assign = c.jsonataAssign(v, where, field+"/Assign")
			}
			if v, ok := cm["Output"]; ok {
				ct.j.output = c.jvalue(v, where, field+"/Output")
			}
		} else if v, ok := cm["Assign"]; ok {
			ct.assign = c.assignField(v, where, field+".Assign")
		}
		ct.errorEquals = c.errorEquals(cm["ErrorEquals"], where, field+".ErrorEquals")
		if containsString(ct.errorEquals, ErrALL) && i != n-1 {
			c.add(where, field+".ErrorEquals", "States.ALL must appear in the last catcher")
		}
		next, ok := cm["Next"].(string)
		if !ok || next == "" {
			c.add(where, field+".Next", "is required and must be a state name")
		}
		ct.next = next
		ct.resultPath, ct.resultNull = c.pathFieldAs(cm, "ResultPath", where, field+".ResultPath", true)
		out = append(out, ct)
	}
	return out
}

// listItem is one object of a Retry or Catch array, with its field label.
type listItem struct {
	index int
	field string
	m     map[string]any
}

// objectList reads m[key] as an array of objects ("Retry[2]" labels each),
// reporting a non-array and every non-object element. It also returns the
// array's length, which the "States.ALL must be last" rule counts against.
func (c *compiler) objectList(m map[string]any, key, what, where string) ([]listItem, int) {
	v, ok := m[key]
	if !ok {
		return nil, 0
	}
	list, ok := v.([]any)
	if !ok {
		c.add(where, key, "must be an array of %s", what)
		return nil, 0
	}
	var out []listItem
	for i, e := range list {
		field := fmt.Sprintf("%s[%d]", key, i)
		om, ok := e.(map[string]any)
		if !ok {
			c.add(where, field, "must be an object")
			continue
		}
		out = append(out, listItem{index: i, field: field, m: om})
	}
	return out, len(list)
}

// intInRange reads an optional integer field of a retrier, reporting a value
// outside [lo, hi]. ok is false when the field is absent.
func (c *compiler) intInRange(m map[string]any, key, where, field string, lo, hi int64) (int64, bool) {
	v, ok := m[key]
	if !ok {
		return 0, false
	}
	n, ok := isInteger(v)
	if !ok || n < lo || n > hi {
		c.add(where, field+"."+key, "must be an integer from %d to %d", lo, hi)
	}
	return n, true
}

func (c *compiler) positiveInt(m map[string]any, where, field string) (int64, bool) {
	v, ok := m[field]
	if !ok {
		return 0, false
	}
	n, ok := isInteger(v)
	if !ok || n <= 0 || n > 99999999 {
		c.add(where, field, "must be a positive integer (at most 99999999)")
		return 0, false
	}
	return n, true
}

func (c *compiler) task(st *state, m map[string]any, where string) {
	res, ok := m["Resource"].(string)
	if !ok || res == "" {
		c.add(where, "Resource", "is required and must be a URI string")
	}
	st.resource = res
	st.taskRes = classifyResource(res)
	if _, has := m["TimeoutSeconds"]; has {
		if _, hasPath := m["TimeoutSecondsPath"]; hasPath {
			c.add(where, "TimeoutSeconds", "TimeoutSeconds and TimeoutSecondsPath are mutually exclusive")
		}
	}
	if _, has := m["HeartbeatSeconds"]; has {
		if _, hasPath := m["HeartbeatSecondsPath"]; hasPath {
			c.add(where, "HeartbeatSeconds", "HeartbeatSeconds and HeartbeatSecondsPath are mutually exclusive")
		}
	}
	st.timeoutSeconds, _ = c.positiveInt(m, where, "TimeoutSeconds")
	st.heartbeatSeconds, _ = c.positiveInt(m, where, "HeartbeatSeconds")
	st.timeoutPath = c.refPathField(m, where, "TimeoutSecondsPath")
	st.heartbeatPath = c.refPathField(m, where, "HeartbeatSecondsPath")
	if st.heartbeatSeconds > 0 {
		limit := st.timeoutSeconds
		if limit == 0 && st.timeoutPath == nil {
			limit = 99999999
		}
		if limit > 0 && st.heartbeatSeconds >= limit {
			c.add(where, "HeartbeatSeconds", "must be smaller than TimeoutSeconds")
		}
	}
}

func (c *compiler) refPathField(m map[string]any, where, field string) *path {
	v, ok := m[field]
	if !ok {
		return nil
	}
	s, ok := v.(string)
	if !ok {
		c.add(where, field, "must be a reference path string")
		return nil
	}
	p, err := parseReferencePath(s)
	if err != nil {
		c.add(where, field, "%v", err)
		return nil
	}
	return p
}

func (c *compiler) choice(st *state, m map[string]any, where string, isJSONata bool) {
	list, ok := m["Choices"].([]any)
	if !ok || len(list) == 0 {
		c.add(where, "Choices", "is required and must be a non-empty array of rules")
	}
	for i, e := range list {
		field := fmt.Sprintf("Choices[%d]", i)
		rm, ok := e.(map[string]any)
		if !ok {
			c.add(where, field, "must be a rule object")
			continue
		}
		if isJSONata {
			st.choices = append(st.choices, c.jsonataRule(rm, where, field))
			continue
		}
		var probs []string
		r := compileChoiceRule(rm, field, true, &probs)
		c.addAll(where, probs)
		st.choices = append(st.choices, r)
	}
	if v, ok := m["Default"]; ok {
		s, isStr := v.(string)
		if !isStr || s == "" {
			c.add(where, "Default", "must be a state name")
		}
		st.defaultNext = s
	}
}

func (c *compiler) wait(st *state, m map[string]any, where string, isJSONata bool) {
	n := 0
	for _, f := range []string{"Seconds", "SecondsPath", "Timestamp", "TimestampPath"} {
		if _, ok := m[f]; ok {
			n++
		}
	}
	if n != 1 {
		c.add(where, "Seconds", "a Wait state needs exactly one of Seconds, SecondsPath, Timestamp or TimestampPath")
	}
	if isJSONata {
		// Seconds and Timestamp may be expressions, checked when evaluated.
		lits := make(map[string]any, len(m))
		for k, v := range m {
			if s, isStr := v.(string); isStr && (k == "Seconds" || k == "Timestamp") {
				if _, isExpr := jsonataExpression(s); isExpr {
					continue
				}
			}
			lits[k] = v
		}
		m = lits
	}
	if v, ok := m["Seconds"]; ok {
		s, ok := isInteger(v)
		if !ok || s < 0 || s > 99999999 {
			c.add(where, "Seconds", "must be a non-negative integer (at most 99999999)")
		}
		st.waitSeconds, st.hasSeconds = s, true
	}
	if v, ok := m["Timestamp"]; ok {
		s, _ := v.(string)
		ts, ok := parseTimestamp(s)
		if !ok {
			c.add(where, "Timestamp", "must be an ISO-8601 extended offset date-time such as 2016-03-14T01:59:00Z")
		}
		st.timestamp, st.hasTimestamp = ts, true
	}
	st.secondsPath = c.refPathField(m, where, "SecondsPath")
	st.timestampPath = c.refPathField(m, where, "TimestampPath")
}

func (c *compiler) fail(st *state, m map[string]any, where string) {
	for _, pair := range [][2]string{{"Error", "ErrorPath"}, {"Cause", "CausePath"}} {
		_, a := m[pair[0]]
		_, b := m[pair[1]]
		if a && b {
			c.add(where, pair[0], "%s and %s are mutually exclusive", pair[0], pair[1])
		}
	}
	if v, ok := m["Error"]; ok {
		s, isStr := v.(string)
		if !isStr {
			c.add(where, "Error", "must be a string")
		}
		st.errorName, st.hasError = s, true
	}
	if v, ok := m["Cause"]; ok {
		s, isStr := v.(string)
		if !isStr {
			c.add(where, "Cause", "must be a string")
		}
		st.cause, st.hasCause = s, true
	}
	st.errorExpr = c.dynamic(m, where, "ErrorPath")
	st.causeExpr = c.dynamic(m, where, "CausePath")
}

func (c *compiler) dynamic(m map[string]any, where, field string) *dynamicValue {
	v, ok := m[field]
	if !ok {
		return nil
	}
	s, ok := v.(string)
	if !ok {
		c.add(where, field, "must be a path or an intrinsic function call")
		return nil
	}
	d := &dynamicValue{text: s}
	if intrinsic.IsCall(s) {
		call, err := intrinsic.Parse(s)
		if err != nil {
			c.add(where, field, "%v", err)
			return nil
		}
		d.call = call
		return d
	}
	p, err := parsePath(s)
	if err != nil {
		c.add(where, field, "%v", err)
		return nil
	}
	d.path = p
	return d
}

func (c *compiler) mapState(st *state, m map[string]any, where string, isJSONata bool) {
	proc, hasProc := m["ItemProcessor"]
	iter, hasIter := m["Iterator"]
	switch {
	case hasProc && hasIter:
		c.add(where, "ItemProcessor", "ItemProcessor and Iterator are mutually exclusive")
	case !hasProc && !hasIter:
		c.add(where, "ItemProcessor", "is required (or the legacy Iterator)")
	}
	field := "ItemProcessor"
	if !hasProc {
		proc, field = iter, "Iterator"
	}
	mode := "INLINE"
	if pm, ok := proc.(map[string]any); ok {
		var execType string
		mode, execType = c.processorMode(pm, where, field)
		if mode == "DISTRIBUTED" {
			if field == "Iterator" {
				c.add(where, "Iterator", "a DISTRIBUTED Map needs ItemProcessor, not the legacy Iterator")
			}
			st.dist = c.distributed(m, where, execType, isJSONata)
		}
		st.processor = c.machine(pm, where+"/"+field+"/", false)
	} else if hasProc || hasIter {
		c.add(where, field, "must be a state machine object")
	}
	if mode != "DISTRIBUTED" {
		for _, k := range distributedOnly {
			if _, ok := m[k]; ok {
				c.add(where, k, "%s is allowed only in a distributed Map (ItemProcessor.ProcessorConfig.Mode DISTRIBUTED)", k)
			}
		}
	}
	st.itemsPath = c.refPathField(m, where, "ItemsPath")
	_, hasSel := m["ItemSelector"]
	_, hasParams := m["Parameters"]
	if hasSel && hasParams {
		c.add(where, "ItemSelector", "ItemSelector and the legacy Parameters are mutually exclusive")
	}
	if hasSel {
		st.itemSelector = c.template(m["ItemSelector"], where, "ItemSelector")
	} else if hasParams {
		// In a Map state the legacy Parameters field is the item selector.
		st.itemSelector, st.parameters = st.parameters, nil
	}
	if v, ok := m["MaxConcurrency"]; ok {
		n, ok := isInteger(v)
		if !ok || n < 0 {
			c.add(where, "MaxConcurrency", "must be a non-negative integer")
		}
		st.maxConcurrency = n
	}
	st.maxConcurrencyPath = c.refPathField(m, where, "MaxConcurrencyPath")
	if v, ok := m["ToleratedFailureCount"]; ok {
		n, ok := isInteger(v)
		if !ok || n < 0 {
			c.add(where, "ToleratedFailureCount", "must be a non-negative integer")
		}
		st.toleratedCount = n
	} else {
		st.toleratedCount = -1
	}
	st.toleratedCountPath = c.refPathField(m, where, "ToleratedFailureCountPath")
	if v, ok := m["ToleratedFailurePercentage"]; ok {
		f, ok := toFloat(v)
		if !ok || f < 0 || f > 100 || math.IsNaN(f) {
			c.add(where, "ToleratedFailurePercentage", "must be a number from 0 to 100")
		}
		st.toleratedPercent = f
	} else {
		st.toleratedPercent = -1
	}
	st.toleratedPercentPath = c.refPathField(m, where, "ToleratedFailurePercentagePath")
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func containsString(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
