package onboarding_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/activitiestest"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
	"github.com/maasflow/maasflow/shared/design"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/store"
)

func TestCommissionMachineOnlyWhenNeeded(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	e.toDiscovered(o)

	var first, second onboarding.CommissionMachineOutput
	e.must("CommissionMachine", refIn{ref(o)}, &first)
	e.must("CommissionMachine", refIn{ref(o)}, &second)
	assert.True(t, first.Commissioned)
	assert.False(t, second.Commissioned, "a repeat finds it Commissioning and leaves it alone")
	assert.Equal(t, 1, e.callsTo("POST", "commission"))
}

func TestCommissionMachineRefusesUnsafeStates(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	sid, err := e.f.Sim.AddMachine(maassim.MachineSeed{Hostname: "gpu-01", BMCIP: "10.0.0.11", PXEMAC: "52:54:00:00:00:11", Status: "deployed"})
	require.NoError(t, err)
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	e.placeAt(o, domain.StageDiscover, sid)
	requireErrorName(t, e.call("CommissionMachine", refIn{ref(o)}, nil), "MachineStateUnsafeError")
	assert.Zero(t, e.mutatingCalls())
}

// TestCheckMachineSetsTheWakeTime: a wait in progress names its machine
// and the time it is due its next check without a MAAS event: ten
// minutes on, but no later than the boot deadline while the wait for
// Ready has not seen the host boot.
func TestCheckMachineSetsTheWakeTime(t *testing.T) {
	e := newEnv(t, activitiestest.Options{SimDurations: maassim.Durations{Commissioning: 20 * time.Minute}})
	e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{NeverBoots: true})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	e.toDiscovered(o)
	e.must("CommissionMachine", refIn{ref(o)}, nil)

	var wakes []time.Time
	p := activities.Poll{}
	for range 2 {
		var out onboarding.CheckMachineOutput
		e.must("CheckMachine", onboarding.CheckMachineInput{OnboardingRef: ref(o), Target: activities.TargetReady, Stage: domain.StageWaitReady, Poll: p}, &out)
		require.Equal(t, activities.OutcomeInProgress, out.Outcome)
		assert.Equal(t, e.onboarding(o.ID).MAASSystemID, out.SystemID)
		assert.Equal(t, t0.Format(time.RFC3339Nano), out.Poll.StartedAt, "the wait keeps its start")
		assert.Equal(t, 30, out.Poll.WaitSeconds, "an execution on the Wait-state definition polls every 30 s")
		wake, err := time.Parse(time.RFC3339Nano, out.Poll.WakeAt)
		require.NoError(t, err)
		wakes = append(wakes, wake)
		p = out.Poll
		e.clk.Advance(5 * time.Minute)
	}
	assert.Equal(t, []time.Time{t0.Add(10 * time.Minute), t0.Add(12 * time.Minute)}, wakes)
}

func TestCheckMachineCopiesMAASEventsOnce(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	e.toDiscovered(o)
	e.must("CommissionMachine", refIn{ref(o)}, nil)
	e.clk.Advance(5 * time.Minute)

	count := func() int {
		n := 0
		for _, r := range e.timeline(o.ID) {
			if r.Kind == domain.TimelineMAASEvent {
				n++
			}
		}
		return n
	}
	var out onboarding.CheckMachineOutput
	e.must("CheckMachine", onboarding.CheckMachineInput{OnboardingRef: ref(o), Target: activities.TargetReady, Stage: domain.StageWaitReady}, &out)
	n := count()
	require.Positive(t, n)
	assert.Positive(t, out.Poll.LastEventID)
	// A repeat from the same poll state (a Lambda retry) copies the same
	// events again: the store keeps one row per MAAS event.
	e.must("CheckMachine", onboarding.CheckMachineInput{OnboardingRef: ref(o), Target: activities.TargetReady, Stage: domain.StageWaitReady}, nil)
	assert.Equal(t, n, count())
}

