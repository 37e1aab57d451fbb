package asl

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

type choiceOp uint8

const (
	opNone choiceOp = iota
	opAnd
	opOr
	opNot
	opStringEquals
	opStringLessThan
	opStringGreaterThan
	opStringLessThanEquals
	opStringGreaterThanEquals
	opStringMatches
	opNumericEquals
	opNumericLessThan
	opNumericGreaterThan
	opNumericLessThanEquals
	opNumericGreaterThanEquals
	opBooleanEquals
	opTimestampEquals
	opTimestampLessThan
	opTimestampGreaterThan
	opTimestampLessThanEquals
	opTimestampGreaterThanEquals
	opIsNull
	opIsPresent
	opIsNumeric
	opIsString
	opIsBoolean
	opIsTimestamp
)

type operandKind uint8

const (
	kindString operandKind = iota
	kindNumber
	kindBool
	kindTimestamp
	kindTypeTest
)

type opInfo struct {
	op   choiceOp
	kind operandKind
}

// choiceOperators maps every comparison field to its operator; "…Path"
// variants are looked up by stripping the suffix.
var choiceOperators = map[string]opInfo{
	"StringEquals":               {opStringEquals, kindString},
	"StringLessThan":             {opStringLessThan, kindString},
	"StringGreaterThan":          {opStringGreaterThan, kindString},
	"StringLessThanEquals":       {opStringLessThanEquals, kindString},
	"StringGreaterThanEquals":    {opStringGreaterThanEquals, kindString},
	"StringMatches":              {opStringMatches, kindString},
	"NumericEquals":              {opNumericEquals, kindNumber},
	"NumericLessThan":            {opNumericLessThan, kindNumber},
	"NumericGreaterThan":         {opNumericGreaterThan, kindNumber},
	"NumericLessThanEquals":      {opNumericLessThanEquals, kindNumber},
	"NumericGreaterThanEquals":   {opNumericGreaterThanEquals, kindNumber},
	"BooleanEquals":              {opBooleanEquals, kindBool},
	"TimestampEquals":            {opTimestampEquals, kindTimestamp},
	"TimestampLessThan":          {opTimestampLessThan, kindTimestamp},
	"TimestampGreaterThan":       {opTimestampGreaterThan, kindTimestamp},
	"TimestampLessThanEquals":    {opTimestampLessThanEquals, kindTimestamp},
	"TimestampGreaterThanEquals": {opTimestampGreaterThanEquals, kindTimestamp},
	"IsNull":                     {opIsNull, kindTypeTest},
	"IsPresent":                  {opIsPresent, kindTypeTest},
	"IsNumeric":                  {opIsNumeric, kindTypeTest},
	"IsString":                   {opIsString, kindTypeTest},
	"IsBoolean":                  {opIsBoolean, kindTypeTest},
	"IsTimestamp":                {opIsTimestamp, kindTypeTest},
}

// choiceRule is a compiled Choice rule.
type choiceRule struct {
	op        choiceOp
	kind      operandKind
	variable  *path
	value     any   // literal operand
	valuePath *path // "…Path" operand
	ts        time.Time
	pattern   []patternPart
	rules     []*choiceRule // And, Or; Not uses rules[0]
	next      string
	assign    *template     // top-level rule's Assign, applied when it matches
	j         *jsonataState // a JSONata rule: Condition, Assign, Output
}

type patternPart struct {
	lit  string
	star bool
}

