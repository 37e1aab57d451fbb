package decommission

import (
	"context"
	"fmt"

	"github.com/maasflow/maasflow/shared/activities"

	"github.com/maasflow/maasflow/shared/domain"
)

// StartReimageInput asks for the reimage's onboarding.
type StartReimageInput struct {
	DecommissionRef
}

// StartReimageOutput names the onboarding the reimage started.
type StartReimageOutput struct {
	OnboardingID string `json:"onboarding_id"`
}

// StartReimage starts a new onboarding for the same node identity (same
// node id, site, hostname, SKU, and the profile and BMC address of the
// node's last onboarding). Its discovery adopts the Ready machine by
// hostname, and its deploy mints a new single-use token; the node's
// earlier tokens are revoked here, so no bundle of the old OS can enroll.
// The onboarding id is stored on the decommission before the onboarding
// exists, so a repeat finds it and neither creates nor starts a second.
//
// Errors: activities.ActivityFailedError (no earlier onboarding to take the profile
// from, no workflow starter), store errors.
func (a *Activities) StartReimage(ctx context.Context, in StartReimageInput) (out StartReimageOutput, err error) {
	c, err := a.beginDecom(ctx, "StartReimage", domain.DecomStageReimage, in.DecommissionRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	if err := c.enter(ctx); err != nil {
		return out, err
	}
	if a.d.Starter == nil {
		return out, &activities.ActivityFailedError{Activity: c.Activity, Message: "no onboarding workflow starter configured"}
	}
	if c.Rec.OnboardingID == "" {
		id := a.d.NewID()
		if err := c.update(ctx, func(d *domain.Decommission) error {
			if d.OnboardingID == "" {
				d.OnboardingID = id
			}
			return nil
		}); err != nil {
			return out, err
		}
	}
	obID := c.Rec.OnboardingID
	ob, err := a.d.Store.GetOnboarding(ctx, obID)
	switch {
	case isStoreNotFound(err):
		if ob, err = c.createReimageOnboarding(ctx, obID); err != nil {
			return out, err
		}
	case err != nil:
		return out, activities.StoreError("read reimage onboarding", err)
	}
	if ob.ExecutionID == "" {
		execID, err := a.d.Starter.StartOnboarding(ctx, ob)
		if err != nil {
			// The workflow service's text may quote internals: its type only.
			return out, &ReimageStartError{OnboardingID: ob.ID, Message: fmt.Sprintf("the workflow service refused (%T)", activities.RootError(err))}
		}
		if _, err := a.d.Store.UpdateOnboarding(ctx, ob.ID, func(o *domain.Onboarding) error {
			o.ExecutionID = execID
			return nil
		}); err != nil {
			return out, activities.StoreError("record reimage execution", err)
		}
		if err := c.Note(ctx, "reimage", "onboarding "+ob.ID+" started: it adopts the Ready machine and redeploys it"); err != nil {
			return out, err
		}
	}
	return StartReimageOutput{OnboardingID: ob.ID}, nil
}

// createReimageOnboarding creates the reimage's onboarding and points the
// node at it (status onboarding, no enrollment yet), after revoking the
// node's earlier tokens.
func (c *dcall) createReimageOnboarding(ctx context.Context, id string) (domain.Onboarding, error) {
	st := c.a.d.Store
	node, err := st.GetNode(ctx, c.Rec.NodeID)
	if err != nil {
		return domain.Onboarding{}, activities.StoreError("read node", err)
	}
	last, ok, err := c.lastOnboarding(ctx)
	if err != nil {
		return domain.Onboarding{}, err
	}
	if !ok {
		return domain.Onboarding{}, &activities.ActivityFailedError{Activity: c.Activity,
			Message: "node " + node.ID + " has no earlier onboarding to take its profile and BMC address from"}
	}
	if err := c.revokeNodeTokens(ctx, node); err != nil {
		return domain.Onboarding{}, err
	}
	now := c.a.d.Clock.Now().UTC()
	sku := node.SKUID
	if sku == "" {
		sku = last.SKUID
	}
	ob := domain.Onboarding{
		ID: id, SiteID: node.SiteID, ProfileID: last.ProfileID, SKUID: sku, Hostname: node.Hostname,
		IPMIIP: last.IPMIIP, NodeID: node.ID, Status: domain.OnboardingPending, Stage: domain.StageValidate,
		Attempt: 1, CorrelationID: c.Rec.CorrelationID, CreatedBy: "decommission:" + c.Rec.ID, CreatedAt: now, UpdatedAt: now,
		// The machine may have changed while deployed: commission it again
		// so the hardware verification sees what it is now.
		RecommissionReady: true,
	}
	if err := c.a.d.Decommissions.CreateOnboarding(ctx, ob); err != nil {
		return domain.Onboarding{}, activities.StoreError("create reimage onboarding", err)
	}
	if _, err := st.UpdateNode(ctx, node.ID, func(n *domain.Node) error {
		n.Status = domain.NodeOnboarding
		n.OnboardingID = id
		n.EnrolledAt = nil
		return nil
	}); err != nil {
		return domain.Onboarding{}, activities.StoreError("point node at reimage onboarding", err)
	}
	return ob, c.Note(ctx, "reimage", "onboarding "+id+" created for node "+node.ID)
}

// revokeNodeTokens revokes every unconsumed enrollment token of the node:
// the reissued ones it recorded and the deploy tokens of its onboardings.
// Consumed tokens stay consumed (and are refused anyway).
func (c *dcall) revokeNodeTokens(ctx context.Context, node domain.Node) error {
	hashes, err := c.a.d.Decommissions.NodeTokenHashes(ctx, node)
	if err != nil {
		return activities.StoreError("list node tokens", err)
	}
	now := c.a.d.Clock.Now().UTC()
	for _, h := range hashes {
		if err := c.a.d.Decommissions.RevokeEnrollmentToken(ctx, h, now); err != nil {
			return activities.StoreError("revoke token", err)
		}
	}
	return nil
}