func TestCheckMachineOutcomes(t *testing.T) {
	t.Run("commissioning fails", func(t *testing.T) {
		e := newEnv(t, activitiestest.Options{})
		e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{CommissionFailures: 1})
		o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
		e.toDiscovered(o)
		e.must("CommissionMachine", refIn{ref(o)}, nil)
		out := e.poll(o, activities.TargetReady, activities.Poll{})
		assert.Equal(t, activities.OutcomeFailed, out.Outcome)
		assert.Equal(t, "Failed commissioning", out.StatusName)
		assert.Equal(t, "failed", e.lastExit(o.ID, domain.StageWaitReady).Outcome)
	})
	t.Run("wait outlives its bound", func(t *testing.T) {
		e := newEnv(t, activitiestest.Options{})
		e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{})
		o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
		e.toDiscovered(o)
		e.must("CommissionMachine", refIn{ref(o)}, nil)
		started := t0.Add(-61 * time.Minute).Format(time.RFC3339Nano)
		err := e.call("CheckMachine", onboarding.CheckMachineInput{OnboardingRef: ref(o), Target: activities.TargetReady, Stage: domain.StageWaitReady,
			Poll: activities.Poll{Count: 40, StartedAt: started}}, nil)
		requireErrorName(t, err, "MachineWaitTimeoutError")
		var te *onboarding.MachineWaitTimeoutError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, 3600, te.LimitSeconds)
	})
	t.Run("bad input", func(t *testing.T) {
		e := newEnv(t, activitiestest.Options{})
		o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
		requireErrorName(t, e.call("CheckMachine", onboarding.CheckMachineInput{OnboardingRef: ref(o), Target: "sideways", Stage: domain.StageWaitReady}, nil), "InvalidInputError")
		err := e.call("CheckMachine", map[string]any{"onboarding_id": o.ID, "attempt": 1, "target": "ready", "poll": map[string]any{"count": 0, "stray": 1}}, nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `unknown field "stray"`, "unknown fields are refused")
	})
}

func TestConfigureStorage(t *testing.T) {
	t.Run("ready machine gets the policy layout", func(t *testing.T) {
		lvm := "lvm"
		e := newEnv(t, activitiestest.Options{ProfilePolicy: domain.Policy{StorageLayout: &lvm}})
		sid, err := e.f.Sim.AddMachine(maassim.MachineSeed{Hostname: "gpu-01", BMCIP: "10.0.0.11", PXEMAC: "52:54:00:00:00:11", Status: "ready"})
		require.NoError(t, err)
		o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
		e.placeAt(o, domain.StageWaitReady, sid)
		var out onboarding.ConfigureStorageOutput
		e.must("ConfigureStorage", refIn{ref(o)}, &out)
		e.must("ConfigureStorage", refIn{ref(o)}, &out)
		assert.Equal(t, onboarding.ConfigureStorageOutput{Layout: "lvm", Applied: true}, out)
		assert.Equal(t, 2, e.callsTo("POST", "set_storage_layout"), "re-applying is harmless")
	})
	t.Run("allocated machine keeps its layout", func(t *testing.T) {
		e := newEnv(t, activitiestest.Options{})
		sid, err := e.f.Sim.AddMachine(maassim.MachineSeed{Hostname: "gpu-01", BMCIP: "10.0.0.11", PXEMAC: "52:54:00:00:00:11", Status: "allocated"})
		require.NoError(t, err)
		o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
		e.placeAt(o, domain.StageWaitReady, sid)
		var out onboarding.ConfigureStorageOutput
		e.must("ConfigureStorage", refIn{ref(o)}, &out)
		assert.False(t, out.Applied)
		assert.Zero(t, e.callsTo("POST", "set_storage_layout"), "MAAS refuses it outside Ready")
	})
}

