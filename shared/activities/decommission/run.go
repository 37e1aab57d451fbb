package decommission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/maasflow/maasflow/shared/activities"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
	"github.com/maasflow/maasflow/shared/logfield"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/run"
	"github.com/maasflow/maasflow/shared/store"
)

// DecommissionRef identifies the decommission and the execution's attempt.
// It is the decommission state machine's input, and every decommission
// activity input embeds it.
type DecommissionRef struct {
	DecommissionID string `json:"decommission_id"`
	NodeID         string `json:"node_id"`
	SiteID         string `json:"site_id"`
	Mode           string `json:"mode"`
	Attempt        int    `json:"attempt"`
	// Run is the run of the attempt the execution is (Decommission.Run).
	Run           int    `json:"run"`
	CorrelationID string `json:"correlation_id"`
}

func (r DecommissionRef) validate() error {
	switch {
	case r.DecommissionID == "":
		return &activities.InvalidInputError{Field: "decommission_id", Reason: "is required"}
	case r.Attempt < 1:
		return &activities.InvalidInputError{Field: "attempt", Reason: "must be 1 or more"}
	case r.Run < 0:
		return &activities.InvalidInputError{Field: "run", Reason: "must be 0 or more"}
	}
	return nil
}

// onRun reports whether the record is on the execution's attempt and run:
// a run a recovery operation replaced writes nothing.
func (r DecommissionRef) onRun(d *domain.Decommission) bool {
	return run.Fence{Attempt: r.Attempt, Run: r.Run}.Holds(d.Attempt, d.Run)
}

// dcall is one decommission activity invocation: the frame (activities.Frame)
// over the decommission as read at the start, and the execution's
// reference.
type dcall struct {
	activities.Frame[domain.Decommission, domain.DecommissionStage, domain.DecommissionEvent]
	a   *Activities
	ref DecommissionRef
}

// closedError is the refusal of a step whose run no longer holds the
// decommission (status names what it found: its status, or "stopped").
func (r DecommissionRef) closedError(d domain.Decommission, status string) *DecommissionClosedError {
	return &DecommissionClosedError{DecommissionID: d.ID, Status: status, Attempt: r.Attempt, Current: d.Attempt}
}

// beginDecom reads the decommission and fences the execution: a closed
// record or another attempt → DecommissionClosedError, nothing written.
func (a *Activities) beginDecom(ctx context.Context, activity string, stage domain.DecommissionStage, ref DecommissionRef) (*dcall, error) {
	c := &dcall{a: a, ref: ref}
	c.Frame = activities.Frame[domain.Decommission, domain.DecommissionStage, domain.DecommissionEvent]{
		Activity: activity, Stage: stage, Rules: decommissionRules(a, ref, c), Log: a.d.Logger.With(
			slog.String(logfield.Activity, activity), slog.String(logfield.Stage, string(stage)),
			slog.String("decommission_id", ref.DecommissionID), slog.String(logfield.NodeID, ref.NodeID),
			slog.String(logfield.SiteID, ref.SiteID), slog.String(logfield.CorrelationID, ref.CorrelationID))}
	if err := ref.validate(); err != nil {
		return c, err
	}
	if a.d.Decommissions == nil {
		return c, &activities.ActivityFailedError{Activity: activity, Message: "no decommission store configured"}
	}
	d, err := a.d.Decommissions.GetDecommission(ctx, ref.DecommissionID)
	if err != nil {
		return c, activities.StoreError("read decommission", err)
	}
	c.Load(d)
	if !ref.onRun(&d) {
		return c, ref.closedError(d, string(d.Status))
	}
	return c, nil
}

