package onboarding_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/activities/activitiestest"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
	"github.com/maasflow/maasflow/shared/domain"
)

// A node that holds a certificate passes the gate "node agent running"
// only once its agent's first authenticated heartbeat is on record.
func TestCompletionGateWaitsForTheAgentsFirstHeartbeat(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	e.toPredeployed(o)
	e.deploy(o)
	require.Eventually(t, func() bool { return len(e.f.NodeAPI.Enrolled()) == 1 }, 10*time.Second, time.Millisecond)
	e.must("AwaitEnrollment", onboarding.AwaitEnrollmentInput{OnboardingRef: ref(o), TaskToken: "tok-1"}, nil)
	ctx := context.Background()
	_, err := e.f.Store.UpdateNode(ctx, o.NodeID, func(n *domain.Node) error {
		n.CertSerial = "abc"
		return nil
	})
	require.NoError(t, err)

	in := onboarding.CheckCompletionGatesInput{OnboardingRef: ref(o), Enrollment: onboarding.EnrollmentReport{NodeID: o.NodeID, Attempt: 1}}
	err = e.call("CheckCompletionGates", in, nil)
	var ge *onboarding.CompletionGateError
	require.ErrorAs(t, err, &ge)
	assert.Equal(t, onboarding.GateNodeActive, ge.Gate)
	assert.Contains(t, ge.Reason, "heartbeat")

	now := time.Now().UTC()
	_, err = e.f.Store.UpdateNode(ctx, o.NodeID, func(n *domain.Node) error {
		n.AgentSeenAt = &now
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, e.call("CheckCompletionGates", in, nil), "the heartbeat passes the agent gate")
}
