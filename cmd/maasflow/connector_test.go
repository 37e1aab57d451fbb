package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConnectorFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  string
		want []string
	}{
		{name: "nothing", args: nil, want: []string{"--site is required", "--maas-url is required", "name a transport"}},
		{name: "both transports", args: []string{"--site", "s", "--maas-url", "http://m/MAAS", "--endpoint", "http://x", "--queue-url", "q"},
			want: []string{"exclude each other"}},
		{name: "half the AWS transport", args: []string{"--site", "s", "--maas-url", "http://m/MAAS", "--queue-url", "q"},
			want: []string{"needs both --queue-url and --table"}},
		{name: "local without token", args: []string{"--site", "s", "--maas-url", "http://m/MAAS", "--endpoint", "http://x"},
			want: []string{"$" + envConnectorToken}},
		{name: "workers", args: []string{"--site", "s", "--maas-url", "http://m/MAAS", "--endpoint", "http://x", "--workers", "0"},
			env: "tok", want: []string{"--workers must be at least 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(envConnectorToken, tt.env)
			var out, errOut bytes.Buffer
			assert.Equal(t, 2, runConnector(context.Background(), tt.args, &out, &errOut))
			for _, w := range tt.want {
				assert.Contains(t, errOut.String(), w)
			}
		})
	}
}

func TestConnectorRefusesABadKeyFileWithoutEchoingIt(t *testing.T) {
	t.Setenv(envConnectorToken, "tok")
	key := filepath.Join(t.TempDir(), "maas.key")
	require.NoError(t, os.WriteFile(key, []byte("not-a-key-secretvalue"), 0o600))
	var out, errOut bytes.Buffer
	code := runConnector(context.Background(), []string{"--site", "s", "--maas-url", "http://m/MAAS", "--endpoint", "http://x",
		"--maas-api-key-file", key, "--state-dir", t.TempDir()}, &out, &errOut)
	assert.Equal(t, 2, code)
	assert.NotContains(t, errOut.String(), "secretvalue")
	assert.NotEmpty(t, versionOfConnector())
}