// decommissionRules is the decommission's record and timeline for the
// frame.
func decommissionRules(a *Activities, ref DecommissionRef, c *dcall) activities.RecordRules[domain.Decommission, domain.DecommissionStage, domain.DecommissionEvent] {
	return activities.RecordRules[domain.Decommission, domain.DecommissionStage, domain.DecommissionEvent]{
		ID:       func(d domain.Decommission) string { return d.ID },
		StageOf:  func(d domain.Decommission) domain.DecommissionStage { return d.Stage },
		SetStage: func(d *domain.Decommission, s domain.DecommissionStage) { d.Stage = s },
		Running:  func(d domain.Decommission) bool { return d.Status == domain.DecommissionRunning },
		Refuse: func(ctx context.Context, d domain.Decommission) error {
			// A cancelled context is a stopped execution: it writes nothing.
			if ctx.Err() != nil {
				return ref.closedError(d, "stopped")
			}
			if !ref.onRun(&d) || d.Status != domain.DecommissionRunning {
				return ref.closedError(d, string(d.Status))
			}
			return nil
		},
		Quiet: func(err error) bool {
			var closed *DecommissionClosedError
			return errors.As(err, &closed)
		},
		WriteRecord: func(ctx context.Context, change func(*domain.Decommission) error, rows func(before, after domain.Decommission) []domain.DecommissionEvent) (domain.Decommission, error) {
			return a.d.Decommissions.UpdateDecommissionWithTimeline(ctx, ref.DecommissionID, change, rows)
		},
		AppendRows: func(ctx context.Context, rows ...domain.DecommissionEvent) error {
			return a.d.Decommissions.AppendDecommissionEvents(ctx, rows...)
		},
		MayAppend: func(ctx context.Context) error {
			if !c.stillRunning(ctx) {
				return &DecommissionClosedError{DecommissionID: ref.DecommissionID, Status: "stopped", Attempt: ref.Attempt, Current: c.Rec.Attempt}
			}
			return nil
		},
		RecordID: ref.DecommissionID,
		Attempt:  ref.Attempt,
		Now:      a.d.Clock.Now,
		Fields: func(r *domain.DecommissionEvent) activities.RowFields[domain.DecommissionStage] {
			return activities.RowFields[domain.DecommissionStage]{RecordID: &r.DecommissionID, Attempt: &r.Attempt, Time: &r.Time, Stage: &r.Stage,
				Kind: &r.Kind, Outcome: &r.Outcome, Source: &r.Source, Detail: &r.Detail}
		},
	}
}

// requireRunning refuses a decommission that is not running.
func (c *dcall) requireRunning() error {
	if c.Rec.Status != domain.DecommissionRunning {
		return c.ref.closedError(c.Rec, string(c.Rec.Status))
	}
	return nil
}

// update changes the running decommission of this attempt and moves it
// into the activity's stage; a stage change and its stage_entered row are
// one conditional write, so no crash leaves one without the other.
func (c *dcall) update(ctx context.Context, change func(*domain.Decommission) error) error {
	return c.Write(ctx, change, true, "update decommission")
}

// enter moves the running decommission into the activity's stage (a
// no-op when it is there already).
func (c *dcall) enter(ctx context.Context) error {
	if err := c.requireRunning(); err != nil {
		return err
	}
	return c.EnterStage(ctx, nil, "update decommission")
}

// stillRunning reports whether this execution may still write: its
// context is live (the local runtime cancels it when an operator stops
// the execution) and the record is still open on its run. A cancel or a
// freeze stops the execution before it writes, so an activity still in
// flight then finds either a cancelled context or the record moved on, and
// writes nothing more: the operator's answer is the record's last word.
func (c *dcall) stillRunning(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	d, err := c.a.d.Decommissions.GetDecommission(ctx, c.ref.DecommissionID)
	if err != nil {
		return true // unknown: the write's own failure says more
	}
	return c.ref.onRun(&d) && (d.Status == domain.DecommissionRunning || d.Status == c.Rec.Status)
}

// policy resolves the node's effective policy: the site's, then the
// profile of the node's last onboarding when there is one.
func (c *dcall) policy(ctx context.Context) (domain.EffectivePolicy, error) {
	site, err := c.a.d.Store.GetSite(ctx, c.Rec.SiteID)
	if err != nil {
		return domain.EffectivePolicy{}, activities.StoreError("read site", err)
	}
	var profile domain.Policy
	if ob, ok, err := c.lastOnboarding(ctx); err != nil {
		return domain.EffectivePolicy{}, err
	} else if ok {
		p, err := c.a.d.Store.GetProfile(ctx, ob.SiteID, ob.ProfileID)
		if err != nil && !isStoreNotFound(err) {
			return domain.EffectivePolicy{}, activities.StoreError("read profile", err)
		}
		profile = p.Policy
	}
	return domain.ResolvePolicy(site.Policy, profile), nil
}

// lastOnboarding is the onboarding that last brought the node in (the
// node's onboarding_id); ok is false when it has none.
func (c *dcall) lastOnboarding(ctx context.Context) (domain.Onboarding, bool, error) {
	node, err := c.a.d.Store.GetNode(ctx, c.Rec.NodeID)
	if err != nil {
		return domain.Onboarding{}, false, activities.StoreError("read node", err)
	}
	if node.OnboardingID == "" {
		return domain.Onboarding{}, false, nil
	}
	ob, err := c.a.d.Store.GetOnboarding(ctx, node.OnboardingID)
	if isStoreNotFound(err) {
		return domain.Onboarding{}, false, nil
	}
	if err != nil {
		return domain.Onboarding{}, false, activities.StoreError("read onboarding", err)
	}
	return ob, true, nil
}

