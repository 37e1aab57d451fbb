package onboarding

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/maas"
)

func TestPollOutcome(t *testing.T) {
	ds := maas.Event{Type: "Node post-installation failure", Level: "ERROR", Description: "'cloudinit' metadata unreachable"}
	tests := []struct {
		target activities.PollTarget
		status maas.Status
		events []maas.Event
		want   string
	}{
		{activities.TargetReady, maas.StatusReady, nil, activities.OutcomeDone},
		{activities.TargetReady, maas.StatusAllocated, nil, activities.OutcomeDone},
		{activities.TargetReady, maas.StatusCommissioning, nil, activities.OutcomeInProgress},
		{activities.TargetReady, maas.StatusTesting, nil, activities.OutcomeInProgress},
		{activities.TargetReady, maas.StatusNew, nil, activities.OutcomeFailed},
		{activities.TargetReady, maas.StatusFailedCommissioning, nil, activities.OutcomeFailed},
		{activities.TargetReady, maas.StatusFailedTesting, nil, activities.OutcomeFailed},
		{activities.TargetDeployed, maas.StatusDeployed, nil, activities.OutcomeDone},
		{activities.TargetDeployed, maas.StatusDeploying, nil, activities.OutcomeInProgress},
		{activities.TargetDeployed, maas.StatusDeploying, []maas.Event{ds}, activities.OutcomeFailed},
		{activities.TargetDeployed, maas.StatusFailedDeployment, nil, activities.OutcomeFailed},
		{activities.TargetDeployed, maas.StatusAllocated, nil, activities.OutcomeFailed},
		{activities.TargetDeployable, maas.StatusAllocated, nil, activities.OutcomeDone},
		{activities.TargetDeployable, maas.StatusReady, nil, activities.OutcomeDone},
		{activities.TargetDeployable, maas.StatusDeploying, nil, activities.OutcomeInProgress},
		{activities.TargetDeployable, maas.StatusReleasing, nil, activities.OutcomeInProgress},
		{activities.TargetDeployable, maas.StatusFailedReleasing, nil, activities.OutcomeFailed},
		{activities.TargetDeployable, maas.StatusBroken, nil, activities.OutcomeFailed},
	}
	for _, tc := range tests {
		got, reason := pollOutcome(tc.target, maas.Machine{Status: tc.status}, tc.events)
		assert.Equal(t, tc.want, got, "%s %s", tc.target, tc.status)
		assert.NotEmpty(t, reason)
	}
}

func TestPlanAutoRelink(t *testing.T) {
	sub := func(id int) *maas.Subnet {
		return &maas.Subnet{ID: id, CIDR: fmt.Sprintf("10.%d.0.0/24", id), GatewayIP: "gw"}
	}
	tests := []struct {
		name      string
		links     []maas.Link
		wantKeep  int
		wantStale []int
	}{
		{"correct AUTO link kept", []maas.Link{{ID: 1, Mode: "auto", Subnet: sub(1)}}, 1, nil},
		{"second AUTO link removed", []maas.Link{{ID: 4, Mode: "auto", Subnet: sub(1)}, {ID: 2, Mode: "auto", Subnet: sub(1)}}, 2, []int{4}},
		{"DHCP link replaced", []maas.Link{{ID: 3, Mode: "dhcp", Subnet: sub(1)}}, 0, []int{3}},
		{"AUTO on another subnet replaced", []maas.Link{{ID: 5, Mode: "auto", Subnet: sub(2)}}, 0, []int{5}},
		{"LINK_UP replaced", []maas.Link{{ID: 6, Mode: "link_up"}}, 0, []int{6}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			keep, stale := planAutoRelink(maas.Interface{Links: tc.links}, 1)
			if tc.wantKeep == 0 {
				assert.Nil(t, keep)
			} else {
				require.NotNil(t, keep)
				assert.Equal(t, tc.wantKeep, keep.ID)
			}
			var ids []int
			for _, l := range stale {
				ids = append(ids, l.ID)
			}
			assert.Equal(t, tc.wantStale, ids)
		})
	}
}

func TestVLANSubnet(t *testing.T) {
	v := &maas.VLAN{ID: 7}
	other := &maas.VLAN{ID: 8}
	i := maas.Interface{VLAN: v, Links: []maas.Link{
		{ID: 1, Mode: "static", Subnet: &maas.Subnet{ID: 10, VLAN: v}},
		{ID: 2, Mode: "auto", Subnet: &maas.Subnet{ID: 11, VLAN: other}},
		{ID: 3, Mode: "dhcp", Subnet: &maas.Subnet{ID: 12}},
	}}
	s := vlanSubnet(i)
	require.NotNil(t, s)
	assert.Equal(t, 12, s.ID, "DHCP outranks STATIC; the AUTO link is on another VLAN")
	assert.Nil(t, vlanSubnet(maas.Interface{VLAN: v}))
}

func TestContainingSubnet(t *testing.T) {
	subnets := []maas.Subnet{{ID: 1, CIDR: "10.0.0.0/8"}, {ID: 2, CIDR: "10.50.0.0/16"}, {ID: 3, CIDR: "10.50.1.0/24"}, {ID: 4, CIDR: "bad"}}
	ip, n, err := net.ParseCIDR("10.50.1.9/24")
	require.NoError(t, err)
	assert.Equal(t, 3, containingSubnet(subnets, ip, n).ID)
	ip, n, err = net.ParseCIDR("10.50.9.9/20")
	require.NoError(t, err)
	assert.Equal(t, 2, containingSubnet(subnets, ip, n).ID, "the narrowest containing subnet")
	ip, n, err = net.ParseCIDR("192.168.0.1/24")
	require.NoError(t, err)
	assert.Nil(t, containingSubnet(subnets, ip, n))
}

func TestRedactURL(t *testing.T) {
	assert.Equal(t, "https://h/b/site.sh", redactURL("https://user:pw@h/b/site.sh?X-Amz-Signature=abc#f"))
	assert.Equal(t, "http://h/x", redactURL("http://h/x"))
}

func TestBoundKeepsAReserveBeforeTheRuntimesDeadline(t *testing.T) {
	a := New(activities.Deps{InvocationBudget: time.Hour})
	parent, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ctx, done := a.bound(parent)
	defer done()
	dl, ok := ctx.Deadline()
	require.True(t, ok)
	parentDL, _ := parent.Deadline()
	assert.False(t, dl.After(parentDL.Add(-invocationReserve)), "the reserve is kept back to report the error")

	ctx, done2 := New(activities.Deps{}).bound(context.Background())
	defer done2()
	dl, ok = ctx.Deadline()
	require.True(t, ok, "without a runtime deadline the default budget bounds the invocation")
	assert.False(t, dl.After(time.Now().Add(activities.DefaultInvocationBudget)))
}

// inProgressStatuses, which the machine watch reads to let a wait sleep
// through a move into them, are exactly the statuses pollOutcome answers
// in_progress for.
func TestInProgressStatusesMatchPollOutcome(t *testing.T) {
	for target := range pollBounds {
		var got []maas.Status
		for st := maas.StatusNew; st <= maas.StatusFailedTesting; st++ {
			if outcome, _ := pollOutcome(target, maas.Machine{Status: st}, nil); outcome == activities.OutcomeInProgress {
				got = append(got, st)
			}
		}
		assert.ElementsMatch(t, got, inProgressStatuses[target], "target %s", target)
	}
}
