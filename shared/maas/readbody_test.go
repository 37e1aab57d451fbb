package maas

import (
	"io"
	"net/http"
	"net/http/httptest"
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
			got, err := readBody(resp, tc.limit, nil)
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
			// Into a used buffer, too small or large enough: only the new body.
			for _, used := range [][]byte{[]byte("old"), append(make([]byte, 0, 4096), "old bytes"...)} {
				resp.Body = io.NopCloser(iotest.OneByteReader(strings.NewReader(body)))
				got, err := readBody(resp, tc.limit, used)
				require.NoError(t, err)
				assert.Equal(t, tc.want, string(got))
			}
		})
	}
}

func TestReadBodyReturnsTheReadError(t *testing.T) {
	resp := &http.Response{ContentLength: 100, Body: io.NopCloser(iotest.TimeoutReader(strings.NewReader("x")))}
	// TimeoutReader answers the second Read with ErrTimeout.
	_, err := readBody(resp, 1<<20, nil)
	assert.ErrorIs(t, err, iotest.ErrTimeout)
}

// A reply's buffer goes back to the pool once decoded: what was decoded
// from it stays as it was when the next reply reuses the buffer.
func TestDecodedRepliesOutliveTheirBuffers(t *testing.T) {
	bodies := []string{
		`{"system_id":"aaaaaa","hostname":"first","status":4,"zone":{"name":"z1"}}`,
		`{"system_id":"bbbbbb","hostname":"second-host-with-a-longer-name","status":6,"zone":{"name":"z2"}}`,
	}
	next := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, bodies[next%len(bodies)])
		next++
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL+"/MAAS", "a:b:c")
	require.NoError(t, err)
	var got []Machine
	for range 4 {
		m, err := c.Get(t.Context(), "aaaaaa")
		require.NoError(t, err)
		got = append(got, m)
	}
	for i, m := range got {
		want := []string{"first", "second-host-with-a-longer-name"}[i%2]
		assert.Equal(t, want, m.Hostname)
		assert.Equal(t, []string{"z1", "z2"}[i%2], m.Zone)
	}
}
