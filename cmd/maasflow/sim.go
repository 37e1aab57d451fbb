package main

import (
	"context"
	"fmt"
	"io"
)

func runSim(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "maasflow sim: not built yet")
	return 1
}
