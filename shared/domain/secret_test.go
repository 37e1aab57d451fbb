package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSecretNeverPrints(t *testing.T) {
	s := Secret("hunter2")
	creds := SiteCredentials{MAASAPIKey: "a:b:c", BMCUsername: "admin", BMCPassword: s}

	b, err := json.Marshal(creds)
	require.NoError(t, err)
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", "secret", s, "creds", creds)

	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%#v", creds), fmt.Sprintf("%+v", creds), string(b), logs.String()} {
		assert.NotContains(t, out, "hunter2")
		assert.NotContains(t, out, "a:b:c")
	}
	assert.Equal(t, "hunter2", s.Reveal())
}
