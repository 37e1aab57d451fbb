package reconcile

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
)

// Resolution is an operator's decision about a node's open drift of one
// kind.
type Resolution struct {
	NodeID string
	Kind   string
	Action string
	Reason string
	Actor  string
	// Started names the operation the caller started for a start action
	// (e.g. "decommission <id> (full)"); empty means none could be.
	Started string
}

// NoOpenDriftError: the node has no open drift of that kind.
type NoOpenDriftError struct {
	NodeID, Kind string
}

func (e *NoOpenDriftError) Error() string {
	return fmt.Sprintf("node %s has no open %s drift", e.NodeID, e.Kind)
}

// ResolveRefusedError: the action does not apply to this drift, or the
// operation it would start does not exist yet. Reason says what to do
// instead.
type ResolveRefusedError struct {
	Action, Kind, Reason string
}

func (e *ResolveRefusedError) Error() string {
	return fmt.Sprintf("%s is not possible for %s drift: %s", e.Action, e.Kind, e.Reason)
}

// StartsDecommission reports whether `start` opens a full decommission for
// drift of kind: a node whose machine MAAS no longer shows Deployed leaves
// service through the decommission workflow (release, erase, retire).
func StartsDecommission(kind string) bool { return kind == domain.DriftStatusMismatch }

// StartRefusal is the answer to `start` for a kind without a fitting
// operation.
func StartRefusal(kind string) *ResolveRefusedError {
	reason := fmt.Sprintf("the %s operation is not available yet; acknowledge the drift and act in MAAS, or adopt what MAAS shows", startOperations[kind])
	switch kind {
	case domain.DriftMachineMissing:
		reason = "the machine is gone from MAAS, there is nothing to decommission; adopt to mark the node removed"
	case domain.DriftOrphanSlot:
		reason = "there is no workflow to start; adopt frees the slot"
	case domain.DriftNetworkMismatch:
		reason = "there is no workflow that reconfigures a deployed machine's network; set it in MAAS as designed, or change the design"
	}
	return &ResolveRefusedError{Action: domain.DriftStart, Kind: kind, Reason: reason}
}

// OpenDrift returns the node's open drift item of kind: NoOpenDriftError
// when there is none.
func (r *Runner) OpenDrift(ctx context.Context, nodeID, kind string) (domain.DriftItem, error) {
	page, err := r.Store.ListDrift(ctx, store.DriftFilter{NodeID: nodeID, Kind: kind, State: domain.DriftOpen, Limit: 1})
	if err != nil {
		return domain.DriftItem{}, err
	}
	if len(page.Items) == 0 {
		return domain.DriftItem{}, &NoOpenDriftError{NodeID: nodeID, Kind: kind}
	}
	return page.Items[0], nil
}

// startOperations names, per kind without one on this version, the
// operation `start` would open: onboarding recovery (retry, resume,
// rerun, restart-clean) is still to come.
var startOperations = map[string]string{
	domain.DriftMachineMissing:      "decommission",
	domain.DriftStatusMismatch:      "decommission",
	domain.DriftSystemIDChanged:     "onboarding rerun",
	domain.DriftHostnameChanged:     "onboarding rerun",
	domain.DriftPowerOff:            "onboarding recovery",
	domain.DriftBMCUnreachable:      "onboarding recovery",
	domain.DriftUnknownMachine:      "onboarding",
	domain.DriftExecutionNotRunning: "onboarding resume",
	domain.DriftTokenMismatch:       "onboarding restart-clean",
	domain.DriftAttemptMismatch:     "onboarding restart-clean",
	domain.DriftOrphanSlot:          "",
	domain.DriftNetworkMismatch:     "",
}

// executionLostCode is the failure code of an onboarding closed by adopting
// execution_not_running drift.
const executionLostCode = "ExecutionLost"

