package onboarding

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
)

// AwaitEnrollmentInput carries the task token of the state machine's
// .waitForTaskToken Task.
type AwaitEnrollmentInput struct {
	OnboardingRef
	TaskToken string `json:"task_token"`
}

// AwaitEnrollmentOutput is the Lambda's own answer; the Task's result is
// what completes the token (EnrollmentResult).
type AwaitEnrollmentOutput struct {
	Stored    bool `json:"stored"`
	Completed bool `json:"completed"`
}

// EnrollmentResult is the task token's output, from the enrollment API or
// from AwaitEnrollment itself: the node, when it enrolled, and the attempt
// of the token it consumed.
type EnrollmentResult struct {
	NodeID     string    `json:"node_id"`
	EnrolledAt time.Time `json:"enrolled_at"`
	Attempt    int       `json:"attempt"`
}

// AwaitEnrollment starts the wait for the node agent's first enrollment:
// it stores the task token on the onboarding, where the enrollment API
// finds it to complete the wait. A node that enrolled before the token was
// stored (the deployed OS can be faster than the poll) is active already
// and its consumed token is this deploy's: then it completes the task
// itself through the TaskCompleter. The state machine bounds the
// wait with the policy's enrollment timeout.
//
// Repeat: a retry stores the new task token and checks again.
//
// Errors: EnrollmentCompletionError (retryable); store errors.
func (a *Activities) AwaitEnrollment(ctx context.Context, in AwaitEnrollmentInput) (out AwaitEnrollmentOutput, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c, err := a.begin(ctx, "AwaitEnrollment", domain.StageWaitEnrollment, in.OnboardingRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	if in.TaskToken == "" {
		return out, &activities.InvalidInputError{Field: "task_token", Reason: "is required"}
	}
	if err := c.enter(ctx, func(o *domain.Onboarding) error {
		o.EnrollmentTaskToken = in.TaskToken
		return nil
	}); err != nil {
		return out, err
	}
	out.Stored = true

	res, enrolled, err := c.enrollment(ctx)
	if err != nil || !enrolled {
		if err == nil {
			c.Log.InfoContext(ctx, "waiting for the node to enroll")
		}
		return out, err
	}
	body, err := json.Marshal(res)
	if err != nil {
		return out, &activities.ActivityFailedError{Activity: c.Activity, Message: "encode the enrollment result: " + err.Error()}
	}
	if a.d.Completer == nil {
		return out, &activities.ActivityFailedError{Activity: c.Activity, Message: "no enrollment completer configured"}
	}
	if err := a.d.Completer.CompleteTask(ctx, in.TaskToken, body); err != nil {
		// The workflow service's error text may quote the task token, so
		// neither the error nor the log repeats it: only its type.
		return out, &EnrollmentCompletionError{Message: fmt.Sprintf("the workflow refused the result (%T)", activities.RootError(err))}
	}
	c.Log.InfoContext(ctx, "node had enrolled already; wait completed", slog.Time("enrolled_at", res.EnrolledAt))
	out.Completed = true
	return out, c.Note(ctx, "enrollment", "node "+res.NodeID+" had enrolled before the wait began")
}

// enrollment reports whether the node enrolled with this deploy's token:
// the node is active with enrolled_at and the onboarding's token is
// consumed.
func (c *call) enrollment(ctx context.Context) (EnrollmentResult, bool, error) {
	if c.Rec.NodeID == "" || c.Rec.EnrollmentTokenHash == "" {
		return EnrollmentResult{}, false, nil
	}
	node, err := c.a.d.Store.GetNode(ctx, c.Rec.NodeID)
	if err != nil {
		return EnrollmentResult{}, false, activities.StoreError("read node", err)
	}
	if node.Status != domain.NodeActive || node.EnrolledAt == nil {
		return EnrollmentResult{}, false, nil
	}
	if node.CertSerial != "" && node.AgentSeenAt == nil {
		// A node with a certificate has enrolled once its agent's first
		// authenticated heartbeat is in; that heartbeat completes the wait.
		return EnrollmentResult{}, false, nil
	}
	tok, err := c.a.d.Store.GetEnrollmentToken(ctx, c.Rec.EnrollmentTokenHash)
	if err != nil {
		return EnrollmentResult{}, false, activities.StoreError("read enrollment token", err)
	}
	if tok.ConsumedAt == nil {
		return EnrollmentResult{}, false, nil
	}
	return EnrollmentResult{NodeID: node.ID, EnrolledAt: node.EnrolledAt.UTC(), Attempt: tok.Attempt}, true, nil
}
