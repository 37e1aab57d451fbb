package onboarding

import (
	"context"
	"fmt"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// Completion gate names (requirements readiness §8.2), as CompletionGateError.Gate.
const (
	GateAttempt       = "attempt"
	GateMAASDeployed  = "maas_deployed"
	GateNodeActive    = "node_active"
	GateTokenConsumed = "token_consumed"
)

// EnrollmentReport is the enrollment wait's result as the state machine
// passes it on (the fields of EnrollmentResult, enrolled_at as text).
type EnrollmentReport struct {
	NodeID     string `json:"node_id"`
	EnrolledAt string `json:"enrolled_at"`
	Attempt    int    `json:"attempt"`
}

// CheckCompletionGatesInput carries the enrollment wait's result.
type CheckCompletionGatesInput struct {
	OnboardingRef
	Enrollment EnrollmentReport `json:"enrollment"`
}

// CheckCompletionGatesOutput lists the gates that passed.
type CheckCompletionGatesOutput struct {
	Gates []string `json:"gates"`
}

// CheckCompletionGates refuses completion until every gate of requirements readiness
// §8.2 holds: the execution's attempt is the onboarding's and the
// enrollment's; MAAS shows the machine Deployed; the node is active with
// enrolled_at (the node agent installed, started and enrolled); the token
// consumed is the one this deploy stored, for this onboarding, node and
// attempt (requirements readiness §8.5). Read-only: repeating it is free.
//
// Errors: CompletionGateError naming the gate; MAAS errors.
func (a *Activities) CheckCompletionGates(ctx context.Context, in CheckCompletionGatesInput) (out CheckCompletionGatesOutput, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c, err := a.begin(ctx, "CheckCompletionGates", domain.StageCompletionGates, in.OnboardingRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	if c.Rec.Stage == domain.StageWaitEnrollment {
		// The enrollment API (or AwaitEnrollment) ended the wait; its exit
		// is recorded here, where the workflow resumes.
		// Stored with the move into this stage.
		c.Later(domain.TimelineEntry{Kind: domain.TimelineStageExited, Stage: domain.StageWaitEnrollment,
			Outcome: outcomeOK, Detail: fmt.Sprintf("node %s enrolled (attempt %d)", in.Enrollment.NodeID, in.Enrollment.Attempt)})
	}
	if err := c.enter(ctx, nil); err != nil {
		return out, err
	}
	gate := func(name, format string, args ...any) error {
		return &CompletionGateError{Gate: name, Reason: fmt.Sprintf(format, args...)}
	}

	if in.Enrollment.Attempt != c.ref.Attempt {
		return out, gate(GateAttempt, "the enrollment reports attempt %d, the execution runs attempt %d", in.Enrollment.Attempt, c.ref.Attempt)
	}
	out.Gates = append(out.Gates, GateAttempt)

	_, m, err := c.maasMachine(ctx)
	if err != nil {
		return out, err
	}
	if m.Status != maas.StatusDeployed {
		return out, gate(GateMAASDeployed, "machine %s is %s", m.SystemID, activities.MachineStatusName(m))
	}
	out.Gates = append(out.Gates, GateMAASDeployed)

	node, err := a.d.Store.GetNode(ctx, c.Rec.NodeID)
	if err != nil {
		return out, activities.StoreError("read node", err)
	}
	switch {
	case node.Status != domain.NodeActive:
		return out, gate(GateNodeActive, "node %s is %s", node.ID, node.Status)
	case node.EnrolledAt == nil:
		return out, gate(GateNodeActive, "node %s has no enrolled_at", node.ID)
	case node.CertSerial != "" && node.AgentSeenAt == nil:
		// "Node agent running" is its first authenticated heartbeat.
		return out, gate(GateNodeActive, "node %s holds a certificate but its agent sent no authenticated heartbeat", node.ID)
	case in.Enrollment.NodeID != "" && in.Enrollment.NodeID != node.ID:
		return out, gate(GateNodeActive, "the enrollment names node %s, the onboarding node %s", in.Enrollment.NodeID, node.ID)
	}
	out.Gates = append(out.Gates, GateNodeActive)

	if c.Rec.EnrollmentTokenHash == "" {
		return out, gate(GateTokenConsumed, "the onboarding records no enrollment token")
	}
	tok, err := a.d.Store.GetEnrollmentToken(ctx, c.Rec.EnrollmentTokenHash)
	if err != nil {
		return out, activities.StoreError("read enrollment token", err)
	}
	switch {
	case tok.ConsumedAt == nil:
		return out, gate(GateTokenConsumed, "this deploy's token was not consumed")
	case tok.OnboardingID != c.Rec.ID || tok.Attempt != c.ref.Attempt:
		return out, gate(GateTokenConsumed, "the consumed token belongs to onboarding %s attempt %d", tok.OnboardingID, tok.Attempt)
	case tok.NodeID != node.ID:
		return out, gate(GateTokenConsumed, "the consumed token belongs to node %s", tok.NodeID)
	}
	out.Gates = append(out.Gates, GateTokenConsumed)
	return out, c.Exit(ctx, "completion gates passed")
}