func TestPreflightPXE(t *testing.T) {
	t.Run("unlinked boot interface fails before deploy", func(t *testing.T) {
		e := newEnv(t, activitiestest.Options{})
		e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{PXEUnlinked: true})
		o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
		e.toReady(o)
		e.must("ConfigureStorage", refIn{ref(o)}, nil)
		err := e.call("PreflightPXE", refIn{ref(o)}, nil)
		requireErrorName(t, err, "PXEPreflightError")
		assert.Contains(t, err.Error(), "no VLAN")
		assert.Equal(t, "52:54:00:00:00:11", e.onboarding(o.ID).PXEMAC, "the MAC is recorded for a later attempt")
		assert.Zero(t, e.callsTo("POST", "link_subnet"))
	})
	t.Run("a duplicate AUTO link is removed", func(t *testing.T) {
		e := newEnv(t, activitiestest.Options{})
		e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{})
		o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
		e.toReady(o)
		e.must("ConfigureStorage", refIn{ref(o)}, nil)
		sid := e.onboarding(o.ID).MAASSystemID
		c, err := maas.NewClient(e.f.Site.MAASURL, activitiestest.APIKey, maas.WithNow(e.clk.Now))
		require.NoError(t, err)
		ifaces, err := c.Interfaces(context.Background(), sid)
		require.NoError(t, err)
		boot := ifaces[0]
		require.NotEmpty(t, boot.Links)
		// MAAS makes a second AUTO link when AUTO is linked twice (maas-behaviour §9).
		_, err = c.LinkSubnet(context.Background(), sid, boot.ID, maas.LinkSubnetParams{Mode: maas.LinkModeAuto, SubnetID: boot.Links[0].Subnet.ID})
		require.NoError(t, err)

		var out onboarding.PreflightPXEOutput
		e.must("PreflightPXE", refIn{ref(o)}, &out)
		assert.True(t, out.Relinked)
		ifaces, err = c.Interfaces(context.Background(), sid)
		require.NoError(t, err)
		require.Len(t, ifaces[0].Links, 1)
		assert.Equal(t, "auto", strings.ToLower(ifaces[0].Links[0].Mode))

		e.must("PreflightPXE", refIn{ref(o)}, &out)
		assert.False(t, out.Relinked, "a repeat changes nothing")
	})
	t.Run("a failed relink leaves its retry the subnet", func(t *testing.T) {
		e := newEnv(t, activitiestest.Options{})
		e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{})
		o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
		e.toReady(o)
		e.must("ConfigureStorage", refIn{ref(o)}, nil)
		sid := e.onboarding(o.ID).MAASSystemID
		c, err := maas.NewClient(e.f.Site.MAASURL, activitiestest.APIKey, maas.WithNow(e.clk.Now))
		require.NoError(t, err)
		ifaces, err := c.Interfaces(context.Background(), sid)
		require.NoError(t, err)
		boot := ifaces[0]
		require.Len(t, boot.Links, 1)
		subnetID := boot.Links[0].Subnet.ID
		// The boot interface is linked DHCP only, so the preflight has to
		// replace that link with an AUTO one.
		_, err = c.UnlinkSubnet(context.Background(), sid, boot.ID, boot.Links[0].ID)
		require.NoError(t, err)
		_, err = c.LinkSubnet(context.Background(), sid, boot.ID, maas.LinkSubnetParams{Mode: maas.LinkModeDHCP, SubnetID: subnetID})
		require.NoError(t, err)

		// The first try's link_subnet answers 503; the ASL retries.
		deps := e.f.Deps
		deps.MAAS = &flakyLinkConnector{Connector: deps.MAAS, failures: 1}
		for _, fn := range onboarding.Catalog(deps) {
			e.handlers[fn.Activity] = lambdaHandler(fn.Handler)
		}
		requireErrorName(t, e.call("PreflightPXE", refIn{ref(o)}, nil), "MAASUnavailableError")
		var out onboarding.PreflightPXEOutput
		e.must("PreflightPXE", refIn{ref(o)}, &out)
		assert.True(t, out.Relinked)

		ifaces, err = c.Interfaces(context.Background(), sid)
		require.NoError(t, err)
		require.Len(t, ifaces[0].Links, 1)
		assert.Equal(t, "auto", strings.ToLower(ifaces[0].Links[0].Mode))
		require.NotNil(t, ifaces[0].Links[0].Subnet)
		assert.Equal(t, subnetID, ifaces[0].Links[0].Subnet.ID)
	})
}

