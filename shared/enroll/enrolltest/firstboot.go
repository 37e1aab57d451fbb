// Package enrolltest plays a node's first boot for tests: cloud-init's
// write_files, then every runcmd entry in order through /bin/sh, each even
// when the one before failed, in a temporary node root
// (MAASFLOW_FIRSTBOOT_ROOT). PATH holds only the programs the first-boot
// scripts need plus a stub oras that "pulls" a stub node agent package, so
// a script can reach nothing else: no real registry, and every proxy
// variable points at a closed local port for any host other than 127.0.0.1.
// The first-boot tests of shared/enroll and the local stack's use it.
package enrolltest

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// tools are the programs the scripts and the test's stubs call
// besides /bin/sh and shell builtins (Debian: python3, coreutils, curl,
// openssl; .ci/run installs them).
var tools = []string{"python3", "mkdir", "rm", "touch", "cp", "curl", "openssl"}

// RequireTool fails under CI=true, where every test must run, and skips with
// the reason elsewhere.
func RequireTool(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("first-boot scripts cannot run: %s", msg)
	}
	t.Skipf("first-boot scripts cannot run: %s", msg)
}

// ToolDir builds a directory of links to exactly tools. python3 is
// linked to the interpreter itself (sys.executable), not to a wrapper such as
// a pyenv shim that would need more of the host's PATH.
func ToolDir(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat("/bin/sh"); err != nil {
		RequireTool(t, "/bin/sh (cloud-init runs each runcmd entry with it): %v", err)
	}
	dir := t.TempDir()
	for _, tool := range tools {
		path, err := exec.LookPath(tool)
		if err != nil {
			RequireTool(t, "%s is not on PATH (Debian: python3, coreutils, curl, openssl)", tool)
		}
		if tool == "python3" {
			out, err := exec.CommandContext(t.Context(), path, "-c", "import sys; print(sys.executable)").Output() //nolint:gosec // G204: the python3 found on PATH, by design
			if err != nil {
				RequireTool(t, "python3 does not run: %v", err)
			}
			path = strings.TrimSpace(string(out))
		}
		require.NoError(t, os.Symlink(path, filepath.Join(dir, tool)))
	}
	return dir
}

// InstallerScript is an install-node-agent.sh that records its argument and
// GPUAAS_NODE_AGENT_ENV_FILE, then exits with status.
func InstallerScript(status int) string {
	return `#!/bin/sh
printf '%s\n' "$@" "$GPUAAS_NODE_AGENT_ENV_FILE" >"$MAASFLOW_FIRSTBOOT_ROOT/installer.args"
exit ` + strconv.Itoa(status) + "\n"
}

// Node is one temporary node root with the tools, the stub oras and the
// package it "pulls".
type Node struct {
	// Root is the node's file system; Tools the directory PATH names.
	Root  string
	Tools string
}

func NewNode(t testing.TB, orasStatus, installerStatus int) *Node {
	t.Helper()
	n := &Node{Root: t.TempDir(), Tools: ToolDir(t)}
	require.NoError(t, os.MkdirAll(filepath.Join(n.Root, "tmp"), 0o750))
	pkg := filepath.Join(n.Root, "registry", "install-node-agent.sh")
	require.NoError(t, os.MkdirAll(filepath.Dir(pkg), 0o750))
	require.NoError(t, os.WriteFile(pkg, []byte(InstallerScript(installerStatus)), 0o700)) //nolint:gosec // G306: an executable stub in t.TempDir
	// The stub oras copies the package into --output, never touching a network.
	oras := fmt.Sprintf(`#!/bin/sh
printf '%%s\n' "$@" >"$MAASFLOW_FIRSTBOOT_ROOT/oras.args"
[ "$1" = pull ] && [ "$2" = --output ] || exit 64
cp %q "$3/install-node-agent.sh"
exit %d
`, pkg, orasStatus)
	require.NoError(t, os.WriteFile(filepath.Join(n.Tools, "oras"), []byte(oras), 0o700)) //nolint:gosec // G306: an executable stub in t.TempDir
	return n
}

func (n *Node) Path(p string) string { return filepath.Join(n.Root, p) }

func (n *Node) Env() []string {
	const deadProxy = "http://127.0.0.1:9"
	return []string{
		"PATH=" + n.Tools,
		"HOME=" + n.Root,
		"TMPDIR=" + n.Path("tmp"),
		"LC_ALL=C",
		"MAASFLOW_FIRSTBOOT_ROOT=" + n.Root,
		"MAASFLOW_FIRSTBOOT_BACKOFF=0.01",
		"http_proxy=" + deadProxy, "https_proxy=" + deadProxy, "all_proxy=" + deadProxy,
		"HTTP_PROXY=" + deadProxy, "HTTPS_PROXY=" + deadProxy, "ALL_PROXY=" + deadProxy,
		"no_proxy=127.0.0.1", "NO_PROXY=127.0.0.1",
	}
}

// StepResult is what one runcmd entry printed and its exit status.
type StepResult struct {
	Stdout, Stderr string
	Status         int
}

// Boot plays cloud-init on userData: it writes every write_files entry with
// its permissions, then runs every runcmd entry, and returns their results.
// rewrite, when set, is given each file's path and content and returns
// the content to write (to check what the scripts themselves refuse).
func (n *Node) Boot(t testing.TB, userData []byte, rewrite func(path string, content []byte) []byte) []StepResult {
	t.Helper()
	var cc struct {
		WriteFiles []struct {
			Path        string `yaml:"path"`
			Permissions string `yaml:"permissions"`
			Content     string `yaml:"content"`
		} `yaml:"write_files"`
		RunCmd [][]string `yaml:"runcmd"`
	}
	require.NoError(t, yaml.Unmarshal(userData, &cc))
	for _, f := range cc.WriteFiles {
		content, err := base64.StdEncoding.DecodeString(f.Content)
		require.NoError(t, err)
		if rewrite != nil {
			content = rewrite(f.Path, content)
		}
		mode, err := strconv.ParseUint(f.Permissions, 8, 32)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(n.Path(f.Path)), 0o750))
		require.NoError(t, os.WriteFile(n.Path(f.Path), content, fs.FileMode(mode)))
		require.NoError(t, os.Chmod(n.Path(f.Path), fs.FileMode(mode)))
	}
	results := make([]StepResult, 0, len(cc.RunCmd))
	for _, argv := range cc.RunCmd {
		require.NotEmpty(t, argv)
		cmd := exec.CommandContext(t.Context(), argv[0], argv[1:]...) //nolint:gosec // G204: running the rendered runcmd entries is what this test is for
		cmd.Dir = n.Root
		cmd.Env = n.Env()
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		status := 0
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			status = exit.ExitCode()
		case err != nil:
			t.Fatalf("run %s: %v", argv[0], err)
		}
		results = append(results, StepResult{Stdout: stdout.String(), Stderr: stderr.String(), Status: status})
	}
	require.Len(t, results, 2, "the payload runs the site launcher, then the node bootstrap")
	return results
}

func (n *Node) Exists(p string) bool {
	_, err := os.Stat(n.Path(p))
	return err == nil
}

func (n *Node) Lines(t testing.TB, p string) []string {
	t.Helper()
	raw, err := os.ReadFile(n.Path(p))
	require.NoError(t, err, p)
	return strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
}

func (n *Node) Mode(t testing.TB, p string) fs.FileMode {
	t.Helper()
	info, err := os.Stat(n.Path(p))
	require.NoError(t, err, p)
	return info.Mode().Perm()
}
