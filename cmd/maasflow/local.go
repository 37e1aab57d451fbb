package main

import (
	"context"
	"fmt"
	"io"
)

func runLocal(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "maasflow local: not built yet")
	return 1
}