// flakyLinkConnector hands out MAAS clients whose LinkSubnet answers 503
// the first failures times.
type flakyLinkConnector struct {
	activities.Connector
	failures int
}

func (f *flakyLinkConnector) ForSite(ctx context.Context, siteID string) (activities.MAAS, error) {
	client, err := f.Connector.ForSite(ctx, siteID)
	if err != nil {
		return nil, err
	}
	return &flakyLinkClient{MAAS: client, c: f}, nil
}

type flakyLinkClient struct {
	activities.MAAS
	c *flakyLinkConnector
}

func (f *flakyLinkClient) LinkSubnet(ctx context.Context, systemID string, interfaceID int, p maas.LinkSubnetParams) (maas.Interface, error) {
	if f.c.failures > 0 {
		f.c.failures--
		return maas.Interface{}, &maas.MAASUnavailableError{Op: "link_subnet", SystemID: systemID, StatusCode: 503, Message: "simulated"}
	}
	return f.MAAS.LinkSubnet(ctx, systemID, interfaceID, p)
}

func TestApplyRoCE(t *testing.T) {
	yes := true
	setup := func(t *testing.T, rows []domain.RoCEAssignment) (*env, domain.Onboarding) {
		t.Helper()
		e := newEnv(t, activitiestest.Options{ProfilePolicy: domain.Policy{RoCEPhase2: &yes}})
		e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{}, "52:54:00:00:10:01", "52:54:00:00:10:02")
		if len(rows) > 0 {
			_, err := e.f.Store.UpsertRoCEAssignments(context.Background(), activitiestest.SiteID, rows)
			require.NoError(t, err)
		}
		o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
		e.toReady(o)
		e.must("ConfigureStorage", refIn{ref(o)}, nil)
		e.must("PreflightPXE", refIn{ref(o)}, nil)
		return e, o
	}
	t.Run("interfaces linked STATIC", func(t *testing.T) {
		e, o := setup(t, []domain.RoCEAssignment{
			{SiteID: activitiestest.SiteID, Hostname: "gpu-01", Interface: "eno2", IPv4CIDR: "10.20.0.61/24"},
			{SiteID: activitiestest.SiteID, Hostname: "gpu-01", Interface: "eno3", IPv4CIDR: "10.20.0.62/24"},
		})
		var out onboarding.ApplyRoCEOutput
		e.must("ApplyRoCE", refIn{ref(o)}, &out)
		assert.Equal(t, onboarding.ApplyRoCEOutput{Interfaces: []string{"eno2", "eno3"}, Linked: 2}, out)
		c, err := maas.NewClient(e.f.Site.MAASURL, activitiestest.APIKey, maas.WithNow(e.clk.Now))
		require.NoError(t, err)
		ifaces, err := c.Interfaces(context.Background(), e.onboarding(o.ID).MAASSystemID)
		require.NoError(t, err)
		got := map[string]string{}
		for _, i := range ifaces {
			for _, l := range i.Links {
				if strings.EqualFold(l.Mode, "static") {
					got[i.Name] = l.IPAddress
				}
			}
		}
		assert.Equal(t, map[string]string{"eno2": "10.20.0.61", "eno3": "10.20.0.62"}, got)

		e.must("ApplyRoCE", refIn{ref(o)}, &out)
		assert.Zero(t, out.Linked, "a repeat changes nothing")
	})
	t.Run("rows naming device aliases", func(t *testing.T) {
		// The simulator's board puts the first extra NIC on bus 0x1a, the
		// second on 0x2c; the rows, the node's rails in the site's design,
		// name them by the design's aliases.
		e, o := setup(t, nil)
		_, err := e.f.Store.PutSiteDesign(context.Background(), store.SiteDesign{SiteID: activitiestest.SiteID, Design: design.Design{
			HardwareProfiles: []design.HardwareProfile{{Name: "board", DeviceAliases: []design.DeviceAlias{
				{Alias: "rail0", PCIAddress: "0000:1a:00.0"}, {Alias: "rail1", PCIAddress: "0000:2c:00.0"}}}},
			HostProfiles: []design.HostProfile{{Name: "gpu", HardwareProfile: "board"}},
			Nodes: []design.NodeAssignment{{Hostname: "gpu-01", BMCAddress: "10.0.0.11", HostProfile: "gpu", RoCERails: []design.RoCERail{
				{Interface: "rail0", IPv4CIDR: "10.20.0.61/24"}, {Interface: "rail1", IPv4CIDR: "10.20.0.62/24"}}}},
		}}, 0)
		require.NoError(t, err)
		var out onboarding.ApplyRoCEOutput
		e.must("ApplyRoCE", refIn{ref(o)}, &out)
		assert.Equal(t, onboarding.ApplyRoCEOutput{Interfaces: []string{"rail0", "rail1"}, Linked: 2}, out)
		c, err := maas.NewClient(e.f.Site.MAASURL, activitiestest.APIKey, maas.WithNow(e.clk.Now))
		require.NoError(t, err)
		ifaces, err := c.Interfaces(context.Background(), e.onboarding(o.ID).MAASSystemID)
		require.NoError(t, err)
		got := map[string]string{}
		for _, i := range ifaces {
			for _, l := range i.Links {
				if strings.EqualFold(l.Mode, "static") {
					got[i.Name] = l.IPAddress
				}
			}
		}
		assert.Equal(t, map[string]string{"eno2": "10.20.0.61", "eno3": "10.20.0.62"}, got, "each alias's NIC, by PCI address")
	})
	t.Run("no rows", func(t *testing.T) {
		e, o := setup(t, nil)
		requireErrorName(t, e.call("ApplyRoCE", refIn{ref(o)}, nil), "RoCEAssignmentError")
	})
	t.Run("unknown interface", func(t *testing.T) {
		e, o := setup(t, []domain.RoCEAssignment{{SiteID: activitiestest.SiteID, Hostname: "gpu-01", Interface: "ib7", IPv4CIDR: "10.20.0.61/24"}})
		err := e.call("ApplyRoCE", refIn{ref(o)}, nil)
		requireErrorName(t, err, "RoCEAssignmentError")
		assert.Contains(t, err.Error(), "ib7")
	})
	t.Run("no subnet contains the address", func(t *testing.T) {
		e, o := setup(t, []domain.RoCEAssignment{{SiteID: activitiestest.SiteID, Hostname: "gpu-01", Interface: "eno2", IPv4CIDR: "192.168.77.5/24"}})
		requireErrorName(t, e.call("ApplyRoCE", refIn{ref(o)}, nil), "RoCEAssignmentError")
	})
}

