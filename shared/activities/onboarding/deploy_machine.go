package onboarding

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll"
	"github.com/maasflow/maasflow/shared/maas"
)

// DeployMachineInput identifies the onboarding.
type DeployMachineInput struct {
	OnboardingRef
}

// DeployMachineOutput is what the deployed poll needs: when the deploy
// began (its events count from then), which deploy of the run this is, and
// the payload part versions. Never the token or the user_data.
type DeployMachineOutput struct {
	StartedAt            string `json:"started_at"`
	DeployAttempt        int    `json:"deploy_attempt"`
	SiteBootstrapVersion string `json:"site_bootstrap_version"`
	NodeBootstrapVersion string `json:"node_bootstrap_version"`
	// EventsAfter is the newest MAAS event id of the machine before the
	// deploy was asked for; the deploy's own events are the ones after it.
	EventsAfter int64 `json:"events_after"`
	// AlreadyDeploying is set when a retry found MAAS already deploying
	// this payload.
	AlreadyDeploying bool `json:"already_deploying"`
}

// DeployMachine renders the composed first-boot payload and deploys. The
// node bootstrap carries a fresh enrollment token bound to the node, the
// onboarding and the attempt, single use and TTL-limited (policy
// token_ttl_seconds); only its hash is stored, and it is read back and
// checked before anything is deployed (requirements readiness §8.1, §8.5). The token the
// onboarding pointed at until then (an earlier deploy of this or an earlier
// run) is then revoked, so that at most one token of the node is usable at
// a time and never none while a deploy is in flight (requirements runbook
// "Expiry/Reissue Path"); the timeline notes it. The onboarding then points
// at the new token, its deploy count goes up, and the machine is allocated
// (if Ready) and deployed with the user_data, the profile's distro_series
// and hwe_kernel, and hardware sync from the policy.
//
// MAAS deploys only from Ready or Allocated (maas-behaviour §14.2). Repeat: a
// retry that finds the machine Deploying or Deployed while the onboarding
// is in stage deploy returns without a second deploy (the node already has
// its token); a retry that finds it still Ready or Allocated renders a new
// token, revokes the one the failed try stored, and deploys without
// counting a second deploy. Revoking happens before the onboarding is
// moved to the new token, so a try that fails in between leaves the
// superseded hash on the onboarding and the retry revokes it again (a
// no-op); a consumed token is never revoked.
//
// The token and the user_data never enter the state, the timeline, logs or
// events.
//
// Errors: MachineNotDeployableError, PayloadRenderError,
// TokenPersistenceError (manual intervention); MAAS errors.
func (a *Activities) DeployMachine(ctx context.Context, in DeployMachineInput) (out DeployMachineOutput, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c, err := a.begin(ctx, "DeployMachine", domain.StageDeploy, in.OnboardingRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	if err := c.requireRunning(); err != nil {
		return out, err
	}
	pol, _, profile, err := c.policy(ctx)
	if err != nil {
		return out, err
	}
	client, m, err := c.maasMachine(ctx)
	if err != nil {
		return out, err
	}
	now := a.d.Clock.Now().UTC()
	if c.Rec.Stage == domain.StageDeploy && (m.Status == maas.StatusDeploying || m.Status == maas.StatusDeployed) {
		c.Log.InfoContext(ctx, "deploy already under way", slog.String("status", activities.MachineStatusName(m)))
		// The deploy began when its token was issued, just before MAAS was
		// asked: the polls and the classifier read MAAS events from then
		// on, so events between that start and this retry are not missed.
		started := now
		if tok, err := a.d.Store.GetEnrollmentToken(ctx, c.Rec.EnrollmentTokenHash); err == nil && !tok.CreatedAt.IsZero() {
			started = tok.CreatedAt.UTC()
		}
		return DeployMachineOutput{StartedAt: started.Format(time.RFC3339Nano), DeployAttempt: c.Rec.DeployAttempts,
			EventsAfter:          c.Rec.DeployEventsAfter,
			SiteBootstrapVersion: pol.Bootstrap.Version, NodeBootstrapVersion: enroll.BundleVersion, AlreadyDeploying: true}, nil
	}
	if m.Status != maas.StatusReady && m.Status != maas.StatusAllocated {
		return out, &MachineNotDeployableError{SystemID: m.SystemID, Status: activities.MachineStatusName(m)}
	}

	// Render first: a payload that cannot be built never costs a deploy.
	token, err := enroll.NewToken()
	if err != nil {
		return out, &PayloadRenderError{Part: partNodeBootstrap, Version: enroll.BundleVersion, Reason: "cannot make a token: " + err.Error()}
	}
	p, err := a.renderPayload(pol, c.Rec.NodeID, token)
	if err != nil {
		return out, err
	}
	hash := enroll.HashToken(token.Reveal())
	if err := c.persistToken(ctx, hash, now.Add(time.Duration(pol.TokenTTLSeconds)*time.Second)); err != nil {
		return out, err
	}
	// The deploy's events are read by id from here on (maas-behaviour §11):
	// the cursor is taken before MAAS is asked, so nothing the deploy
	// logs can fall before it.
	eventsAfter, err := activities.NewestEventID(ctx, client, m.SystemID)
	if err != nil {
		return out, err
	}
	superseded := c.Rec.EnrollmentTokenHash
	if superseded != "" {
		if err := a.d.Store.RevokeEnrollmentToken(ctx, superseded, now); err != nil {
			return out, activities.StoreError("revoke superseded enrollment token", err)
		}
		c.Log.InfoContext(ctx, "superseded enrollment token revoked")
	}

	if err := c.enter(ctx, func(o *domain.Onboarding) error {
		if o.Stage != domain.StageDeploy {
			o.DeployAttempts++
		}
		o.EnrollmentTokenHash = hash
		o.EnrollmentTaskToken = ""
		o.DeployEventsAfter = eventsAfter
		return nil
	}); err != nil {
		return out, err
	}
	versions := fmt.Sprintf("site-bootstrap %s; node-bootstrap %s", p.SiteVersion, p.NodeVersion)
	rows := []domain.TimelineEntry{
		{Kind: domain.TimelineStageEntered, Stage: domain.StageRenderPayload, Detail: "deploy " + fmt.Sprint(c.Rec.DeployAttempts)},
		{Kind: domain.TimelineStageExited, Stage: domain.StageRenderPayload, Outcome: outcomeOK,
			Detail: versions + "; enrollment token stored (hash only), expires " + now.Add(time.Duration(pol.TokenTTLSeconds)*time.Second).Format(time.RFC3339)},
	}
	if superseded != "" {
		// Written with the stage rows, after the onboarding moved to the new
		// token: a try that failed before the move and its retry note the
		// revocation once.
		rows = append(rows, domain.TimelineEntry{Kind: domain.TimelineNote, Stage: domain.StageRenderPayload,
			Source: sourceEnrollmentToken, Detail: "superseded enrollment token revoked"})
	}
	// Stored with the deploy's outcome (its stage exit, or its failure).
	c.Later(rows...)

	if m.Status == maas.StatusReady {
		if m, err = client.Allocate(ctx, m.SystemID); err != nil {
			return out, err
		}
	}
	started := a.d.Clock.Now().UTC()
	if _, err := client.Deploy(ctx, m.SystemID, maas.MachineDeployParams{
		UserData:     p.UserData,
		DistroSeries: profile.DistroSeries,
		HWEKernel:    profile.HWEKernel,
		EnableHWSync: pol.RequireHardwareSync,
		Comment:      fmt.Sprintf("maasflow onboarding %s attempt %d deploy %d", c.Rec.ID, c.ref.Attempt, c.Rec.DeployAttempts),
	}); err != nil {
		return out, err
	}
	if err := c.Exit(ctx, fmt.Sprintf("deploy %d started (%s, distro %s)", c.Rec.DeployAttempts, versions, orDefault(profile.DistroSeries))); err != nil {
		return out, err
	}
	return DeployMachineOutput{StartedAt: started.Format(time.RFC3339Nano), DeployAttempt: c.Rec.DeployAttempts, EventsAfter: eventsAfter,
		SiteBootstrapVersion: p.SiteVersion, NodeBootstrapVersion: p.NodeVersion}, nil
}

// sourceEnrollmentToken marks timeline notes about the node's enrollment
// tokens.
const sourceEnrollmentToken = "enrollment_token"

// persistToken stores the token's hash and reads it back: the node can
// enroll only if what it carries is stored, consistent and unconsumed.
func (c *call) persistToken(ctx context.Context, hash string, expires time.Time) error {
	want := domain.EnrollmentToken{
		Hash: hash, NodeID: c.Rec.NodeID, OnboardingID: c.Rec.ID, Attempt: c.ref.Attempt,
		ExpiresAt: expires.UTC(), CreatedAt: c.a.d.Clock.Now().UTC(),
	}
	if err := c.a.d.Store.PutEnrollmentToken(ctx, want); err != nil {
		return activities.StoreError("store enrollment token", err)
	}
	got, err := c.a.d.Store.GetEnrollmentToken(ctx, hash)
	if err != nil {
		var nf *activities.RecordNotFoundError
		if errors.As(activities.StoreError("", err), &nf) {
			return &TokenPersistenceError{Reason: "the stored token does not read back"}
		}
		return activities.StoreError("read back enrollment token", err)
	}
	switch {
	case got.NodeID != want.NodeID:
		return &TokenPersistenceError{Reason: "the stored token names another node"}
	case got.OnboardingID != want.OnboardingID || got.Attempt != want.Attempt:
		return &TokenPersistenceError{Reason: "the stored token names another onboarding or attempt"}
	case !got.ExpiresAt.Equal(want.ExpiresAt):
		return &TokenPersistenceError{Reason: "the stored token's expiry differs"}
	case got.ConsumedAt != nil:
		return &TokenPersistenceError{Reason: "the new token reads back as consumed"}
	}
	return nil
}

func orDefault(s string) string {
	if s == "" {
		return "MAAS default"
	}
	return s
}
