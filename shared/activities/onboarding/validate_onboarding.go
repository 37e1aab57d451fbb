package onboarding

import (
	"context"
	"errors"
	"fmt"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
	"github.com/maasflow/maasflow/shared/store"
)

// ValidateOnboardingInput is the execution input.
type ValidateOnboardingInput struct {
	OnboardingRef
}

// ValidateOnboardingOutput is what later states read from the effective
// policy (numbers and flags only, never a secret).
type ValidateOnboardingOutput struct {
	NodeID                   string `json:"node_id"`
	EnrollmentTimeoutSeconds int    `json:"enrollment_timeout_seconds"`
	DeployRetries            int    `json:"deploy_retries"`
	RoCEPhase2               bool   `json:"roce_phase2"`
	StrictPXEPreflight       bool   `json:"strict_pxe_preflight"`
	// Run is what the later steps work with instead of reading the site
	// and profile again (RunContext; no secret).
	Context *RunContext `json:"context"`
}

// ValidateOnboarding checks the first-run guardrails (requirements readiness §6): the
// site is active, its last probe healthy and its credentials set; the
// profile is active; the SKU is active; the effective policy is usable. It
// marks the onboarding running in stage validate (from pending; a retry
// finds it running already), makes sure the node record exists, and
// publishes node.onboarding.started once per attempt.
//
// Errors: GuardrailError (terminal, failed path), RecordNotFoundError,
// OnboardingClosedError, StaleAttemptError, and the retryable store and
// bus errors.
func (a *Activities) ValidateOnboarding(ctx context.Context, in ValidateOnboardingInput) (out ValidateOnboardingOutput, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c, err := a.begin(ctx, "ValidateOnboarding", domain.StageValidate, in.OnboardingRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	if err := c.startRunning(ctx); err != nil {
		return out, err
	}

	pol, site, profile, err := c.policy(ctx)
	if err != nil {
		return out, err
	}
	if err := checkGuardrails(site, profile, pol); err != nil {
		return out, err
	}
	sku, err := a.d.Store.GetSKU(ctx, c.Rec.SKUID)
	if err != nil {
		var missing *store.ItemNotFoundError
		if errors.As(err, &missing) {
			return out, &GuardrailError{Check: "sku", Reason: fmt.Sprintf("SKU %s does not exist", c.Rec.SKUID)}
		}
		return out, activities.StoreError("read SKU", err)
	}
	if !sku.Active {
		return out, &GuardrailError{Check: "sku", Reason: fmt.Sprintf("SKU %s is not active", sku.ID)}
	}
	if err := c.ensureNode(ctx); err != nil {
		return out, err
	}

	if _, err := c.publishOnce(ctx, events.OnboardingStarted, c.eventDetail()); err != nil {
		return out, err
	}
	if err := c.Exit(ctx, fmt.Sprintf("guardrails passed (site %s, profile %s, SKU %s)", site.ID, profile.ID, sku.ID)); err != nil {
		return out, err
	}
	return ValidateOnboardingOutput{
		NodeID:                   c.Rec.NodeID,
		EnrollmentTimeoutSeconds: pol.EnrollmentTimeoutSeconds,
		DeployRetries:            pol.DeployRetries,
		RoCEPhase2:               pol.RoCEPhase2,
		StrictPXEPreflight:       pol.StrictPXEPreflight,
		Context:                  newRunContext(pol, site, profile).withSKU(sku),
	}, nil
}

// startRunning moves a pending onboarding to running in stage validate, in
// one conditional update; a running one is a retry.
func (c *call) startRunning(ctx context.Context) error {
	var (
		prevStage  domain.Stage
		prevStatus domain.OnboardingStatus
	)
	updated, err := c.a.d.Store.UpdateOnboarding(ctx, c.ref.OnboardingID, func(o *domain.Onboarding) error {
		if c.ref.stale(*o) {
			return c.ref.staleError(*o)
		}
		// Pending (a new run, or a run an operator reopened at a later
		// stage) or running (a retry): the stage it was in does not matter.
		if o.Status != domain.OnboardingPending && o.Status != domain.OnboardingRunning {
			return &OnboardingClosedError{OnboardingID: o.ID, Status: o.Status}
		}
		prevStage, prevStatus = o.Stage, o.Status
		o.Status = domain.OnboardingRunning
		o.Stage = domain.StageValidate
		return nil
	})
	if err != nil {
		return activities.StoreError("mark onboarding running", err)
	}
	c.setOnboarding(updated)
	if prevStage != domain.StageValidate || prevStatus != domain.OnboardingRunning {
		// Stored with the guardrails' outcome.
		c.Later(domain.TimelineEntry{Kind: domain.TimelineStageEntered, Detail: "from " + stageOrStart(prevStage) + "; status running"})
	}
	return nil
}

func checkGuardrails(site domain.Site, profile domain.Profile, pol domain.EffectivePolicy) error {
	switch {
	case site.Status != domain.StatusActive:
		return &GuardrailError{Check: "site", Reason: fmt.Sprintf("site %s is %s", site.ID, site.Status)}
	case !site.CredentialsSet:
		return &GuardrailError{Check: "site_credentials", Reason: fmt.Sprintf("site %s has no credentials set", site.ID)}
	case site.Probe == nil:
		return &GuardrailError{Check: "site_probe", Reason: fmt.Sprintf("site %s was never probed", site.ID)}
	case !site.Probe.Healthy:
		return &GuardrailError{Check: "site_probe", Reason: fmt.Sprintf("site %s last probe was unhealthy", site.ID)}
	case profile.Status != domain.StatusActive:
		return &GuardrailError{Check: "profile", Reason: fmt.Sprintf("profile %s is %s", profile.ID, profile.Status)}
	case pol.EnrollmentTimeoutSeconds < 1:
		return &GuardrailError{Check: "policy", Reason: "enrollment_timeout_seconds must be at least 1"}
	case pol.TokenTTLSeconds < 1:
		return &GuardrailError{Check: "policy", Reason: "token_ttl_seconds must be at least 1"}
	case pol.DeployRetries < 0:
		return &GuardrailError{Check: "policy", Reason: "deploy_retries must not be negative"}
	}
	return nil
}

// ensureNode makes sure the onboarding names a node record: the API
// normally creates it with the onboarding; an onboarding started another
// way gets the site's node for the hostname, or a new one.
func (c *call) ensureNode(ctx context.Context) error {
	if c.Rec.NodeID != "" {
		return nil
	}
	st := c.a.d.Store
	node, found, err := st.FindNodeByHost(ctx, c.Rec.SiteID, c.Rec.Hostname)
	if err != nil {
		return activities.StoreError("find node", err)
	}
	if !found {
		now := c.a.d.Clock.Now().UTC()
		node = domain.Node{
			ID: c.a.d.NewID(), SiteID: c.Rec.SiteID, Hostname: c.Rec.Hostname, SKUID: c.Rec.SKUID,
			Status: domain.NodeOnboarding, OnboardingID: c.Rec.ID, CreatedAt: now, UpdatedAt: now,
		}
		if err := st.CreateNode(ctx, node); err != nil {
			// A concurrent create for the host won: use its record.
			var conflict *store.ItemConflictError
			if !errors.As(err, &conflict) {
				return activities.StoreError("create node", err)
			}
			if node, found, err = st.FindNodeByHost(ctx, c.Rec.SiteID, c.Rec.Hostname); err != nil {
				return activities.StoreError("find node", err)
			}
			if !found {
				return &activities.RecordConflictError{Kind: "node", ID: c.Rec.Hostname, Reason: "node created concurrently but not found"}
			}
		}
	}
	return c.update(ctx, func(o *domain.Onboarding) error {
		o.NodeID = node.ID
		return nil
	})
}
