package main

import (
	"context"
	"fmt"
	"io"
)

func runAdmin(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "maasflow: admin commands not built yet")
	return 1
}
