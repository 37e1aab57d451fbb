package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// `make install` stamps the version and commit: `maasflow version` of the
// installed binary never says (devel).
func TestMakeInstallStampsVersionAndCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	for _, tool := range []string{"make", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to test make install: %v", tool, err)
		}
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	bin := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "make", "-s", "install", "VERSION=v9.8.7-test", "COMMIT=0123456789abcdef")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOBIN="+bin)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "make install: %s", out)

	out, err = exec.CommandContext(t.Context(), filepath.Join(bin, "maasflow"), "version", "-o", "json").Output() //nolint:gosec // the binary make install just built
	require.NoError(t, err)
	var v adminVersion
	require.NoError(t, json.Unmarshal(out, &v), string(out))
	assert.Equal(t, "v9.8.7-test", v.Version)
	assert.NotEmpty(t, v.Commit)
	assert.NotContains(t, string(out), "(devel)")
}