// compileChoiceRule compiles one rule; top-level rules carry Next, nested
// ones must not.
func compileChoiceRule(m map[string]any, where string, top bool, problems *[]string) *choiceRule {
	r := &choiceRule{}
	add := func(format string, args ...any) {
		*problems = append(*problems, where+": "+fmt.Sprintf(format, args...))
	}
	var ops []string
	for k := range m {
		switch k {
		case "Variable", "Next", "Comment", "Assign":
			continue
		}
		ops = append(ops, k)
	}
	sort.Strings(ops)
	if next, ok := m["Next"]; ok {
		s, isStr := next.(string)
		switch {
		case !top:
			add("Next is only allowed on a top-level rule")
		case !isStr || s == "":
			add("Next must be a state name")
		default:
			r.next = s
		}
	} else if top {
		add("Next is required")
	}
	if a, ok := m["Assign"]; ok {
		obj, isObj := a.(map[string]any)
		switch {
		case !top:
			add("Assign is only allowed on a top-level rule")
		case !isObj:
			add("Assign must be an object")
		default:
			for _, k := range sortedKeys(obj) {
				if !validVariableName(strings.TrimSuffix(k, ".$")) {
					add("Assign: %q is not a valid variable name", k)
				}
			}
			r.assign = compileTemplate(a, where+".Assign", problems)
		}
	}
	if len(ops) != 1 {
		if len(ops) == 0 {
			add("no comparison operator")
		} else {
			add("exactly one comparison operator is allowed, found %s", strings.Join(ops, ", "))
		}
		return r
	}
	op := ops[0]
	val := m[op]
	switch op {
	case "And", "Or":
		r.op = opAnd
		if op == "Or" {
			r.op = opOr
		}
		list, ok := val.([]any)
		if !ok || len(list) == 0 {
			add("%s must be a non-empty array of rules", op)
			return r
		}
		for i, e := range list {
			sub, ok := e.(map[string]any)
			if !ok {
				add("%s[%d] must be a rule object", op, i)
				continue
			}
			r.rules = append(r.rules, compileChoiceRule(sub, fmt.Sprintf("%s.%s[%d]", where, op, i), false, problems))
		}
		if _, has := m["Variable"]; has {
			add("Variable is not allowed with %s", op)
		}
		return r
	case "Not":
		r.op = opNot
		sub, ok := val.(map[string]any)
		if !ok {
			add("Not must be a rule object")
			return r
		}
		r.rules = []*choiceRule{compileChoiceRule(sub, where+".Not", false, problems)}
		if _, has := m["Variable"]; has {
			add("Variable is not allowed with Not")
		}
		return r
	}
	isPath := strings.HasSuffix(op, "Path") && op != "StringMatches"
	name := op
	if isPath {
		name = strings.TrimSuffix(op, "Path")
	}
	info, known := choiceOperators[name]
	if !known || (isPath && (info.kind == kindTypeTest || info.op == opStringMatches)) {
		add("unknown comparison operator %q", op)
		return r
	}
	r.op, r.kind = info.op, info.kind
	vs, ok := m["Variable"].(string)
	if !ok {
		add("Variable is required with %s", op)
		return r
	}
	vp, err := parsePath(vs)
	if err != nil {
		add("Variable: %v", err)
		return r
	}
	r.variable = vp
	if isPath {
		s, ok := val.(string)
		if !ok {
			add("%s must be a path string", op)
			return r
		}
		p, err := parsePath(s)
		if err != nil {
			add("%s: %v", op, err)
			return r
		}
		r.valuePath = p
		return r
	}
	switch info.kind {
	case kindString:
		s, ok := val.(string)
		if !ok {
			add("%s must be a string", op)
			return r
		}
		r.value = s
		if info.op == opStringMatches {
			r.pattern = compilePattern(s)
		}
	case kindNumber:
		if _, ok := toFloat(val); !ok {
			add("%s must be a number", op)
			return r
		}
		r.value = val
	case kindBool, kindTypeTest:
		if _, ok := val.(bool); !ok {
			add("%s must be a boolean", op)
			return r
		}
		r.value = val
	case kindTimestamp:
		s, ok := val.(string)
		if !ok {
			add("%s must be a timestamp string", op)
			return r
		}
		ts, ok := parseTimestamp(s)
		if !ok {
			add("%s: %q is not an ISO-8601 extended offset date-time", op, s)
			return r
		}
		r.ts = ts
		r.value = s
	}
	return r
}

// compilePattern splits a StringMatches pattern on unescaped '*'; "\*" is a
// literal star and "\\" a literal backslash.
func compilePattern(s string) []patternPart {
	var parts []patternPart
	var lit strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) && (s[i+1] == '*' || s[i+1] == '\\') {
			lit.WriteByte(s[i+1])
			i++
			continue
		}
		if c == '*' {
			parts = append(parts, patternPart{lit: lit.String()}, patternPart{star: true})
			lit.Reset()
			continue
		}
		lit.WriteByte(c)
	}
	return append(parts, patternPart{lit: lit.String()})
}

func matchPattern(parts []patternPart, s string) bool {
	// Anchor the first literal, then find each following literal greedily
	// from the left; the last literal must end the string.
	var lits []string
	for _, p := range parts {
		if !p.star {
			lits = append(lits, p.lit)
		}
	}
	if len(lits) == 1 {
		return s == lits[0]
	}
	if !strings.HasPrefix(s, lits[0]) {
		return false
	}
	s = s[len(lits[0]):]
	last := lits[len(lits)-1]
	for _, l := range lits[1 : len(lits)-1] {
		i := strings.Index(s, l)
		if i < 0 {
			return false
		}
		s = s[i+len(l):]
	}
	return len(s) >= len(last) && strings.HasSuffix(s, last)
}

