package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll"
)

// testBundles is what the harness's reissued bundles hold besides the
// node and its token.
var testBundles = BundleConfig{
	Package: enroll.Package{OCIRef: "registry.internal/gpuaas/node-agent:1.4.2", Digest: "sha256:" + strings.Repeat("0f", 32)}}

// reissue asks for a new bootstrap bundle of the node and returns its
// token.
func (h *harness) reissue(nodeID string) string {
	h.t.Helper()
	r := h.mustAdmin(http.StatusCreated, "POST", "/api/v1/admin/nodes/"+nodeID+"/bootstrap-bundle", nil)
	return r["bootstrap_bundle"].(map[string]any)["GPUAAS_ENROLLMENT_TOKEN"].(string)
}

func TestReissueForAStoppedOnboardingEnrollsWithoutActivating(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	const deployToken = "stopped-run-token-7Hq2aa"
	e := waitingRun(h, "gpu-rs", deployToken)

	r := h.admin("POST", "/api/v1/admin/nodes/"+e.nodeID+"/bootstrap-bundle", nil)
	require.Equal(t, http.StatusConflict, r.status, "a running workflow owns the token: %s", r.body)

	h.closeAs(e.onboardingID, domain.OnboardingManualIntervention, "DeployFailed")
	token := h.reissue(e.nodeID)
	tok, err := h.store.GetEnrollmentToken(ctx, enroll.HashToken(token))
	require.NoError(t, err)
	assert.Equal(t, e.onboardingID, tok.OnboardingID, "bound to the stopped onboarding")
	assert.Equal(t, 1, tok.Attempt)
	assert.True(t, tok.ForStoppedRun)
	o, err := h.store.GetOnboarding(ctx, e.onboardingID)
	require.NoError(t, err)
	assert.Equal(t, enroll.HashToken(token), o.EnrollmentTokenHash, "the attempt's token now")
	assert.Equal(t, domain.OnboardingManualIntervention, o.Status)

	assert.Equal(t, http.StatusUnauthorized, h.enroll(e.nodeID, deployToken).status, "the run's own token stays revoked")
	got := h.enroll(e.nodeID, token)
	require.Equal(t, http.StatusOK, got.status, "%s", got.body)

	node, err := h.store.GetNode(ctx, e.nodeID)
	require.NoError(t, err)
	assert.NotEqual(t, domain.NodeActive, node.Status, "not active by the enrollment alone")
	assert.NotNil(t, node.EnrolledAt)
	o, err = h.store.GetOnboarding(ctx, e.onboardingID)
	require.NoError(t, err)
	assert.Equal(t, domain.OnboardingManualIntervention, o.Status, "the enrollment reopens nothing")
	assert.Empty(t, h.completer.completions(), "and completes nothing")
	rows, err := h.store.ListOnboardingEvents(ctx, e.onboardingID)
	require.NoError(t, err)
	var notes []string
	for _, row := range rows {
		if row.Source == "bootstrap-bundle" || row.Source == "enrollment" {
			notes = append(notes, row.Source+" "+row.Outcome)
			assert.NotContains(t, row.Detail, token, "no token on the timeline")
		}
	}
	assert.Equal(t, []string{"bootstrap-bundle reissued", "enrollment refused", "enrollment enrolled"}, notes,
		"the reissue, the run's own token refused, the reissued one enrolled")
	var results []string
	for _, a := range h.auditFor("node.bootstrap_bundle.reissue") {
		results = append(results, a.Result)
	}
	assert.ElementsMatch(t, []string{"success", "failure:workflow_open"}, results)
}

func TestReissuedTokenOfAStoppedRunIsRefusedOnceARerunSupersedesIt(t *testing.T) {
	h := newHarness(t)
	e := waitingRun(h, "gpu-rr", "superseded-run-token-3Kk9")
	h.closeAs(e.onboardingID, domain.OnboardingManualIntervention, "DeployFailed")
	token := h.reissue(e.nodeID)

	h.mustAdmin(http.StatusOK, "POST", obsPath+"/"+e.onboardingID+"/rerun", nil)
	r := h.enroll(e.nodeID, token)
	require.Equal(t, http.StatusUnauthorized, r.status, "%s", r.body)
	node, err := h.store.GetNode(context.Background(), e.nodeID)
	require.NoError(t, err)
	assert.NotEqual(t, domain.NodeActive, node.Status)
	assert.Nil(t, node.EnrolledAt)
}

func TestReissueForAFailedOnboardingOfANodeNeverActiveBindsToIt(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	e := waitingRun(h, "gpu-rf", "failed-run-token-5Tt1bb")
	h.closeAs(e.onboardingID, domain.OnboardingFailed, "DeployFailed")
	token := h.reissue(e.nodeID)
	tok, err := h.store.GetEnrollmentToken(ctx, enroll.HashToken(token))
	require.NoError(t, err)
	assert.Equal(t, e.onboardingID, tok.OnboardingID)
	assert.True(t, tok.ForStoppedRun)

	require.Equal(t, http.StatusOK, h.enroll(e.nodeID, token).status)
	node, err := h.store.GetNode(ctx, e.nodeID)
	require.NoError(t, err)
	assert.NotEqual(t, domain.NodeActive, node.Status, "a failed run's node is not activated by an enrollment")
	o, err := h.store.GetOnboarding(ctx, e.onboardingID)
	require.NoError(t, err)
	assert.Equal(t, domain.OnboardingFailed, o.Status)
}
