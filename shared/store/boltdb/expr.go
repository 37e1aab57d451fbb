package boltdb

import (
	"cmp"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The expression language this engine understands is the part of
// DynamoDB's that a key-value store with version checks needs:
//
//	condition := or
//	or        := and { "OR" and }
//	and       := not { "AND" not }
//	not       := "NOT" not | "(" or ")" | function | operand comparator operand
//	function  := attribute_exists(path) | attribute_not_exists(path) | begins_with(path, operand)
//	operand   := #name | :value | name
//	update    := "SET" path "=" operand { "," path "=" operand }
//
// Paths are top-level attributes only. Anything else is refused with a
// ValidationException naming the expression, never guessed at.

// cond is a compiled condition: it reports whether item (nil when absent)
// satisfies it, given the request's names and values.
type cond func(item map[string]types.AttributeValue, b *bindings) (bool, error)

// bindings are a request's ExpressionAttributeNames and Values.
type bindings struct {
	names  map[string]string
	values map[string]types.AttributeValue
}

func (b *bindings) name(tok string) (string, error) {
	if !strings.HasPrefix(tok, "#") {
		return tok, nil
	}
	n, ok := b.names[tok]
	if !ok {
		return "", validation("expression attribute name %s is not defined", tok)
	}
	return n, nil
}

func (b *bindings) value(tok string) (types.AttributeValue, error) {
	v, ok := b.values[tok]
	if !ok {
		return nil, validation("expression attribute value %s is not defined", tok)
	}
	return v, nil
}

// operand yields the value an operand token stands for in item: nil when
// the attribute is absent.
func (b *bindings) operand(tok string, item map[string]types.AttributeValue) (types.AttributeValue, error) {
	if strings.HasPrefix(tok, ":") {
		return b.value(tok)
	}
	n, err := b.name(tok)
	if err != nil {
		return nil, err
	}
	return item[n], nil
}

// Compiled expressions are cached by their text: callers use a handful of
// constant expressions with changing values.
var (
	condCache   sync.Map // string → cond
	updateCache sync.Map // string → []assignment
)

func compileCond(expr string) (cond, error) {
	if c, ok := condCache.Load(expr); ok {
		return c.(cond), nil //nolint:forcetypeassert // only conds are stored
	}
	p := &parser{toks: tokenize(expr), expr: expr}
	c, err := p.or()
	if err == nil && !p.done() {
		err = p.fail("unexpected %q", p.peek())
	}
	if err != nil {
		return nil, err
	}
	condCache.Store(expr, c)
	return c, nil
}

// assignment is one SET clause: attribute path = operand.
type assignment struct{ path, operand string }

func compileUpdate(expr string) ([]assignment, error) {
	if a, ok := updateCache.Load(expr); ok {
		return a.([]assignment), nil //nolint:forcetypeassert // only assignments are stored
	}
	p := &parser{toks: tokenize(expr), expr: expr}
	if !strings.EqualFold(p.next(), "SET") {
		return nil, p.fail("only SET update expressions are supported")
	}
	var as []assignment
	for {
		path, eq, operand := p.next(), p.next(), p.next()
		if !isOperand(path) || strings.HasPrefix(path, ":") || eq != "=" || !isOperand(operand) {
			return nil, p.fail("expected path = operand")
		}
		as = append(as, assignment{path: path, operand: operand})
		if p.done() {
			break
		}
		if p.next() != "," {
			return nil, p.fail("expected , between assignments")
		}
	}
	updateCache.Store(expr, as)
	return as, nil
}

type parser struct {
	toks []string
	pos  int
	expr string
}

func (p *parser) done() bool { return p.pos >= len(p.toks) }

func (p *parser) peek() string {
	if p.done() {
		return ""
	}
	return p.toks[p.pos]
}

func (p *parser) next() string {
	t := p.peek()
	p.pos++
	return t
}

func (p *parser) fail(format string, args ...any) error {
	return validation("invalid expression %q: %s", p.expr, fmt.Sprintf(format, args...))
}

func (p *parser) or() (cond, error) {
	left, err := p.and()
	if err != nil {
		return nil, err
	}
	for strings.EqualFold(p.peek(), "OR") {
		p.next()
		right, err := p.and()
		if err != nil {
			return nil, err
		}
		l := left
		left = func(item map[string]types.AttributeValue, b *bindings) (bool, error) {
			ok, err := l(item, b)
			if err != nil || ok {
				return ok, err
			}
			return right(item, b)
		}
	}
	return left, nil
}

func (p *parser) and() (cond, error) {
	left, err := p.not()
	if err != nil {
		return nil, err
	}
	for strings.EqualFold(p.peek(), "AND") {
		p.next()
		right, err := p.not()
		if err != nil {
			return nil, err
		}
		l := left
		left = func(item map[string]types.AttributeValue, b *bindings) (bool, error) {
			ok, err := l(item, b)
			if err != nil || !ok {
				return false, err
			}
			return right(item, b)
		}
	}
	return left, nil
}

func (p *parser) not() (cond, error) {
	tok := p.next()
	switch {
	case strings.EqualFold(tok, "NOT"):
		inner, err := p.not()
		if err != nil {
			return nil, err
		}
		return func(item map[string]types.AttributeValue, b *bindings) (bool, error) {
			ok, err := inner(item, b)
			return !ok, err
		}, nil
	case tok == "(":
		inner, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.next() != ")" {
			return nil, p.fail("missing )")
		}
		return inner, nil
	case tok == "attribute_exists" || tok == "attribute_not_exists":
		args, err := p.args(1)
		if err != nil {
			return nil, err
		}
		want := tok == "attribute_exists"
		return func(item map[string]types.AttributeValue, b *bindings) (bool, error) {
			n, err := b.name(args[0])
			if err != nil {
				return false, err
			}
			_, present := item[n]
			return present == want, nil
		}, nil
	case tok == "begins_with":
		args, err := p.args(2)
		if err != nil {
			return nil, err
		}
		return func(item map[string]types.AttributeValue, b *bindings) (bool, error) {
			v, err := b.operand(args[0], item)
			if err != nil {
				return false, err
			}
			prefix, err := b.operand(args[1], item)
			if err != nil {
				return false, err
			}
			s, ok1 := v.(*types.AttributeValueMemberS)
			ps, ok2 := prefix.(*types.AttributeValueMemberS)
			return ok1 && ok2 && strings.HasPrefix(s.Value, ps.Value), nil
		}, nil
	case isOperand(tok):
		op, right := p.next(), p.next()
		if !isComparator(op) || !isOperand(right) {
			return nil, p.fail("expected a comparison after %s", tok)
		}
		return func(item map[string]types.AttributeValue, b *bindings) (bool, error) {
			l, err := b.operand(tok, item)
			if err != nil {
				return false, err
			}
			r, err := b.operand(right, item)
			if err != nil {
				return false, err
			}
			return compare(l, op, r), nil
		}, nil
	}
	return nil, p.fail("unexpected %q", tok)
}

// args reads "(" operand {"," operand} ")" with exactly n operands.
func (p *parser) args(n int) ([]string, error) {
	if p.next() != "(" {
		return nil, p.fail("expected (")
	}
	var out []string
	for {
		tok := p.next()
		if !isOperand(tok) {
			return nil, p.fail("expected an operand, got %q", tok)
		}
		out = append(out, tok)
		switch p.next() {
		case ",":
			continue
		case ")":
			if len(out) != n {
				return nil, p.fail("want %d arguments, got %d", n, len(out))
			}
			return out, nil
		default:
			return nil, p.fail("expected , or )")
		}
	}
}

func isComparator(op string) bool {
	switch op {
	case "=", "<>", "<", "<=", ">", ">=":
		return true
	}
	return false
}

func isOperand(tok string) bool {
	if tok == "" {
		return false
	}
	r := rune(tok[0])
	return r == '#' || r == ':' || unicode.IsLetter(r) || r == '_'
}

// compare applies a comparator the way DynamoDB does: values of different
// types are never equal nor ordered, and an absent operand compares false.
func compare(l types.AttributeValue, op string, r types.AttributeValue) bool {
	if l == nil || r == nil {
		return op == "<>" && (l != nil || r != nil)
	}
	c, ok := order(l, r)
	if !ok {
		return op == "<>"
	}
	switch op {
	case "=":
		return c == 0
	case "<>":
		return c != 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	default: // ">="
		return c >= 0
	}
}

// order compares two scalars of the same type (S, N, BOOL for equality);
// ok is false for anything else.
func order(l, r types.AttributeValue) (int, bool) {
	switch lv := l.(type) {
	case *types.AttributeValueMemberS:
		rv, ok := r.(*types.AttributeValueMemberS)
		if !ok {
			return 0, false
		}
		return strings.Compare(lv.Value, rv.Value), true
	case *types.AttributeValueMemberN:
		rv, ok := r.(*types.AttributeValueMemberN)
		if !ok {
			return 0, false
		}
		// Versions and counters are integers: compared as such, without the
		// two big.Rat a decimal needs.
		if a, errA := strconv.ParseInt(lv.Value, 10, 64); errA == nil {
			if b, errB := strconv.ParseInt(rv.Value, 10, 64); errB == nil {
				return cmp.Compare(a, b), true
			}
		}
		a, okA := new(big.Rat).SetString(lv.Value)
		b, okB := new(big.Rat).SetString(rv.Value)
		if !okA || !okB {
			return 0, false
		}
		return a.Cmp(b), true
	case *types.AttributeValueMemberBOOL:
		rv, ok := r.(*types.AttributeValueMemberBOOL)
		if !ok || lv.Value != rv.Value {
			return 1, ok
		}
		return 0, true
	}
	return 0, false
}

// tokenize splits an expression into names, placeholders, keywords,
// comparators and punctuation.
func tokenize(expr string) []string {
	var toks []string
	for i := 0; i < len(expr); {
		c := expr[i]
		switch c {
		case ' ', '\t', '\n':
			i++
		case '(', ')', ',', '=':
			toks = append(toks, string(c))
			i++
		case '<', '>':
			j := i + 1
			if j < len(expr) && (expr[j] == '=' || (c == '<' && expr[j] == '>')) {
				j++
			}
			toks = append(toks, expr[i:j])
			i = j
		default:
			j := i
			for j < len(expr) && !strings.ContainsRune(" \t\n(),=<>", rune(expr[j])) {
				j++
			}
			toks = append(toks, expr[i:j])
			i = j
		}
	}
	return toks
}
