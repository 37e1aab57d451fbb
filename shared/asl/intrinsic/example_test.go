package intrinsic_test

import (
	"fmt"

	"github.com/maasflow/maasflow/shared/asl/intrinsic"
)

// The interpreter parses a ".$" field once while validating the definition,
// then evaluates it each time the state runs, resolving JSONPath arguments
// against the state's input and context object.
func Example() {
	field := "States.Format('{}-{}', $.site, States.ArrayLength($.nodes))"
	if !intrinsic.IsCall(field) {
		return
	}
	call, err := intrinsic.Parse(field)
	if err != nil {
		fmt.Println(err)
		return
	}
	input := map[string]any{"site": "ams1", "nodes": []any{"n1", "n2", "n3"}}
	out, err := call.Eval(func(path string) (any, error) {
		return input[path[len("$."):]], nil
	})
	fmt.Println(out, err)
	// Output: ams1-3 <nil>
}