// Resolve applies res to the node's open drift item of res.Kind and returns
// the item after it.
//
//   - acknowledge keeps the item open but quiet: a later run that sees the
//     same thing leaves it be; a change closes it and opens a new one.
//   - adopt makes maasflow's records match what MAAS shows (see adopt) and
//     closes the item.
//   - start would open the recovery or decommission that fits; none exists
//     yet, so it is refused (ResolveRefusedError).
func (r *Runner) Resolve(ctx context.Context, res Resolution) (domain.DriftItem, error) {
	item, err := r.OpenDrift(ctx, res.NodeID, res.Kind)
	if err != nil {
		return domain.DriftItem{}, err
	}
	resolution := &domain.DriftResolution{Action: res.Action, Reason: res.Reason, By: res.Actor, At: r.Clock.Now().UTC()}

	switch res.Action {
	case domain.DriftAcknowledge:
		return r.Store.UpdateDriftItem(ctx, item.ID, func(d *domain.DriftItem) error {
			if d.State != domain.DriftOpen {
				return &NoOpenDriftError{NodeID: res.NodeID, Kind: res.Kind}
			}
			d.Resolution = resolution
			return nil
		})
	case domain.DriftAdopt:
		detail, err := r.adopt(ctx, item, res.Actor)
		if err != nil {
			return domain.DriftItem{}, err
		}
		resolution.Detail = detail
		now := resolution.At
		return r.Store.UpdateDriftItem(ctx, item.ID, func(d *domain.DriftItem) error {
			d.Resolution = resolution
			if d.State == domain.DriftOpen {
				d.State, d.ClosedAt, d.ClosedBy = domain.DriftClosed, &now, domain.DriftAdopt
			}
			return nil
		})
	default: // start
		if res.Started == "" {
			return domain.DriftItem{}, StartRefusal(item.Kind)
		}
		// The operation takes the node out of the active set, so the next
		// run closes the item; until then it records what was started.
		resolution.Detail = res.Started
		return r.Store.UpdateDriftItem(ctx, item.ID, func(d *domain.DriftItem) error {
			d.Resolution = resolution
			return nil
		})
	}
}

// adopt changes maasflow's records to what the drift item observed and
// says what it changed.
func (r *Runner) adopt(ctx context.Context, item domain.DriftItem, actor string) (string, error) {
	refuse := func(reason string) (string, error) {
		return "", &ResolveRefusedError{Action: domain.DriftAdopt, Kind: item.Kind, Reason: reason}
	}
	setNode := func(change func(n *domain.Node), detail string) (string, error) {
		if _, err := r.Store.UpdateNode(ctx, item.NodeID, func(n *domain.Node) error { change(n); return nil }); err != nil {
			return "", err
		}
		return detail, nil
	}
	switch item.Kind {
	case domain.DriftHostnameChanged:
		return setNode(func(n *domain.Node) { n.Hostname = item.Observed }, "hostname "+item.Expected+" → "+item.Observed)
	case domain.DriftSystemIDChanged:
		if strings.Contains(item.Observed, ",") {
			return refuse("several machines carry the hostname (" + item.Observed + "); delete the extra ones in MAAS first")
		}
		return setNode(func(n *domain.Node) { n.MAASSystemID = item.Observed }, "maas_system_id "+item.Expected+" → "+item.Observed)
	case domain.DriftStatusMismatch:
		// The machine no longer runs what maasflow deployed: the node
		// leaves service; onboarding it again brings it back.
		return setNode(func(n *domain.Node) { n.Status = domain.NodeRetired },
			fmt.Sprintf("node status active → retired (MAAS shows %s)", item.Observed))
	case domain.DriftMachineMissing:
		return setNode(func(n *domain.Node) { n.Status = domain.NodeRemoved },
			"node status active → removed (no machine in MAAS)")
	case domain.DriftExecutionNotRunning:
		return r.closeLostOnboarding(ctx, item, actor)
	case domain.DriftOrphanSlot:
		return r.freeSlots(ctx, item.SiteID)
	case domain.DriftPowerOff, domain.DriftBMCUnreachable:
		return refuse("power is the BMC's state, maasflow keeps no record of it to adopt; power the host on or fix the BMC in MAAS, or acknowledge")
	case domain.DriftUnknownMachine:
		return refuse("maasflow has no node to adopt the machine into; onboard it, or delete it in MAAS")
	case domain.DriftNetworkMismatch:
		return refuse("the site design is the record of the node's network; change the design (plan and apply) or set MAAS as designed")
	default: // token and attempt mismatch
		return refuse("cancel the onboarding and start it again")
	}
}

