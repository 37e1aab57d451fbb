package onboarding

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/maas"
)

// TestBootCheck: what counts as a sign of booting, and when its absence is
// reported.
func TestBootCheck(t *testing.T) {
	commissioning := maas.Machine{Status: maas.StatusCommissioning, CommissioningStatus: maas.ScriptStatusPending}
	pxe := []maas.Event{{ID: 9, Type: "Performing PXE boot"}}
	for _, tc := range []struct {
		name            string
		m               maas.Machine
		poll            activities.Poll
		events          []maas.Event
		minutes         int
		seen, notBooted bool
	}{
		{name: "pending, before the deadline", m: commissioning, poll: activities.Poll{Count: 3}, minutes: 11},
		{name: "pending at the deadline", m: commissioning, poll: activities.Poll{Count: 3}, minutes: 12, notBooted: true},
		{name: "scripts running", m: maas.Machine{Status: maas.StatusCommissioning, CommissioningStatus: maas.ScriptStatusRunning}, minutes: 20, seen: true},
		{name: "testing", m: maas.Machine{Status: maas.StatusTesting, CommissioningStatus: 2}, minutes: 20, seen: true},
		{name: "a boot event of this wait", m: commissioning, poll: activities.Poll{Count: 1}, events: pxe, minutes: 20, seen: true},
		{name: "a boot event after the cycle", m: commissioning, poll: activities.Poll{LastEventID: 4}, events: pxe, minutes: 20, seen: true},
		{name: "a first poll's event may be old", m: commissioning, events: pxe, minutes: 20, notBooted: true},
		{name: "seen earlier in the wait", m: commissioning, poll: activities.Poll{Count: 5, BootSeen: true}, minutes: 20, seen: true},
		{name: "status not reported", m: maas.Machine{Status: maas.StatusCommissioning, CommissioningStatus: maas.ScriptStatusNone}, poll: activities.Poll{Count: 2}, minutes: 12, notBooted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen, notBooted := bootCheck(activities.TargetReady, tc.m, tc.poll, tc.events, time.Duration(tc.minutes)*time.Minute)
			assert.Equal(t, tc.seen, seen)
			assert.Equal(t, tc.notBooted, notBooted)
		})
	}
	_, notBooted := bootCheck(activities.TargetDeployed, commissioning, activities.Poll{Count: 3}, nil, 30*time.Minute)
	assert.False(t, notBooted, "only the wait for Ready looks for a boot")
}
