package client_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/client"
)

func TestSKUProposalAndApprovalThroughTheSDK(t *testing.T) {
	ctx := context.Background()
	alice, carol := realAPIPair(t)
	_, err := alice.CreateSKU(ctx, client.SKUCreate{ID: "h100-8x", GPUModel: "H100", GPUsTotal: 8})
	require.NoError(t, err)

	proposed, err := alice.UpdateSKU(ctx, "h100-8x", client.SKUPatch{Active: ptr(false), Reason: ptr("EOL")})
	require.NoError(t, err)
	assert.True(t, proposed.Active, "unchanged until approved")
	require.NotNil(t, proposed.Proposal)
	assert.Equal(t, "alice", proposed.Proposal.ProposedBy)

	_, err = alice.ApproveSKU(ctx, "h100-8x", client.SKUDecide{ProposalID: proposed.Proposal.ID})
	var apiErr *client.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusForbidden, apiErr.Status)

	approved, err := carol.ApproveSKU(ctx, "h100-8x", client.SKUDecide{ProposalID: proposed.Proposal.ID})
	require.NoError(t, err)
	assert.False(t, approved.Active)
	require.NotNil(t, approved.LastDecision)
	assert.Equal(t, "carol", approved.LastDecision.DecidedBy)

	nodes, err := alice.ListSKUNodes(ctx, "h100-8x", client.NodeFilter{}, "")
	require.NoError(t, err)
	assert.Empty(t, nodes.Items)
}