// freeSlots frees every throttle row of the site that no workflow holds,
// and sets the slot count to the slots held.
func (r *Runner) freeSlots(ctx context.Context, siteID string) (string, error) {
	d, err := r.Store.FreeDeadSlots(ctx, siteID)
	if err != nil {
		return "", err
	}
	if d.Empty() {
		return "nothing held by no workflow any more on site " + siteID, nil
	}
	detail := fmt.Sprintf("freed %d slots and %d queue places of site %s", len(d.Holders), len(d.Waiters), siteID)
	if d.CountWrong {
		detail += fmt.Sprintf("; slot count %d → %d", d.Held, d.Alive)
	}
	return detail, nil
}

// closeLostOnboarding closes an open onboarding whose execution is gone as
// failed, which frees its host for a new onboarding.
func (r *Runner) closeLostOnboarding(ctx context.Context, item domain.DriftItem, actor string) (string, error) {
	now := r.Clock.Now().UTC()
	msg := fmt.Sprintf("the workflow execution is not running (%s); closed by %s", item.Observed, actor)
	o, err := r.Store.UpdateOnboarding(ctx, item.OnboardingID, func(o *domain.Onboarding) error {
		if !domain.IsOpenStatus(o.Status) {
			return &ResolveRefusedError{Action: domain.DriftAdopt, Kind: item.Kind, Reason: "onboarding " + o.ID + " is already " + string(o.Status)}
		}
		o.Status = domain.OnboardingFailed
		o.Error = &domain.Failure{Code: executionLostCode, Message: msg, Stage: o.Stage}
		o.CompletedAt, o.UpdatedAt = &now, now
		o.EnrollmentTaskToken = ""
		return nil
	})
	if err != nil {
		return "", err
	}
	if err := r.Store.AppendOnboardingEvents(ctx, domain.TimelineEntry{
		OnboardingID: o.ID, Time: now, Attempt: o.Attempt, Kind: domain.TimelineNote, Stage: o.Stage,
		Outcome: string(domain.OnboardingFailed), Source: "reconcile", Detail: msg,
	}); err != nil {
		r.Logger.ErrorContext(ctx, "record the adopt on the timeline", "onboarding_id", o.ID, "error", err.Error())
	}
	return "onboarding " + o.ID + " closed as failed (" + executionLostCode + ")", nil
}

// Status is the reconciliation summary: the last finished run, the one
// under way, and when the schedule runs next.
type Status struct {
	Current *domain.ReconcileRun `json:"current,omitempty"`
	Last    *domain.ReconcileRun `json:"last,omitempty"`
	// NextScheduled is when the schedule starts the next run; absent when
	// no schedule is known.
	NextScheduled *time.Time `json:"next_scheduled,omitempty"`
	// Interval is the schedule's period (Go duration), empty when none.
	Interval string `json:"interval,omitempty"`
}

// Status reads the current and the last finished run.
func (r *Runner) Status(ctx context.Context) (Status, error) {
	var st Status
	cur, found, err := r.Store.CurrentReconcileRun(ctx)
	if err != nil {
		return st, err
	}
	if found {
		st.Current = &cur
	}
	runs, err := r.Store.ListReconcileRuns(ctx, 10)
	if err != nil {
		return st, err
	}
	for _, run := range runs {
		if run.EndedAt != nil {
			st.Last = &run
			break
		}
	}
	if next := r.next.Load(); next != nil {
		st.NextScheduled = next
	}
	if r.cfg.Interval > 0 {
		st.Interval = r.cfg.Interval.String()
		if st.NextScheduled == nil && len(runs) > 0 {
			// A remote scheduler (EventBridge) runs at its own pace: the
			// newest run plus one period is the best estimate.
			next := runs[0].StartedAt.Add(r.cfg.Interval)
			st.NextScheduled = &next
		}
	}
	return st, nil
}

// Trigger starts a run in the background for the API (see Start).
func (r *Runner) Trigger(ctx context.Context, siteID string) (domain.ReconcileRun, bool, error) {
	return r.Start(ctx, siteID, TriggerAPI)
}

// ListDrift lists drift items (store.ListDrift).
func (r *Runner) ListDrift(ctx context.Context, f store.DriftFilter) (store.DriftPage, error) {
	return r.Store.ListDrift(ctx, f)
}
