package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRunUnknownCommand(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"nope"}, &out, &errb)
	assert.Equal(t, 2, code)
	assert.Contains(t, errb.String(), `unknown command "nope"`)
}

func TestRunHelp(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Equal(t, 0, run(context.Background(), []string{"help"}, &out, &errb))
	assert.Contains(t, out.String(), "local")
}