func TestApplyRoCEOffDoesNothing(t *testing.T) {
	e := newEnv(t, activitiestest.Options{})
	sid, err := e.f.Sim.AddMachine(maassim.MachineSeed{Hostname: "gpu-01", BMCIP: "10.0.0.11", PXEMAC: "52:54:00:00:00:11", Status: "ready"})
	require.NoError(t, err)
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	e.placeAt(o, domain.StagePXEPreflight, sid)
	var out onboarding.ApplyRoCEOutput
	e.must("ApplyRoCE", refIn{ref(o)}, &out)
	assert.True(t, out.Skipped)
	assert.Zero(t, e.f.Sim.Calls().Total)
}

// TestCheckMachineReadsEventsThenTheMachine: every check costs two MAAS
// GETs, the machine's events after the wait's cursor and then the machine;
// the cursor covers the DEBUG events too (so the watcher does not wake the
// wait again for a status change this check saw), which stay off the
// timeline while the INFO ones reach it.
func TestCheckMachineReadsEventsThenTheMachine(t *testing.T) {
	e := newEnv(t, activitiestest.Options{SimDurations: maassim.Durations{Commissioning: 5 * time.Minute, Testing: 2 * time.Minute}})
	e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	e.toDiscovered(o)
	e.must("CommissionMachine", refIn{ref(o)}, nil)

	gets := func() int {
		n := 0
		for _, c := range e.f.Sim.Calls().Calls {
			if c.Method == "GET" {
				n += c.Count
			}
		}
		return n
	}
	p := activities.Poll{}
	var perCheck []int
	var out onboarding.CheckMachineOutput
	for range 100 {
		before := gets()
		e.must("CheckMachine", onboarding.CheckMachineInput{OnboardingRef: ref(o), Target: activities.TargetReady, Stage: domain.StageWaitReady, Poll: p}, &out)
		perCheck = append(perCheck, gets()-before)
		if out.Outcome != activities.OutcomeInProgress {
			break
		}
		e.clk.Advance(watchRound)
		p = out.Poll
	}
	require.Equal(t, activities.OutcomeDone, out.Outcome)
	assert.Equal(t, "Ready", out.StatusName)
	for n, gets := range perCheck {
		assert.Equal(t, 2, gets, "check %d", n)
	}
	client, err := maas.NewClient(e.f.Site.MAASURL, domain.Secret(activitiestest.APIKey), maas.WithHTTPClient(e.f.SimServer.Client()))
	require.NoError(t, err)
	all, err := client.Events(context.Background(), maas.EventQuery{SystemID: out.SystemID, Level: maas.EventLevelDebug, Limit: 1000})
	require.NoError(t, err)
	require.NotEmpty(t, all)
	assert.Equal(t, all[0].ID, out.Poll.LastEventID, "the cursor is the machine's newest event, of any level")
	var changes int
	for _, e := range all {
		if e.Type == "Node changed status" {
			changes++
		}
	}
	assert.GreaterOrEqual(t, changes, 2, "Commissioning → Testing → Ready are DEBUG events")
	var copied, debug bool
	for _, r := range e.timeline(o.ID) {
		copied = copied || (r.Kind == domain.TimelineMAASEvent && strings.Contains(r.Detail, "Ready"))
		debug = debug || (r.Kind == domain.TimelineMAASEvent && strings.HasPrefix(r.Detail, "DEBUG"))
	}
	assert.True(t, copied, "the events of the phase are on the timeline")
	assert.False(t, debug, "DEBUG events stay off the timeline")
}

// TestCheckMachineNoticesAVanishedMachine: every check reads the machine,
// so one MAAS no longer knows is reported at once.
func TestCheckMachineNoticesAVanishedMachine(t *testing.T) {
	e := newEnv(t, activitiestest.Options{SimDurations: maassim.Durations{Commissioning: 20 * time.Minute}})
	e.addHardware("gpu-01", "10.0.0.11", "52:54:00:00:00:11", maassim.Faults{})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	e.toDiscovered(o)
	e.must("CommissionMachine", refIn{ref(o)}, nil)
	sid := e.onboarding(o.ID).MAASSystemID
	client, err := maas.NewClient(e.f.Site.MAASURL, domain.Secret(activitiestest.APIKey), maas.WithHTTPClient(e.f.SimServer.Client()))
	require.NoError(t, err)
	require.NoError(t, client.Delete(context.Background(), sid))

	in := onboarding.CheckMachineInput{OnboardingRef: ref(o), Target: activities.TargetReady, Stage: domain.StageWaitReady,
		Poll: activities.Poll{Count: 5, StartedAt: t0.Format(time.RFC3339Nano), Status: "Commissioning", BootSeen: true}}
	requireErrorName(t, e.call("CheckMachine", in, nil), "MAASNotFoundError")
}
