package maas

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The declared length only sizes the buffer: the body read is what came,
// whatever the header said, and never more than the limit.
func TestReadBodyTrustsTheBodyNotItsDeclaredLength(t *testing.T) {
	const body = `{"system_id":"abc123","hostname":"gpu-01"}`
	tests := []struct {
		name     string
		declared int64
		limit    int64
		want     string
	}{
		{name: "exact", declared: int64(len(body)), limit: 1 << 20, want: body},
		{name: "unknown", declared: -1, limit: 1 << 20, want: body},
		{name: "declared shorter", declared: 5, limit: 1 << 20, want: body},
		{name: "declared longer", declared: 1 << 10, limit: 1 << 20, want: body},
		{name: "limit below the body", declared: int64(len(body)), limit: 10, want: body[:10]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// One byte per Read, so that the buffer fills exactly and must grow.
			resp := &http.Response{ContentLength: tc.declared, Body: io.NopCloser(iotest.OneByteReader(strings.NewReader(body)))}
			got, err := readBody(resp, tc.limit)
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
		})
	}
}

func TestReadBodyReturnsTheReadError(t *testing.T) {
	resp := &http.Response{ContentLength: 100, Body: io.NopCloser(iotest.TimeoutReader(strings.NewReader("x")))}
	// TimeoutReader answers the second Read with ErrTimeout.
	_, err := readBody(resp, 1<<20)
	assert.ErrorIs(t, err, iotest.ErrTimeout)
}