// parseTimestamp accepts what AWS accepts: an ISO-8601 extended offset
// date-time such as 2016-03-14T01:59:00Z or 2016-03-14T01:59:00.123+02:00.
// A space instead of 'T', or no zone, is refused.
func parseTimestamp(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

// eval evaluates the rule against the Choice state's effective input.
func (r *choiceRule) eval(input any, ctx scope) (bool, *failure) {
	switch r.op {
	case opAnd:
		for _, s := range r.rules {
			ok, f := s.eval(input, ctx)
			if f != nil || !ok {
				return false, f
			}
		}
		return true, nil
	case opOr:
		for _, s := range r.rules {
			ok, f := s.eval(input, ctx)
			if f != nil {
				return false, f
			}
			if ok {
				return true, nil
			}
		}
		return false, nil
	case opNot:
		ok, f := r.rules[0].eval(input, ctx)
		return !ok && f == nil, f
	}
	v, found := r.variable.get(input, ctx)
	if r.kind == kindTypeTest {
		want := r.value.(bool)
		if r.op == opIsPresent {
			return found == want, nil
		}
		if !found {
			return false, nil
		}
		var is bool
		switch r.op {
		case opIsNull:
			is = v == nil
		case opIsNumeric:
			_, is = toFloat(v)
		case opIsString:
			_, is = v.(string)
		case opIsBoolean:
			_, is = v.(bool)
		case opIsTimestamp:
			s, ok := v.(string)
			if ok {
				_, is = parseTimestamp(s)
			}
		}
		return is == want, nil
	}
	if !found {
		return false, runtimeFailure(fmt.Sprintf("Invalid path '%s': The choice state's condition path references an invalid value.", r.variable.text))
	}
	operand := r.value
	ts := r.ts
	if r.valuePath != nil {
		ov, ok := r.valuePath.get(input, ctx)
		if !ok {
			return false, runtimeFailure(fmt.Sprintf("Invalid path '%s': The choice state's condition path references an invalid value.", r.valuePath.text))
		}
		operand = ov
		if r.kind == kindTimestamp {
			s, isStr := ov.(string)
			if !isStr {
				return false, nil
			}
			if ts, ok = parseTimestamp(s); !ok {
				return false, nil
			}
		}
	}
	switch r.kind {
	case kindString:
		a, ok1 := v.(string)
		b, ok2 := operand.(string)
		if !ok1 || !ok2 {
			return false, nil
		}
		switch r.op {
		case opStringEquals:
			return a == b, nil
		case opStringLessThan:
			return a < b, nil
		case opStringGreaterThan:
			return a > b, nil
		case opStringLessThanEquals:
			return a <= b, nil
		case opStringGreaterThanEquals:
			return a >= b, nil
		case opStringMatches:
			return matchPattern(r.pattern, a), nil
		}
	case kindNumber:
		c, ok := compareNumbers(v, operand)
		if !ok {
			return false, nil
		}
		return compareResult(r.op, c), nil
	case kindBool:
		a, ok1 := v.(bool)
		b, ok2 := operand.(bool)
		return ok1 && ok2 && a == b, nil
	case kindTimestamp:
		s, ok := v.(string)
		if !ok {
			return false, nil
		}
		t, ok := parseTimestamp(s)
		if !ok {
			return false, nil
		}
		return compareResult(r.op, t.Compare(ts)), nil
	}
	return false, nil
}

func compareNumbers(a, b any) (int, bool) {
	ia, aInt := a.(int64)
	ib, bInt := b.(int64)
	if aInt && bInt {
		switch {
		case ia < ib:
			return -1, true
		case ia > ib:
			return 1, true
		}
		return 0, true
	}
	fa, ok1 := toFloat(a)
	fb, ok2 := toFloat(b)
	if !ok1 || !ok2 {
		return 0, false
	}
	switch {
	case fa < fb:
		return -1, true
	case fa > fb:
		return 1, true
	}
	return 0, true
}

func compareResult(op choiceOp, c int) bool {
	switch op {
	case opNumericEquals, opTimestampEquals:
		return c == 0
	case opNumericLessThan, opTimestampLessThan:
		return c < 0
	case opNumericGreaterThan, opTimestampGreaterThan:
		return c > 0
	case opNumericLessThanEquals, opTimestampLessThanEquals:
		return c <= 0
	case opNumericGreaterThanEquals, opTimestampGreaterThanEquals:
		return c >= 0
	}
	return false
}
