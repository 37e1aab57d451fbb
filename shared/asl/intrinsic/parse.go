package intrinsic

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxNesting is the deepest chain of calls one field may hold: the outermost
// call is level 1. AWS documents "up to 10" nested intrinsic functions.
const MaxNesting = 10

const statesPrefix = "States."

// Call is one parsed intrinsic invocation. It is immutable after Parse and
// safe to evaluate from several goroutines at once.
type Call struct {
	name string
	fn   function
	args []argument
}

type argKind uint8

const (
	argLiteral argKind = iota // string, number, boolean or null written in the call
	argPath                   // "$…" or "$$…", resolved by the caller at Eval
	argCall                   // a nested States.X(...)
)

// argument is one parsed argument. holes is set only for string literals: the
// byte offsets in the unescaped value where an unescaped "{}" starts. States.Format
// needs them because an escaped \{\} is text, not a placeholder, and that
// difference is gone once the literal is unescaped.
type argument struct {
	kind  argKind
	value any
	holes []int
	path  string
	call  *Call
}

// IsCall reports whether s is an intrinsic invocation: it starts with
// "States." and has a '('. Anything else in a ".$" field is a JSONPath.
func IsCall(s string) bool {
	return strings.HasPrefix(s, statesPrefix) && strings.IndexByte(s, '(') >= 0
}

// Parse parses an intrinsic invocation (nested calls, string literals with
// their backslash escapes, numbers, booleans, null, JSONPath arguments
// starting with "$" or "$$", at most MaxNesting levels of nesting) and reports
// syntax errors and unknown function names as a *SyntaxError without
// evaluating anything. Argument counts and types are checked by Eval, because
// JSONPath arguments are only known then. Whitespace around tokens is allowed.
// JSONPath arguments are delimited (brackets and quotes balanced) but their
// syntax is left to the resolver the caller passes to Eval.
func Parse(expr string) (*Call, error) {
	p := &parser{src: expr}
	p.skipSpace()
	c, err := p.call(1)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos < len(p.src) {
		return nil, p.errorf("unexpected %q after the closing parenthesis", p.src[p.pos])
	}
	return c, nil
}

// Name returns the function name, e.g. "States.Format".
func (c *Call) Name() string { return c.name }

// Paths returns every JSONPath argument of the call and its nested calls, in
// source order, so a validator can check them with the same JSONPath rules
// the resolver applies.
func (c *Call) Paths() []string {
	var out []string
	c.collectPaths(&out)
	return out
}

func (c *Call) collectPaths(out *[]string) {
	for _, a := range c.args {
		switch a.kind {
		case argPath:
			*out = append(*out, a.path)
		case argCall:
			a.call.collectPaths(out)
		}
	}
}

type parser struct {
	src string
	pos int
}

func (p *parser) errorf(format string, args ...any) *SyntaxError {
	return p.errorAt(p.pos, format, args...)
}

func (p *parser) errorAt(pos int, format string, args ...any) *SyntaxError {
	return &SyntaxError{Expr: p.src, Offset: pos, Reason: fmt.Sprintf(format, args...)}
}

func (p *parser) skipSpace() {
	for p.pos < len(p.src) && isSpace(p.src[p.pos]) {
		p.pos++
	}
}

func (p *parser) peek() (byte, bool) {
	if p.pos >= len(p.src) {
		return 0, false
	}
	return p.src[p.pos], true
}

// call parses "States.Name(arg, ...)" at nesting level depth.
func (p *parser) call(depth int) (*Call, error) {
	start := p.pos
	if depth > MaxNesting {
		return nil, p.errorf("intrinsic functions nest deeper than %d levels", MaxNesting)
	}
	if !strings.HasPrefix(p.src[p.pos:], statesPrefix) {
		return nil, p.errorf("expected an intrinsic function (States.<Name>)")
	}
	p.pos += len(statesPrefix)
	nameStart := p.pos
	for p.pos < len(p.src) && isIdentByte(p.src[p.pos]) {
		p.pos++
	}
	if p.pos == nameStart {
		return nil, p.errorf("missing function name after %q", statesPrefix)
	}
	name := p.src[start:p.pos]
	fn, ok := lookup(name)
	if !ok {
		return nil, p.errorAt(start, "unknown intrinsic function %s", name)
	}
	p.skipSpace()
	if b, ok := p.peek(); !ok || b != '(' {
		return nil, p.errorf("expected '(' after %s", name)
	}
	p.pos++
	c := &Call{name: name, fn: fn}
	p.skipSpace()
	if b, ok := p.peek(); ok && b == ')' {
		p.pos++
		return c, nil
	}
	for {
		p.skipSpace()
		a, err := p.argument(depth)
		if err != nil {
			return nil, err
		}
		c.args = append(c.args, a)
		p.skipSpace()
		b, ok := p.peek()
		switch {
		case !ok:
			return nil, p.errorf("missing ')' to close %s", name)
		case b == ',':
			p.pos++
		case b == ')':
			p.pos++
			return c, nil
		default:
			return nil, p.errorf("expected ',' or ')' in the arguments of %s, found %q", name, b)
		}
	}
}

