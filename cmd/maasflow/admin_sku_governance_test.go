package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/localstack"
)

// TestCLISKUProposalNeedsASecondAdmin: skus patch --active=false proposes,
// the proposer's skus approve is refused, a second admin's is applied, and
// skus nodes lists the SKU's nodes.
func TestCLISKUProposalNeedsASecondAdmin(t *testing.T) {
	const second = "cli-second-admin-token"
	stack, err := localstack.Start(context.Background(), localstack.Config{
		Listen: "127.0.0.1:0", SimListen: "127.0.0.1:0", TimeScale: 600, DataDir: t.TempDir(),
		Admins: map[string]string{second: "second-admin"},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = stack.Close() })
	as := func(token string, want int, args ...string) adminResult {
		t.Helper()
		res := runAdminTest(t, map[string]string{envAdminAPIURL: stack.APIURL, envAdminToken: token}, adminInvocation{}, args...)
		require.Equal(t, want, res.code, "maasflow %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), res.stdout, res.stderr)
		return res
	}
	as(stack.AdminToken, 0, "skus", "create", "--id", "h100x8", "--gpu-model", "H100", "--gpus-total", "8")

	proposed := as(stack.AdminToken, 0, "skus", "patch", "h100x8", "--active=false", "--reason", "EOL")
	assert.Regexp(t, `Active:\s+true`, proposed.stdout, "unchanged until approved")
	m := regexp.MustCompile(`Proposal:\s+(\S+): active=false by local-admin`).FindStringSubmatch(proposed.stdout)
	require.Len(t, m, 2, proposed.stdout)

	refused := as(stack.AdminToken, 1, "skus", "approve", "h100x8", "--proposal", m[1])
	assert.Contains(t, refused.stderr, "second admin")

	approved := as(second, 0, "skus", "approve", "h100x8", "--proposal", m[1])
	assert.Regexp(t, `Active:\s+false`, approved.stdout)
	assert.Regexp(t, `Last decision:\s+\S+ \(active=false\) proposed by local-admin, approved by second-admin`, approved.stdout)

	nodes := as(stack.AdminToken, 0, "skus", "nodes", "h100x8", "-o", "json")
	var page struct {
		Items []json.RawMessage `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(nodes.stdout), &page), nodes.stdout)
	assert.Empty(t, page.Items)
}
