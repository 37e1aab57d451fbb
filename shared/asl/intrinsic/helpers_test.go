package intrinsic

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ohler55/ojg/jp"
	"github.com/ohler55/ojg/oj"
	"github.com/stretchr/testify/require"
)

// pathNotFoundError stands in for the interpreter's own resolver error, so
// tests can check that Eval returns resolver errors unchanged.
type pathNotFoundError struct{ path string }

func (e *pathNotFoundError) Error() string { return "path not found: " + e.path }

// docResolver resolves "$…" against input and "$$…" against context, both
// JSON texts, with ojg's JSONPath.
func docResolver(t testing.TB, input, context string) func(string) (any, error) {
	t.Helper()
	in := parseJSON(t, input)
	ctx := parseJSON(t, context)
	return func(path string) (any, error) {
		root := in
		if strings.HasPrefix(path, "$$") {
			root, path = ctx, path[1:]
		}
		x, err := jp.ParseString(path)
		if err != nil {
			return nil, err
		}
		got := x.Get(root)
		if len(got) == 0 {
			return nil, &pathNotFoundError{path: path}
		}
		return got[0], nil
	}
}

func parseJSON(t testing.TB, s string) any {
	t.Helper()
	if s == "" {
		return nil
	}
	v, err := oj.ParseString(s)
	require.NoError(t, err, "test JSON %s", s)
	return v
}

// fixedEntropy is a deterministic entropy source for States.UUID and an
// unseeded States.MathRandom.
func fixedEntropy(seed byte) *rand.ChaCha8 {
	var key [32]byte
	key[0] = seed
	return rand.NewChaCha8(key)
}

// evalExpr parses expr and evaluates it against the input and context JSON
// texts with deterministic entropy.
func evalExpr(t testing.TB, expr, input, context string) (any, error) {
	t.Helper()
	c, err := Parse(expr)
	require.NoError(t, err, "parse %s", expr)
	return c.EvalWith(docResolver(t, input, context), fixedEntropy(1))
}