func (p *parser) argument(depth int) (argument, error) {
	b, ok := p.peek()
	if !ok {
		return argument{}, p.errorf("missing argument")
	}
	switch {
	case b == '\'':
		return p.stringLiteral()
	case b == '$':
		return p.path()
	case b == '-' || isDigit(b):
		return p.number()
	case strings.HasPrefix(p.src[p.pos:], statesPrefix):
		c, err := p.call(depth + 1)
		if err != nil {
			return argument{}, err
		}
		return argument{kind: argCall, call: c}, nil
	}
	start := p.pos
	for p.pos < len(p.src) && isIdentByte(p.src[p.pos]) {
		p.pos++
	}
	switch p.src[start:p.pos] {
	case "true":
		return argument{kind: argLiteral, value: true}, nil
	case "false":
		return argument{kind: argLiteral, value: false}, nil
	case "null":
		return argument{kind: argLiteral, value: nil}, nil
	case "":
		return argument{}, p.errorAt(start, "unexpected %q where an argument was expected", b)
	default:
		return argument{}, p.errorAt(start, "unexpected %q where an argument was expected", p.src[start:p.pos])
	}
}

// stringLiteral parses '…'. The reserved characters ', {, } and \ are written
// \', \{, \} and \\; any other backslash is an open escape and an error.
func (p *parser) stringLiteral() (argument, error) {
	start := p.pos
	p.pos++ // opening quote
	var sb strings.Builder
	var holes []int
	for p.pos < len(p.src) {
		b := p.src[p.pos]
		switch {
		case b == '\'':
			p.pos++
			return argument{kind: argLiteral, value: sb.String(), holes: holes}, nil
		case b == '\\':
			if p.pos+1 >= len(p.src) {
				return argument{}, p.errorf("open backslash at the end of the expression")
			}
			switch n := p.src[p.pos+1]; n {
			case '\'', '{', '}', '\\':
				sb.WriteByte(n)
				p.pos += 2
			default:
				return argument{}, p.errorf("open backslash: only \\', \\{, \\} and \\\\ are escapes")
			}
		case b == '{' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '}':
			holes = append(holes, sb.Len())
			sb.WriteString("{}")
			p.pos += 2
		default:
			sb.WriteByte(b)
			p.pos++
		}
	}
	return argument{}, p.errorAt(start, "unterminated string literal")
}

// path delimits a JSONPath argument: it runs to the first ',', ')' or
// whitespace outside brackets, and quotes inside brackets may hold any of
// those ("$.abc.['def ghi']", "$.a[?(@.b == 'x, y')]").
func (p *parser) path() (argument, error) {
	start := p.pos
	brackets := 0
scan:
	for p.pos < len(p.src) {
		b := p.src[p.pos]
		switch {
		case b == '[':
			brackets++
		case b == ']':
			if brackets == 0 {
				return argument{}, p.errorf("unbalanced ']' in JSONPath argument")
			}
			brackets--
		case (b == '\'' || b == '"') && brackets > 0:
			end, ok := closingQuote(p.src, p.pos)
			if !ok {
				return argument{}, p.errorf("unterminated quoted name in JSONPath argument")
			}
			p.pos = end
		case brackets == 0 && (b == ',' || b == ')' || isSpace(b)):
			break scan
		}
		p.pos++
	}
	if brackets > 0 {
		return argument{}, p.errorAt(start, "unterminated '[' in JSONPath argument")
	}
	path := p.src[start:p.pos]
	rest := strings.TrimPrefix(strings.TrimPrefix(path, "$"), "$")
	if rest != "" && rest[0] != '.' && rest[0] != '[' && !strings.HasPrefix(path, "$$") && isNameStart(rest[0]) {
		// "$name…": a workflow variable, resolved like any other path.
		return argument{kind: argPath, path: path}, nil
	}
	if rest != "" && rest[0] != '.' && rest[0] != '[' {
		return argument{}, p.errorAt(start, "JSONPath argument %q must start with \"$.\", \"$[\", \"$$.\", \"$name\" or be \"$\"", path)
	}
	return argument{kind: argPath, path: path}, nil
}

// closingQuote returns the index of the quote closing the one at open,
// skipping backslash-escaped characters.
func closingQuote(s string, open int) (int, bool) {
	q := s[open]
	for i := open + 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case q:
			return i, true
		}
	}
	return 0, false
}

// number parses a JSON number. Integral literals without fraction or exponent
// become int64 (float64 when they overflow), the rest float64, as ojg does
// for JSON input.
func (p *parser) number() (argument, error) {
	start := p.pos
	if p.src[p.pos] == '-' {
		p.pos++
	}
	digits := p.digits()
	if digits == 0 {
		return argument{}, p.errorAt(start, "malformed number")
	}
	if digits > 1 && p.src[p.pos-digits] == '0' {
		return argument{}, p.errorAt(start, "malformed number: leading zero")
	}
	integral := true
	if b, ok := p.peek(); ok && b == '.' {
		p.pos++
		if p.digits() == 0 {
			return argument{}, p.errorAt(start, "malformed number: no digits after '.'")
		}
		integral = false
	}
	if b, ok := p.peek(); ok && (b == 'e' || b == 'E') {
		p.pos++
		if b, ok := p.peek(); ok && (b == '+' || b == '-') {
			p.pos++
		}
		if p.digits() == 0 {
			return argument{}, p.errorAt(start, "malformed number: no digits in the exponent")
		}
		integral = false
	}
	text := p.src[start:p.pos]
	if integral {
		if i, err := strconv.ParseInt(text, 10, 64); err == nil {
			return argument{kind: argLiteral, value: i}, nil
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return argument{}, p.errorAt(start, "number %s is out of range", text)
	}
	return argument{kind: argLiteral, value: f}, nil
}

func (p *parser) digits() int {
	n := 0
	for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
		p.pos++
		n++
	}
	return n
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

func isIdentByte(b byte) bool {
	return isDigit(b) || ('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z') || b == '_'
}

// isNameStart reports whether b may begin a workflow variable's name.
func isNameStart(b byte) bool {
	return b == '_' || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z')
}
