package main

import (
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/tableaccess"
)

// narrowerThanTheCode are the functions whose table grants may be a part of
// what the call analysis finds, each with why the rest is unreachable in a
// way the analysis cannot see. Their grants must still be within it.
var narrowerThanTheCode = map[string]string{
	functionStream: "the stream function serves the admin API's route table filtered to the GET …/stream routes at run time " +
		"(api.NewStreams); the analysis sees the whole table, writes included",
}

// tableGrantDiff lists where a function's table grants (its access) differ
// from what its code can reach (found), naming the function and the action
// or index, with the call chain that reaches an action not granted.
func tableGrantDiff(fn string, acc access, found tableaccess.Access) []string {
	var out []string
	_, narrower := narrowerThanTheCode[fn]
	compare := func(what string, granted, reached []string, key func(string) string) {
		for _, g := range granted {
			if !slices.Contains(reached, g) {
				out = append(out, fmt.Sprintf("functions/%s: %s %s is granted (infra/grants.go) but no code of the function reaches it: remove it", fn, what, g))
			}
		}
		if narrower {
			return
		}
		for _, r := range reached {
			if !slices.Contains(granted, r) {
				out = append(out, fmt.Sprintf("functions/%s: %s %s is not granted (infra/grants.go) but the code reaches it: %s", fn, what, r, found.Why[key(r)]))
			}
		}
	}
	compare("item action", acc.itemActions(), found.Items, func(a string) string { return a })
	compare("index", acc.indexes, found.Indexes, func(ix string) string { return "index " + ix })
	return out
}

// TestTableGrantsFollowTheCode compares every function's table grants with
// a static call analysis of its code (internal/tableaccess): each item
// action and index granted must be reachable from the function's main, and
// each reachable one granted. It loads and analyses functions/... (about
// 15 s, docs/benchmarks.md).
func TestTableGrantsFollowTheCode(t *testing.T) {
	found, err := tableaccess.Analyze("..", allIndexes())
	require.NoError(t, err)
	fns, err := DiscoverFunctions("../" + functionsDir)
	require.NoError(t, err)
	sort.Strings(fns)
	require.NotEmpty(t, fns)

	var bad []string
	for _, fn := range fns {
		acc, ok := functionAccess[fn]
		if !ok {
			bad = append(bad, fmt.Sprintf("functions/%s: no entry in functionAccess", fn))
			continue
		}
		f, ok := found[fn]
		if !ok {
			bad = append(bad, fmt.Sprintf("functions/%s: the analysis found no main package", fn))
			continue
		}
		bad = append(bad, tableGrantDiff(fn, acc, f)...)
	}
	require.Empty(t, bad, "table grants that differ from the code's calls")

	// The analysis tells functions apart: a function that only stores a
	// token is not given what a run's record writer needs.
	require.Equal(t, []string{"dynamodb:PutItem"}, found[functionWatchMachine].Items)
	require.Contains(t, found[functionAPI].Items, "dynamodb:ConditionCheckItem", "the enrollment's transaction checks the token's row")
}

// TestTableGrantDiffNamesFunctionAndAction proves the comparison fails, in
// both directions, on items and on indexes, naming what differs.
func TestTableGrantDiffNamesFunctionAndAction(t *testing.T) {
	found := tableaccess.Access{
		Items:   []string{"dynamodb:GetItem", "dynamodb:PutItem"},
		Indexes: []string{"gsi3"},
		Why:     map[string]string{"dynamodb:PutItem": "main → put", "index gsi3": "main → list"},
	}
	require.Empty(t, tableGrantDiff("check-machine", access{items: []string{"dynamodb:GetItem", "dynamodb:PutItem"}, indexes: []string{"gsi3"}}, found))

	got := tableGrantDiff("check-machine", access{items: []string{"dynamodb:GetItem", "dynamodb:DeleteItem"}, indexes: []string{"gsi1"}}, found)
	require.Equal(t, []string{
		"functions/check-machine: item action dynamodb:DeleteItem is granted (infra/grants.go) but no code of the function reaches it: remove it",
		"functions/check-machine: item action dynamodb:PutItem is not granted (infra/grants.go) but the code reaches it: main → put",
		"functions/check-machine: index gsi1 is granted (infra/grants.go) but no code of the function reaches it: remove it",
		"functions/check-machine: index gsi3 is not granted (infra/grants.go) but the code reaches it: main → list",
	}, got)

	// A function narrower than the code may lack what is reached, but may
	// not hold what is not.
	require.Empty(t, tableGrantDiff(functionStream, access{items: []string{"dynamodb:GetItem"}}, found))
	require.Equal(t, []string{
		"functions/stream: item action dynamodb:UpdateItem is granted (infra/grants.go) but no code of the function reaches it: remove it",
	}, tableGrantDiff(functionStream, access{items: []string{"dynamodb:GetItem", "dynamodb:UpdateItem"}}, found))
}
