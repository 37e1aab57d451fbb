package main

import (
	"context"
	"fmt"
	"io"
)

func runASL(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "maasflow asl: not built yet")
	return 1
}
