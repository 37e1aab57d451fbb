package admin

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const adminTestToken = "test-admin-token"

func TestAdminPlainHTTPToRemoteHostWarns(t *testing.T) {
	r := &adminRun{cli: &cli{env: &cliEnv{stderr: &strings.Builder{}, getenv: func(k string) string {
		return map[string]string{envAdminToken: adminTestToken}[k]
	}}, apiURL: "http://maasflow.example.com"}}
	_, err := r.client()
	require.NoError(t, err)
	msg := r.env.stderr.(*strings.Builder).String()
	assert.Contains(t, msg, "warning: sending the admin token over plain http to maasflow.example.com")
	assert.NotContains(t, msg, adminTestToken)
}
