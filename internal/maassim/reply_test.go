package maassim

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A JSON reply carries exactly json.Marshal's bytes (no trailing newline,
// HTML escaped), also when its buffer comes back from the pool used.
func TestJSONReplyWritesMarshalsBytes(t *testing.T) {
	values := []any{
		map[string]any{"hostname": "gpu-01", "html": "<a & b>", "n": 3},
		[]string{"x"},
		map[string]any{"short": true},
	}
	for _, v := range values {
		want, err := json.Marshal(v)
		require.NoError(t, err)
		rp := jsonReply(http.StatusOK, v)
		rec := httptest.NewRecorder()
		rp.write(rec)
		assert.Equal(t, string(want), rec.Body.String())
		assert.Equal(t, jsonType, rec.Header().Get("Content-Type"))
		assert.Equal(t, len(want), int(rec.Result().ContentLength))
	}
}
