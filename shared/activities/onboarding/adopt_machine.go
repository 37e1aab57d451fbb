package onboarding

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/store"
)

// sourceAdopt marks the timeline note that says what adopt took over and
// why the run continues where it does.
const sourceAdopt = "adopt"

// AdoptionRefusedError: what MAAS and the node show has no stage to
// continue from; it names what MAAS shows and the operation that fits
// instead. Needs an operator.
type AdoptionRefusedError struct {
	SystemID string `json:"system_id"`
	Status   string `json:"status"`
	Reason   string `json:"reason"`
	Fits     string `json:"fits"`
}

func (e *AdoptionRefusedError) Error() string {
	return fmt.Sprintf("adopt: MAAS shows machine %s %s: %s; %s", e.SystemID, e.Status, e.Reason, e.Fits)
}

// Class: an operator decides what to do with the machine.
func (*AdoptionRefusedError) Class() domain.ErrorClass { return domain.ErrorNeedsOperator }

// AdoptMachineInput identifies the onboarding.
type AdoptMachineInput struct {
	OnboardingRef
}

// AdoptMachineOutput is the stage the run continues from (storage or
// completion_gates) and, for completion_gates, the enrollment the gates
// judge, shaped like the enrollment wait's result.
type AdoptMachineOutput struct {
	Next       domain.Stage     `json:"next"`
	StatusName string           `json:"status_name"`
	Enrollment EnrollmentReport `json:"enrollment"`
}

