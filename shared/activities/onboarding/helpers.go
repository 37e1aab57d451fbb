package onboarding

import (
	"context"
	"errors"
	"log/slog"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
	"github.com/maasflow/maasflow/shared/maas"
)

// Timeline note sources only the onboarding writes and reads back.
const (
	// sourceCreateRequested marks a MAAS create about to be sent, so a
	// retry whose create answer was lost recognises the New machine as
	// its own.
	sourceCreateRequested = "machine_create"
	sourceDiscovery       = "discovery"
)

// policy resolves the onboarding's effective policy from its site and
// profile as they are now (requirements readiness §3.2: never from the request).
func (c *call) policy(ctx context.Context) (domain.EffectivePolicy, domain.Site, domain.Profile, error) {
	site, err := c.a.d.Store.GetSite(ctx, c.Rec.SiteID)
	if err != nil {
		return domain.EffectivePolicy{}, domain.Site{}, domain.Profile{}, activities.StoreError("read site", err)
	}
	profile, err := c.a.d.Store.GetProfile(ctx, c.Rec.SiteID, c.Rec.ProfileID)
	if err != nil {
		return domain.EffectivePolicy{}, domain.Site{}, domain.Profile{}, activities.StoreError("read profile", err)
	}
	return domain.ResolvePolicy(site.Policy, profile.Policy), site, profile, nil
}

// maas returns the site's MAAS client, built from the run's site record
// when the execution carries it.
func (c *call) maas(ctx context.Context) (activities.MAAS, error) {
	if c.a.d.MAAS == nil {
		return nil, &activities.ActivityFailedError{Activity: c.Activity, Message: "no MAAS connector configured"}
	}
	if sc, ok := c.a.d.MAAS.(siteRecordConnector); ok {
		if r := c.runContext(); r != nil {
			return sc.ForSiteRecord(ctx, r.Site)
		}
	}
	return c.a.d.MAAS.ForSite(ctx, c.Rec.SiteID)
}

// maasMachine returns the site's MAAS client and the onboarding's machine
// as MAAS reports it now.
func (c *call) maasMachine(ctx context.Context) (activities.MAAS, maas.Machine, error) {
	client, err := c.maas(ctx)
	if err != nil {
		return nil, maas.Machine{}, err
	}
	if c.Rec.MAASSystemID == "" {
		return nil, maas.Machine{}, &MachineNotRecordedError{OnboardingID: c.Rec.ID, Activity: c.Activity}
	}
	m, err := client.Get(ctx, c.Rec.MAASSystemID)
	if err != nil {
		return nil, maas.Machine{}, err
	}
	c.Log.DebugContext(ctx, "machine read", slog.String("status", activities.MachineStatusName(m)))
	return client, m, nil
}

// published reports whether detailType was already published for this
// run of the attempt (a timeline marker).
func (c *call) published(ctx context.Context, detailType string) (bool, error) {
	rows, err := c.a.d.Store.ListOnboardingEvents(ctx, c.ref.OnboardingID)
	if err != nil {
		return false, activities.StoreError("read timeline", err)
	}
	// A retry, resume or adopt runs the attempt again and owes its own event.
	return domain.PublishedInRun(rows, c.ref.Attempt, activities.SourceEvent, detailType), nil
}

// publishOnce publishes an onboarding event unless this attempt already
// did, then marks it on the timeline with the call's next write. A crash
// before that write publishes it again on the retry: at least once, never
// lost.
func (c *call) publishOnce(ctx context.Context, detailType string, detail events.OnboardingDetail) (bool, error) {
	if c.a.d.Events == nil {
		return false, &activities.ActivityFailedError{Activity: c.Activity, Message: "no event publisher configured"}
	}
	done, err := c.published(ctx, detailType)
	if err != nil || done {
		return false, err
	}
	if err := c.a.d.Events.Publish(ctx, detailType, detail); err != nil {
		if events.IsInvalidDetail(err) {
			return false, &activities.ActivityFailedError{Activity: c.Activity, Message: err.Error()}
		}
		return false, &activities.EventPublishError{DetailType: detailType, Message: err.Error()}
	}
	c.Log.InfoContext(ctx, "event published", slog.String("detail_type", detailType))
	// The marker goes with the call's next write or its end.
	c.Later(domain.TimelineEntry{Kind: domain.TimelineNote, Source: activities.SourceEvent, Detail: detailType})
	return true, nil
}

// eventDetail is the onboarding's event detail as it stands.
func (c *call) eventDetail() events.OnboardingDetail {
	return events.OnboardingDetail{
		SiteID:        c.Rec.SiteID,
		OnboardingID:  c.Rec.ID,
		BatchID:       c.Rec.BatchID,
		NodeID:        c.Rec.NodeID,
		MAASSystemID:  c.Rec.MAASSystemID,
		Hostname:      c.Rec.Hostname,
		CorrelationID: correlationID(c.Rec, c.ref),
		Attempt:       c.ref.Attempt,
		Status:        string(c.Rec.Status),
		Stage:         string(c.Rec.Stage),
		OccurredAt:    c.a.d.Clock.Now().UTC(),
	}
}

func correlationID(ob domain.Onboarding, ref OnboardingRef) string {
	if ob.CorrelationID != "" {
		return ob.CorrelationID
	}
	if ref.CorrelationID != "" {
		return ref.CorrelationID
	}
	return ob.ID
}

// isNotFound reports a MAAS 404 (or a missing current script set).
func isNotFound(err error) bool {
	var nf *maas.MAASNotFoundError
	return errors.As(err, &nf)
}
