// Command aslgen writes each state machine's ASL JSON from its source:
// statemachines/src/<name>.asl.yaml, read after statemachines/src/errors.yaml,
// becomes statemachines/<name>.asl.json. Run from statemachines/ (go
// generate does), or give that directory as the only argument.
package main

import (
	"fmt"
	"os"

	"github.com/maasflow/maasflow/statemachines/internal/aslsrc"
)

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := aslsrc.WriteAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, "aslgen:", err)
		os.Exit(1)
	}
}