// machine returns the site's MAAS client and the decommission's machine as
// MAAS reports it now.
func (c *dcall) machine(ctx context.Context) (activities.MAAS, maas.Machine, error) {
	if c.a.d.MAAS == nil {
		return nil, maas.Machine{}, &activities.ActivityFailedError{Activity: c.Activity, Message: "no MAAS connector configured"}
	}
	if c.Rec.MAASSystemID == "" {
		return nil, maas.Machine{}, &activities.ActivityFailedError{Activity: c.Activity, Message: "the node has no MAAS machine"}
	}
	client, err := c.a.d.MAAS.ForSite(ctx, c.Rec.SiteID)
	if err != nil {
		return nil, maas.Machine{}, err
	}
	m, err := client.Get(ctx, c.Rec.MAASSystemID)
	if err != nil {
		return nil, maas.Machine{}, err
	}
	return client, m, nil
}

// eventDetail is the decommission's event detail as it stands.
func (c *dcall) eventDetail() events.DecommissionDetail {
	cid := c.Rec.CorrelationID
	if cid == "" {
		cid = c.ref.CorrelationID
	}
	if cid == "" {
		cid = c.Rec.ID
	}
	return events.DecommissionDetail{
		SiteID: c.Rec.SiteID, DecommissionID: c.Rec.ID, NodeID: c.Rec.NodeID, MAASSystemID: c.Rec.MAASSystemID,
		Hostname: c.Rec.Hostname, Mode: c.Rec.Mode, CorrelationID: cid, Attempt: c.ref.Attempt,
		Status: string(c.Rec.Status), Stage: string(c.Rec.Stage), OccurredAt: c.a.d.Clock.Now().UTC(),
	}
}

// publishOnce publishes a decommission event unless this attempt already
// did (a timeline marker), then marks it: at least once, never lost.
func (c *dcall) publishOnce(ctx context.Context, detailType string, detail events.DecommissionDetail) error {
	if c.a.d.Events == nil {
		return &activities.ActivityFailedError{Activity: c.Activity, Message: "no event publisher configured"}
	}
	// The event tells of the record as this run left it: a run an operator
	// stopped meanwhile (cancel, freeze, a new run) announces nothing.
	if cur, err := c.a.d.Decommissions.GetDecommission(ctx, c.ref.DecommissionID); err != nil {
		return activities.StoreError("read decommission", err)
	} else if !c.ref.onRun(&cur) || string(cur.Status) != detail.Status || ctx.Err() != nil {
		return &DecommissionClosedError{DecommissionID: cur.ID, Status: string(cur.Status), Attempt: c.ref.Attempt, Current: cur.Attempt}
	}
	rows, err := c.a.d.Decommissions.ListDecommissionEvents(ctx, c.ref.DecommissionID)
	if err != nil {
		return activities.StoreError("read decommission timeline", err)
	}
	if publishedThisRun(rows, c.ref, detailType) {
		return nil
	}
	if err := c.a.d.Events.Publish(ctx, detailType, detail); err != nil {
		if events.IsInvalidDetail(err) {
			return &activities.ActivityFailedError{Activity: c.Activity, Message: err.Error()}
		}
		return &activities.EventPublishError{DetailType: detailType, Message: err.Error()}
	}
	c.Log.InfoContext(ctx, detailType, slog.String("source", activities.SourceEvent))
	return c.Timeline(ctx, domain.DecommissionEvent{Kind: domain.TimelineNote, Source: activities.SourceEvent, Detail: detailType, Outcome: runTag(c.ref.Run)})
}

// publishedThisRun reports whether the timeline marks detailType as
// published for the execution's attempt: the started event once per
// attempt, an outcome event once per run (a recovery operation that runs
// the same attempt again starts a run whose end is announced anew). The
// marker's outcome names its run ("" is run 0, before runs were counted).
func publishedThisRun(rows []domain.DecommissionEvent, ref DecommissionRef, detailType string) bool {
	for _, r := range rows {
		if r.Attempt != ref.Attempt || r.Kind != domain.TimelineNote || r.Source != activities.SourceEvent || r.Detail != detailType {
			continue
		}
		if detailType == events.DecommissionStarted || r.Outcome == runTag(ref.Run) || (r.Outcome == "" && ref.Run == 0) {
			return true
		}
	}
	return false
}

// runTag marks a run on its event markers.
func runTag(run int) string { return fmt.Sprintf("run %d", run) }

func isStoreNotFound(err error) bool {
	var nf *store.ItemNotFoundError
	return errors.As(err, &nf)
}

// decomStageOrStart names a decommission stage on the timeline.
var decomStageOrStart = run.StageOrStart[domain.DecommissionStage]