// AdoptMachine takes over the state an operator left outside maasflow: it
// reads the onboarding's machine in MAAS and its node, and maps them to the
// stage the run continues from, with a timeline note saying what was
// adopted and why:
//   - Ready: commissioned (by hand, or before the stop): continue at
//     storage.
//   - Deployed, the node agent enrolled (enrolled_at set) with this
//     attempt's token, the deploy's or one reissued while the run was
//     stopped: the node is made active with why on the timeline, and the
//     completion gates decide, so it stays active only when this attempt's
//     token is the one it consumed.
//   - Deployed, never enrolled: AdoptionRefusedError, the run needs an
//     operator (a hand-deployed OS without maasflow's bootstrap cannot
//     enroll).
//   - anything else: AdoptionRefusedError naming the status and the
//     operation that fits.
//
// Read-only towards MAAS: repeating it is free.
//
// Errors: AdoptionRefusedError; MAAS errors; store errors.
func (a *Activities) AdoptMachine(ctx context.Context, in AdoptMachineInput) (out AdoptMachineOutput, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c, err := a.beginIn(ctx, "AdoptMachine", domain.StageAdopt, in.OnboardingRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	if c.Rec.MAASSystemID == "" {
		return out, &AdoptionRefusedError{Status: "nothing", Reason: "no MAAS machine is recorded for this onboarding",
			Fits: "rerun discovers it from the top"}
	}
	_, m, err := c.maasMachine(ctx)
	var nf *maas.MAASNotFoundError
	if errors.As(err, &nf) {
		return out, &AdoptionRefusedError{SystemID: c.Rec.MAASSystemID, Status: "no such machine",
			Reason: "the recorded machine is gone from MAAS", Fits: "rerun or restart-clean discovers the server again"}
	}
	if err != nil {
		return out, err
	}
	out.StatusName = activities.MachineStatusName(m)
	refuse := func(reason, fits string) error {
		return &AdoptionRefusedError{SystemID: m.SystemID, Status: out.StatusName, Reason: reason, Fits: fits}
	}
	switch m.Status {
	case maas.StatusReady:
		out.Next = domain.StageStorage
		return out, c.adopted(ctx, fmt.Sprintf("adopted machine %s as MAAS shows it, Ready: continuing at storage", m.SystemID))
	case maas.StatusDeployed:
		node, tok, enrolled, err := c.enrolledThisAttempt(ctx)
		if err != nil {
			return out, err
		}
		if !enrolled {
			return out, refuse(fmt.Sprintf("the node agent of node %s never enrolled with this attempt's token (node is %s)", node.ID, node.Status),
				"restart-clean redeploys it with a bootstrap, or decommission it")
		}
		out.Next = domain.StageCompletionGates
		out.Enrollment = EnrollmentReport{NodeID: node.ID, EnrolledAt: node.EnrolledAt.UTC().Format(time.RFC3339Nano), Attempt: c.ref.Attempt}
		how := "token"
		if tok.ForStoppedRun {
			how = "token, from the bootstrap bundle reissued while the run was stopped"
		}
		why := fmt.Sprintf("adopted machine %s as MAAS shows it, Deployed, with node %s enrolled at %s by attempt %d's %s: the completion gates decide",
			m.SystemID, node.ID, out.Enrollment.EnrolledAt, c.ref.Attempt, how)
		if err := c.reactivate(ctx, node, why); err != nil {
			return out, err
		}
		return out, c.adopted(ctx, why)
	case maas.StatusCommissioning, maas.StatusTesting, maas.StatusDeploying, maas.StatusReleasing, maas.StatusDiskErasing:
		return out, refuse("MAAS is working on it", "wait until it settles, then adopt again")
	case maas.StatusFailedDeployment:
		return out, refuse("the deploy failed", "retry deploys again (releasing first), restart-clean starts over")
	case maas.StatusNew, maas.StatusFailedCommissioning, maas.StatusFailedTesting:
		return out, refuse("the machine is not commissioned", "rerun or restart-clean commissions it")
	case maas.StatusBroken:
		return out, refuse("MAAS marks it broken", "mark it fixed in MAAS, then adopt again")
	}
	return out, refuse("there is no stage to continue from", "restart-clean starts over")
}

// adopted records on the timeline what was adopted and why the run
// continues where it does, and ends the stage.
func (c *call) adopted(ctx context.Context, why string) error {
	if err := c.Note(ctx, sourceAdopt, why); err != nil {
		return err
	}
	return c.Exit(ctx, why)
}

// enrolledThisAttempt reads the node and says whether its agent enrolled
// with the token this attempt handed out (by its deploy, or reissued by an
// operator while the run was stopped), returning that token.
func (c *call) enrolledThisAttempt(ctx context.Context) (domain.Node, domain.EnrollmentToken, bool, error) {
	node, err := c.a.d.Store.GetNode(ctx, c.Rec.NodeID)
	if err != nil {
		return node, domain.EnrollmentToken{}, false, activities.StoreError("read node", err)
	}
	if node.EnrolledAt == nil || c.Rec.EnrollmentTokenHash == "" || node.Status == domain.NodeRemoved {
		return node, domain.EnrollmentToken{}, false, nil
	}
	tok, err := c.a.d.Store.GetEnrollmentToken(ctx, c.Rec.EnrollmentTokenHash)
	var nf *store.ItemNotFoundError
	if errors.As(err, &nf) {
		return node, tok, false, nil
	}
	if err != nil {
		return node, tok, false, activities.StoreError("read enrollment token", err)
	}
	return node, tok, tok.ConsumedAt != nil && tok.NodeID == node.ID && tok.Attempt == c.ref.Attempt, nil
}

// reactivate makes the enrolled node active again when the stop of its run
// stood it down (FinishOnboarding), with why on the node's onboarding
// timeline: a node becomes active through adopt only with the adopt
// recorded saying why. The completion gates then judge it; if they fail,
// the run's close stands it down again.
func (c *call) reactivate(ctx context.Context, node domain.Node, why string) error {
	if node.Status == domain.NodeActive {
		return nil
	}
	if node.Status != domain.NodeOnboarding {
		return &AdoptionRefusedError{SystemID: c.Rec.MAASSystemID, Status: "Deployed",
			Reason: fmt.Sprintf("node %s is %s", node.ID, node.Status), Fits: "its lifecycle decides, not an onboarding"}
	}
	now := c.a.d.Clock.Now().UTC()
	if _, err := c.a.d.Store.UpdateNode(ctx, node.ID, func(n *domain.Node) error {
		n.Status, n.OnboardingID, n.UpdatedAt = domain.NodeActive, c.Rec.ID, now
		return nil
	}); err != nil {
		return activities.StoreError("reactivate node", err)
	}
	return c.Note(ctx, sourceAdopt, fmt.Sprintf("node %s active again: %s", node.ID, why))
}
