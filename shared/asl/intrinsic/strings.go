package intrinsic

import (
	"strings"

	"github.com/google/uuid"
)

// statesFormat implements States.Format(template, values...): each "{}" in
// the template is replaced by the next value. A literal template's escaped
// \{\} is text, not a placeholder; a template read from a path has no escapes.
func statesFormat(_ *env, c *Call, args []any) (any, error) {
	const name = "States.Format"
	if len(args) == 0 {
		return nil, fail(name, "takes a template and the values for its {} placeholders, got no arguments")
	}
	tmpl, err := stringArg(name, args, 0)
	if err != nil {
		return nil, err
	}
	var holes []int
	if first := c.args[0]; first.kind == argLiteral {
		holes = first.holes
	} else {
		holes = findHoles(tmpl)
	}
	if len(holes) != len(args)-1 {
		return nil, fail(name, "the template has %d {} placeholder%s but %d value%s %s given",
			len(holes), plural(len(holes)), len(args)-1, plural(len(args)-1), wasWere(len(args)-1))
	}
	var sb strings.Builder
	sb.Grow(len(tmpl) + 16*len(holes))
	prev := 0
	for i, h := range holes {
		sb.WriteString(tmpl[prev:h])
		appendText(&sb, args[i+1])
		prev = h + 2
	}
	sb.WriteString(tmpl[prev:])
	return sb.String(), nil
}

func wasWere(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

func findHoles(s string) []int {
	var holes []int
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '{' && s[i+1] == '}' {
			holes = append(holes, i)
			i++
		}
	}
	return holes
}

// stringSplit implements States.StringSplit(string, delimiters): every
// character of the second argument is a delimiter ("This.is+a,test=string"
// split on ".+,=" gives five words) and empty pieces are dropped.
func stringSplit(_ *env, _ *Call, args []any) (any, error) {
	const name = "States.StringSplit"
	if err := wantArgs(name, args, 2); err != nil {
		return nil, err
	}
	s, err := stringArg(name, args, 0)
	if err != nil {
		return nil, err
	}
	delims, err := stringArg(name, args, 1)
	if err != nil {
		return nil, err
	}
	parts := strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(delims, r) })
	out := make([]any, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out, nil
}

// uuidV4 implements States.UUID(): a random version 4 UUID.
func uuidV4(e *env, _ *Call, args []any) (any, error) {
	const name = "States.UUID"
	if err := wantArgs(name, args, 0); err != nil {
		return nil, err
	}
	id, err := uuid.NewRandomFromReader(e.entropy)
	if err != nil {
		return nil, fail(name, "read entropy: %v", err)
	}
	return id.String(), nil
}
