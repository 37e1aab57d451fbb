package maassim

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/canonical/gomaasclient/client"
	"github.com/canonical/gomaasclient/entity"
	gomaasapi "github.com/juju/gomaasapi/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fidelity suite drives MAAS through a client, as maasflow does, and
// checks the behaviour docs/maas-behaviour.md describes. It runs against the simulator
// always and against a real MAAS when MAAS_URL and MAAS_API_KEY are set, so
// the simulator can be no kinder than MAAS. Every scenario runs once per
// driver: canonical/gomaasclient and maasflow's own shared/maas client
// (fidelity_maasflow_test.go).

// fidelityDriver is what the suite asks of a MAAS client.
type fidelityDriver interface {
	Probe(ctx context.Context) (version, username string, err error)
	// Create adds a machine without commissioning.
	Create(ctx context.Context, p fCreate) (fMachine, error)
	Get(ctx context.Context, sid string) (fMachine, error)
	FindByHostname(ctx context.Context, hostname string) ([]fMachine, error)
	// FindByPowerAddress returns the system ids of the machines whose BMC
	// power_address is addr, read from machines/?op=power_parameters (MAAS
	// has no such filter, maas-behaviour §6).
	FindByPowerAddress(ctx context.Context, addr string) ([]string, error)
	// Commission commissions with skip_bmc_config.
	Commission(ctx context.Context, sid string) (fMachine, error)
	// Allocate allocates by system_id constraint.
	Allocate(ctx context.Context, sid string) (fMachine, error)
	Deploy(ctx context.Context, sid, userDataB64 string) (fMachine, error)
	Abort(ctx context.Context, sid string) (fMachine, error)
	Release(ctx context.Context, sid string, erase bool) (fMachine, error)
	MarkBroken(ctx context.Context, sid, comment string) (fMachine, error)
	MarkFixed(ctx context.Context, sid string) (fMachine, error)
	PowerState(ctx context.Context, sid string) (string, error)
	Interfaces(ctx context.Context, sid string) ([]fInterface, error)
	LinkSubnet(ctx context.Context, sid string, ifaceID int, mode string, subnetID int) (fInterface, error)
	UnlinkSubnet(ctx context.Context, sid string, ifaceID, linkID int) (fInterface, error)
	Subnets(ctx context.Context) ([]fSubnet, error)
	// Events returns the machine's events at level DEBUG and up, newest first.
	Events(ctx context.Context, sid string) ([]fEvent, error)
	// InstallLog returns /tmp/install.log of the current installation.
	InstallLog(ctx context.Context, sid string) (string, error)
	Delete(ctx context.Context, sid string) error
	// NodeDevices lists the machine's node devices (fidelity_devices_test.go).
	NodeDevices(ctx context.Context, sid string) ([]fDevice, error)
}

// fCreate is a machine create. An IPMI machine without architecture has
// its MACs dropped by MAAS (maas-behaviour §6).
type fCreate struct {
	Hostname     string
	PowerType    string
	BMC          string
	User, Pass   string
	Architecture string
	MACs         []string
}

type fMachine struct {
	SystemID         string
	Hostname         string
	Status           int
	StatusName       string
	Owner            string
	PowerType        string
	Architecture     string
	ErrorDescription string
	BootInterfaceID  int
	Interfaces       int // len(interface_set)
}

type fInterface struct {
	ID     int
	Name   string
	MAC    string
	HasLAN bool // connected to a VLAN
	Links  []fLink
}

type fLink struct {
	ID       int
	Mode     string
	SubnetID int
	IP       string
}

type fSubnet struct {
	ID   int
	CIDR string
}

type fEvent struct {
	ID          int
	Level       string
	Type        string
	Description string
}

// fidelityError is a refusal from MAAS, as any driver reports it.
type fidelityError struct {
	Status int
	Body   string
}

func (e *fidelityError) Error() string { return fmt.Sprintf("MAAS answered %d: %s", e.Status, e.Body) }

// --- gomaasclient driver ----------------------------------------------------

// gomaasDriver drives MAAS with canonical/gomaasclient, the client
// terraform-provider-maas uses.
type gomaasDriver struct{ c *client.Client }

func newGomaasDriver(t *testing.T, maasURL, key string) *gomaasDriver {
	t.Helper()
	c, err := client.GetClient(maasURL, key, "2.0")
	require.NoError(t, err)
	return &gomaasDriver{c: c}
}

func asFidelity(err error) error {
	if err == nil {
		return nil
	}
	if se, ok := gomaasapi.GetServerError(err); ok {
		return &fidelityError{Status: se.StatusCode, Body: se.BodyMessage}
	}
	return err
}

func fromEntity(m *entity.Machine) fMachine {
	return fMachine{
		SystemID: m.SystemID, Hostname: m.Hostname, Status: int(m.Status), StatusName: m.StatusName,
		Owner: m.Owner, PowerType: m.PowerType, Architecture: m.Architecture, BootInterfaceID: m.BootInterface.ID,
		Interfaces: len(m.InterfaceSet),
	}
}

func (d *gomaasDriver) machine(m *entity.Machine, err error) (fMachine, error) {
	if err != nil {
		return fMachine{}, asFidelity(err)
	}
	return fromEntity(m), nil
}

func (d *gomaasDriver) Probe(context.Context) (string, string, error) {
	v, err := d.c.Version.Get()
	if err != nil {
		return "", "", asFidelity(err)
	}
	u, err := d.c.Users.Whoami()
	if err != nil {
		return "", "", asFidelity(err)
	}
	return v.Version, u.UserName, nil
}

func (d *gomaasDriver) Create(_ context.Context, p fCreate) (fMachine, error) {
	no := false
	power := map[string]any{}
	if p.PowerType == "ipmi" {
		power = map[string]any{
			"power_parameters_power_address": p.BMC, "power_parameters_power_user": p.User,
			"power_parameters_power_pass": p.Pass, "power_parameters_power_driver": "LAN_2_0",
		}
	}
	return d.machine(d.c.Machines.Create(&entity.MachineCreateParams{
		Hostname: p.Hostname, PowerType: p.PowerType, Architecture: p.Architecture, MACAddresses: p.MACs, Commission: &no,
	}, power))
}

func (d *gomaasDriver) Get(_ context.Context, sid string) (fMachine, error) {
	m, err := d.c.Machine.Get(sid)
	if err != nil {
		return fMachine{}, asFidelity(err)
	}
	out := fromEntity(m)
	// error_description is not in gomaasclient's entity; read it raw.
	raw := map[string]any{}
	if err := d.c.Machine.(*client.Machine).APIClient.GetSubObject("machines").GetSubObject(sid).Get("", nil, func(b []byte) error {
		return json.Unmarshal(b, &raw)
	}); err == nil {
		out.ErrorDescription, _ = raw["error_description"].(string)
	}
	return out, nil
}

func (d *gomaasDriver) FindByHostname(_ context.Context, hostname string) ([]fMachine, error) {
	ms, err := d.c.Machines.Get(&entity.MachinesParams{Hostname: []string{hostname}})
	if err != nil {
		return nil, asFidelity(err)
	}
	out := make([]fMachine, 0, len(ms))
	for n := range ms {
		out = append(out, fromEntity(&ms[n]))
	}
	return out, nil
}

func (d *gomaasDriver) FindByPowerAddress(_ context.Context, addr string) ([]string, error) {
	// gomaasclient has no helper for the collection's power_parameters.
	var params map[string]map[string]any
	err := d.c.Machines.(*client.Machines).APIClient.GetSubObject("machines").Get("power_parameters", nil, func(b []byte) error {
		return json.Unmarshal(b, &params)
	})
	if err != nil {
		return nil, asFidelity(err)
	}
	var out []string
	for sid, p := range params {
		if a, _ := p["power_address"].(string); a == addr {
			out = append(out, sid)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (d *gomaasDriver) Commission(_ context.Context, sid string) (fMachine, error) {
	return d.machine(d.c.Machine.Commission(sid, &entity.MachineCommissionParams{SkipBMCConfig: true}))
}

func (d *gomaasDriver) Allocate(_ context.Context, sid string) (fMachine, error) {
	return d.machine(d.c.Machines.Allocate(&entity.MachineAllocateParams{SystemID: sid}))
}

func (d *gomaasDriver) Deploy(_ context.Context, sid, userData string) (fMachine, error) {
	return d.machine(d.c.Machine.Deploy(sid, &entity.MachineDeployParams{UserData: userData, DistroSeries: "jammy"}))
}

func (d *gomaasDriver) Abort(_ context.Context, sid string) (fMachine, error) {
	return d.machine(d.c.Machine.Abort(sid, "fidelity suite"))
}

func (d *gomaasDriver) Release(_ context.Context, sid string, erase bool) (fMachine, error) {
	return d.machine(d.c.Machine.Release(sid, &entity.MachineReleaseParams{Erase: erase, QuickErase: erase, Comment: "fidelity suite"}))
}

func (d *gomaasDriver) MarkBroken(_ context.Context, sid, comment string) (fMachine, error) {
	return d.machine(d.c.Machine.MarkBroken(sid, comment))
}

func (d *gomaasDriver) MarkFixed(_ context.Context, sid string) (fMachine, error) {
	return d.machine(d.c.Machine.MarkFixed(sid, "fidelity suite"))
}

func (d *gomaasDriver) PowerState(_ context.Context, sid string) (string, error) {
	ps, err := d.c.Machine.GetPowerState(sid)
	if err != nil {
		return "", asFidelity(err)
	}
	return ps.State, nil
}

func fromIface(i *entity.NetworkInterface) fInterface {
	out := fInterface{ID: i.ID, Name: i.Name, MAC: i.MACAddress, HasLAN: i.VLAN.ID != 0}
	for _, l := range i.Links {
		out.Links = append(out.Links, fLink{ID: l.ID, Mode: l.Mode, SubnetID: l.Subnet.ID, IP: l.IPAddress})
	}
	return out
}

func (d *gomaasDriver) Interfaces(_ context.Context, sid string) ([]fInterface, error) {
	is, err := d.c.NetworkInterfaces.Get(sid)
	if err != nil {
		return nil, asFidelity(err)
	}
	out := make([]fInterface, 0, len(is))
	for n := range is {
		out = append(out, fromIface(&is[n]))
	}
	return out, nil
}

func (d *gomaasDriver) LinkSubnet(_ context.Context, sid string, ifaceID int, mode string, subnetID int) (fInterface, error) {
	i, err := d.c.NetworkInterface.LinkSubnet(sid, ifaceID, &entity.NetworkInterfaceLinkParams{Mode: mode, Subnet: subnetID})
	if err != nil {
		return fInterface{}, asFidelity(err)
	}
	return fromIface(i), nil
}

func (d *gomaasDriver) UnlinkSubnet(_ context.Context, sid string, ifaceID, linkID int) (fInterface, error) {
	i, err := d.c.NetworkInterface.UnlinkSubnet(sid, ifaceID, linkID)
	if err != nil {
		return fInterface{}, asFidelity(err)
	}
	return fromIface(i), nil
}

func (d *gomaasDriver) Subnets(context.Context) ([]fSubnet, error) {
	ss, err := d.c.Subnets.Get()
	if err != nil {
		return nil, asFidelity(err)
	}
	out := make([]fSubnet, 0, len(ss))
	for _, s := range ss {
		out = append(out, fSubnet{ID: s.ID, CIDR: s.CIDR})
	}
	return out, nil
}

func (d *gomaasDriver) Events(_ context.Context, sid string) ([]fEvent, error) {
	r, err := d.c.Events.Get(&entity.EventParams{ID: sid, Level: "DEBUG", Limit: "1000"})
	if err != nil {
		return nil, asFidelity(err)
	}
	out := make([]fEvent, 0, len(r.Events))
	for _, e := range r.Events {
		out = append(out, fEvent{ID: e.ID, Level: string(e.Level), Type: e.Type, Description: e.Description})
	}
	return out, nil
}

func (d *gomaasDriver) InstallLog(_ context.Context, sid string) (string, error) {
	sets, err := d.c.NodeResults.Get(sid, &entity.NodeResultParams{Type: entity.INSTALLATION, IncludeOutput: true})
	if err != nil {
		return "", asFidelity(err)
	}
	for n := len(sets) - 1; n >= 0; n-- {
		if sets[n].Type != entity.INSTALLATION {
			continue
		}
		for _, r := range sets[n].Results {
			if r.Name == "/tmp/install.log" {
				b, err := base64.StdEncoding.DecodeString(r.Output)
				return string(b), err
			}
		}
	}
	return "", errors.New("no /tmp/install.log result")
}

func (d *gomaasDriver) Delete(_ context.Context, sid string) error {
	return asFidelity(d.c.Machine.Delete(sid))
}

// --- environment --------------------------------------------------------------

// fidelityEnv is where the suite runs: the simulator on a fake clock, or a
// real MAAS where time is wall time.
type fidelityEnv struct {
	d    fidelityDriver
	real bool
	// host returns the BMC of a host with the faults, or false when this
	// environment cannot provide one.
	host func(t *testing.T, f Faults) (bmc string, ok bool)
	// pass lets a phase of (simulated) length d go by.
	pass func(t *testing.T, d time.Duration)
	// enrolled reports whether the node enrolled (simulator only).
	enroll   *enrollRecorder
	bmcUser  string
	bmcPass  string
	hostname func() string
}

// fidelityRun is one scenario's state as its steps go.
type fidelityRun struct {
	env    *fidelityEnv
	ctx    context.Context
	sid    string
	userDB string // base64 user_data the deploys send
	nodeID string
}

type fidelityStep struct {
	name string
	do   func(t *testing.T, r *fidelityRun)
}

type fidelityScenario struct {
	name string
	// faults the host carries; a scenario with faults runs on the simulator
	// only, since a real MAAS cannot be told to fail.
	faults  Faults
	mutates bool
	steps   []fidelityStep
}

func (s fidelityScenario) needsFaults() bool { return s.faults != (Faults{}) }

func step(name string, do func(t *testing.T, r *fidelityRun)) fidelityStep {
	return fidelityStep{name: name, do: do}
}

func expectStatus(want string) fidelityStep {
	return step("status is "+want, func(t *testing.T, r *fidelityRun) {
		t.Helper()
		m, err := r.env.d.Get(r.ctx, r.sid)
		require.NoError(t, err)
		assert.Equal(t, want, m.StatusName)
	})
}

// await lets the phase of simulated length d pass, then expects a status.
// On a real MAAS it polls for up to five times the phase.
func await(want string, d time.Duration) fidelityStep {
	return step(fmt.Sprintf("%s within %s", want, d), func(t *testing.T, r *fidelityRun) {
		t.Helper()
		if !r.env.real {
			r.env.pass(t, d)
			m, err := r.env.d.Get(r.ctx, r.sid)
			require.NoError(t, err)
			require.Equal(t, want, m.StatusName)
			return
		}
		deadline := time.Now().Add(5*d + 5*time.Minute)
		for {
			m, err := r.env.d.Get(r.ctx, r.sid)
			require.NoError(t, err)
			if m.StatusName == want {
				return
			}
			require.True(t, time.Now().Before(deadline), "still %s, want %s", m.StatusName, want)
			r.env.pass(t, 15*time.Second)
		}
	})
}

func expectRefused(op string, code int, bodyPart string, call func(r *fidelityRun) error) fidelityStep {
	return step(fmt.Sprintf("%s refused %d", op, code), func(t *testing.T, r *fidelityRun) {
		t.Helper()
		err := call(r)
		var fe *fidelityError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, code, fe.Status)
		assert.Contains(t, fe.Body, strings.ReplaceAll(bodyPart, "{sid}", r.sid))
	})
}

func expectEvent(typ, descPart string) fidelityStep {
	return step("event "+typ, func(t *testing.T, r *fidelityRun) {
		t.Helper()
		evs, err := r.env.d.Events(r.ctx, r.sid)
		require.NoError(t, err)
		for n := 1; n < len(evs); n++ {
			require.Greater(t, evs[n-1].ID, evs[n].ID, "events are newest first")
		}
		for _, e := range evs {
			if e.Type == typ && strings.Contains(e.Description, descPart) {
				return
			}
		}
		t.Fatalf("no %q event containing %q in %+v", typ, descPart, evs)
	})
}

func op(name string, f func(r *fidelityRun) (fMachine, error), wantStatus string) fidelityStep {
	return step(name, func(t *testing.T, r *fidelityRun) {
		t.Helper()
		m, err := f(r)
		require.NoError(t, err)
		if wantStatus != "" {
			assert.Equal(t, wantStatus, m.StatusName)
		}
	})
}

// createIPMI creates an IPMI machine for a fresh host with the given
// architecture and no MAC: MAAS links it to its host by BMC address.
func createIPMI(name, arch string) fidelityStep {
	return step(name, func(t *testing.T, r *fidelityRun) {
		t.Helper()
		bmc, ok := r.env.host(t, Faults{})
		require.True(t, ok)
		m, err := r.env.d.Create(r.ctx, fCreate{
			Hostname: r.env.hostname(), PowerType: "ipmi", BMC: bmc, User: r.env.bmcUser, Pass: r.env.bmcPass, Architecture: arch,
		})
		require.NoError(t, err)
		r.sid = m.SystemID
		assert.Equal(t, "New", m.StatusName)
		assert.Equal(t, "ipmi", m.PowerType)
		assert.Zero(t, m.Interfaces, "no MAC sent: no interface until commissioning")
		if arch != "" {
			assert.Equal(t, arch, m.Architecture)
		}
		found, err := r.env.d.FindByHostname(r.ctx, m.Hostname)
		require.NoError(t, err)
		require.Len(t, found, 1)
		assert.Equal(t, r.sid, found[0].SystemID)
		sids, err := r.env.d.FindByPowerAddress(r.ctx, bmc)
		require.NoError(t, err)
		assert.Contains(t, sids, r.sid)
	})
}

var (
	createStep     = createIPMI("create IPMI machine", "")
	commissionStep = op("commission", func(r *fidelityRun) (fMachine, error) { return r.env.d.Commission(r.ctx, r.sid) }, "Commissioning")
	allocateStep   = step("allocate", func(t *testing.T, r *fidelityRun) {
		t.Helper()
		m, err := r.env.d.Allocate(r.ctx, r.sid)
		require.NoError(t, err)
		assert.Equal(t, "Allocated", m.StatusName)
		assert.NotEmpty(t, m.Owner)
	})
	deployStep = op("deploy", func(r *fidelityRun) (fMachine, error) { return r.env.d.Deploy(r.ctx, r.sid, r.userDB) }, "Deploying")
	bootLinked = step("boot interface linked AUTO to a subnet", func(t *testing.T, r *fidelityRun) {
		t.Helper()
		m, err := r.env.d.Get(r.ctx, r.sid)
		require.NoError(t, err)
		is, err := r.env.d.Interfaces(r.ctx, r.sid)
		require.NoError(t, err)
		for _, i := range is {
			if i.ID == m.BootInterfaceID {
				require.NotEmpty(t, i.Links)
				assert.Equal(t, "auto", i.Links[0].Mode)
				assert.NotZero(t, i.Links[0].SubnetID)
				return
			}
		}
		t.Fatalf("boot interface %d not listed", m.BootInterfaceID)
	})
	installLogHas = func(part string) fidelityStep {
		return step("install log has "+part, func(t *testing.T, r *fidelityRun) {
			t.Helper()
			log, err := r.env.d.InstallLog(r.ctx, r.sid)
			require.NoError(t, err)
			assert.Contains(t, log, part)
		})
	}
	deleteStep = step("delete", func(t *testing.T, r *fidelityRun) {
		t.Helper()
		require.NoError(t, r.env.d.Delete(r.ctx, r.sid))
		_, err := r.env.d.Get(r.ctx, r.sid)
		var fe *fidelityError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, http.StatusNotFound, fe.Status)
		assert.Equal(t, "No Machine matches the given query.", fe.Body)
	})
	enrolled = func(want bool) fidelityStep {
		return step(fmt.Sprintf("node enrolled: %v", want), func(t *testing.T, r *fidelityRun) {
			t.Helper()
			if r.env.enroll == nil {
				t.Log("enrollment is observable on the simulator only")
				return
			}
			if want {
				call := r.env.enroll.wait(t, r.nodeID)
				assert.Equal(t, "token-"+r.nodeID, call.token)
				return
			}
			assert.Zero(t, r.env.enroll.count(r.nodeID))
		})
	}
)

func release(erase bool, want string) fidelityStep {
	return op(fmt.Sprintf("release erase=%v", erase), func(r *fidelityRun) (fMachine, error) {
		return r.env.d.Release(r.ctx, r.sid, erase)
	}, want)
}

// readyPath is create → commission → Testing → Ready.
var readyPath = []fidelityStep{
	createStep, commissionStep, await("Testing", 2*time.Minute), await("Ready", time.Minute), bootLinked,
}

func withReady(steps ...fidelityStep) []fidelityStep {
	return append(append([]fidelityStep{}, readyPath...), steps...)
}

func fidelityScenarios() []fidelityScenario {
	deployAgain := func(r *fidelityRun) error { _, err := r.env.d.Deploy(r.ctx, r.sid, r.userDB); return err }
	return []fidelityScenario{
		{name: "probe and refusals", steps: []fidelityStep{
			step("version and whoami", func(t *testing.T, r *fidelityRun) {
				t.Helper()
				v, u, err := r.env.d.Probe(r.ctx)
				require.NoError(t, err)
				assert.NotEmpty(t, v)
				assert.NotEmpty(t, u)
			}),
			step("unknown hostname lists nothing", func(t *testing.T, r *fidelityRun) {
				t.Helper()
				ms, err := r.env.d.FindByHostname(r.ctx, "maasflow-fidelity-no-such-host")
				require.NoError(t, err)
				assert.Empty(t, ms)
			}),
			expectRefused("read unknown machine", http.StatusNotFound, "No Machine matches the given query.", func(r *fidelityRun) error {
				_, err := r.env.d.Get(r.ctx, "xxxxxx")
				return err
			}),
			step("subnets are listed", func(t *testing.T, r *fidelityRun) {
				t.Helper()
				ss, err := r.env.d.Subnets(r.ctx)
				require.NoError(t, err)
				require.NotEmpty(t, ss)
				for n, s := range ss {
					assert.NotZero(t, s.ID)
					assert.NotEmpty(t, s.CIDR)
					if n > 0 {
						assert.Less(t, ss[n-1].ID, s.ID, "ordered by id")
					}
				}
			}),
			// Only ipmi is exempt from the MAC rule; the error is the form's
			// clean() error under power_type (maas-behaviour §6).
			expectRefused("manual power create without MAC", http.StatusBadRequest,
				`"power_type": ["Can't set power type to manual without network interfaces"]`, func(r *fidelityRun) error {
					_, err := r.env.d.Create(r.ctx, fCreate{Hostname: "maasflow-fidelity-no-mac", PowerType: "manual", Architecture: "amd64/generic"})
					return err
				}),
		}},
		{name: "IPMI create with architecture and no MAC", mutates: true, steps: []fidelityStep{
			createIPMI("create IPMI machine with architecture", "amd64/generic"),
			commissionStep, await("Testing", 2*time.Minute), await("Ready", time.Minute), bootLinked,
			deleteStep,
		}},
		{name: "lifecycle create to deployed to erased", mutates: true, steps: withReady(
			expectRefused("abort while Ready", http.StatusConflict, "Cannot abort in current state: node {sid} is in state Ready.",
				func(r *fidelityRun) error { _, err := r.env.d.Abort(r.ctx, r.sid); return err }),
			expectRefused("mark_broken unowned", http.StatusForbidden, "",
				func(r *fidelityRun) error { _, err := r.env.d.MarkBroken(r.ctx, r.sid, "x"); return err }),
			expectRefused("mark_fixed while Ready", http.StatusConflict, "Can't mark a non-broken node as 'Ready'.",
				func(r *fidelityRun) error { _, err := r.env.d.MarkFixed(r.ctx, r.sid); return err }),
			allocateStep,
			deployStep,
			expectRefused("deploy while Deploying", http.StatusConflict, "Can't deploy a machine that is in the 'Deploying' state", deployAgain),
			await("Deployed", 8*time.Minute),
			installLogHas("curtin"),
			expectEvent("Deployed", ""),
			expectEvent("User starting deployment", "("),
			enrolled(true),
			expectRefused("deploy while Deployed", http.StatusConflict, "Can't deploy a machine that is in the 'Deployed' state", deployAgain),
			release(true, "Disk erasing"),
			await("Releasing", 3*time.Minute),
			await("Ready", 30*time.Second),
			deleteStep,
		)},
		{name: "commissioning fails once", faults: Faults{CommissionFailures: 1}, mutates: true, steps: []fidelityStep{
			createStep, commissionStep, await("Failed commissioning", 2*time.Minute),
			expectEvent("Failed commissioning", ""),
			commissionStep, await("Testing", 2*time.Minute), await("Ready", time.Minute),
		}},
		{name: "datasource unreachable times out", faults: Faults{DeployDatasourceFailures: 1}, mutates: true, steps: withReady(
			allocateStep, deployStep, await("Deploying", 8*time.Minute),
			expectEvent("Node post-installation failure", "'cloudinit'"),
			installLogHas("Installation finished"),
			enrolled(false),
			await("Failed deployment", 22*time.Minute),
			expectEvent("Marking node failed", "Node operation 'Deploying' timed out after 30 minutes."),
			expectRefused("deploy while Failed deployment", http.StatusConflict, "Can't deploy a machine that is in the 'Failed deployment' state", deployAgain),
			release(false, "Releasing"), await("Ready", 30*time.Second),
		)},
		{name: "datasource failure aborted and retried", faults: Faults{DeployDatasourceFailures: 1}, mutates: true, steps: withReady(
			allocateStep, deployStep, await("Deploying", 8*time.Minute),
			expectEvent("Node post-installation failure", "metadata"),
			op("abort", func(r *fidelityRun) (fMachine, error) { return r.env.d.Abort(r.ctx, r.sid) }, "Deploying"),
			await("Allocated", 0),
			// Abort powered the host off, so the release completes at once.
			release(false, "Ready"),
			deployStep, await("Deployed", 8*time.Minute), enrolled(true),
		)},
		{name: "curtin failure", faults: Faults{DeployOtherFailures: 1}, mutates: true, steps: withReady(
			deployStep, await("Failed deployment", 8*time.Minute),
			expectEvent("Node installation failure", "'curtin'"),
			installLogHas("Installation failed"),
			step("error_description names the log", func(t *testing.T, r *fidelityRun) {
				t.Helper()
				m, err := r.env.d.Get(r.ctx, r.sid)
				require.NoError(t, err)
				assert.Equal(t, "Installation failed (refer to the installation log for more information).", m.ErrorDescription)
			}),
			release(false, "Releasing"), await("Ready", 30*time.Second),
		)},
		{name: "erase fails", faults: Faults{EraseFailures: 1}, mutates: true, steps: withReady(
			deployStep, await("Deployed", 8*time.Minute),
			release(true, "Disk erasing"), await("Failed disk erasing", 3*time.Minute),
			expectEvent("Marking node failed", "Failed to erase disks."),
			release(false, "Releasing"), await("Ready", 30*time.Second),
		)},
		{name: "PXE interface left unlinked", faults: Faults{PXEUnlinked: true}, mutates: true, steps: []fidelityStep{
			createStep, commissionStep, await("Ready", 3*time.Minute),
			expectRefused("deploy without a network", http.StatusBadRequest, `{"network": ["Node must be configured to use a network"]}`, deployAgain),
			expectStatus("Ready"),
			step("link the PXE interface AUTO, twice", func(t *testing.T, r *fidelityRun) {
				t.Helper()
				m, err := r.env.d.Get(r.ctx, r.sid)
				require.NoError(t, err)
				ss, err := r.env.d.Subnets(r.ctx)
				require.NoError(t, err)
				i, err := r.env.d.LinkSubnet(r.ctx, r.sid, m.BootInterfaceID, "AUTO", ss[0].ID)
				require.NoError(t, err)
				require.Len(t, i.Links, 1)
				assert.True(t, i.HasLAN)
				i, err = r.env.d.LinkSubnet(r.ctx, r.sid, m.BootInterfaceID, "AUTO", ss[0].ID)
				require.NoError(t, err)
				require.Len(t, i.Links, 2, "MAAS does not de-duplicate AUTO links")
				i, err = r.env.d.UnlinkSubnet(r.ctx, r.sid, m.BootInterfaceID, i.Links[0].ID)
				require.NoError(t, err)
				assert.Len(t, i.Links, 1)
			}),
			deployStep, await("Deployed", 8*time.Minute),
		}},
		{name: "power control fails", faults: Faults{PowerFails: true}, mutates: true, steps: []fidelityStep{
			createStep, commissionStep,
			expectStatus("New"),
			expectEvent("Failed to power on node", "Unable to power control the node"),
			expectRefused("query power state", http.StatusServiceUnavailable, "BMC", func(r *fidelityRun) error {
				_, err := r.env.d.PowerState(r.ctx, r.sid)
				return err
			}),
		}},
		{name: "node never enrolls", faults: Faults{NeverEnrolls: true}, mutates: true, steps: withReady(
			deployStep, await("Deployed", 8*time.Minute), enrolled(false),
		)},
	}
}

func runFidelity(t *testing.T, env *fidelityEnv, mutate bool, newUserData func(t *testing.T) (b64, nodeID string)) {
	t.Helper()
	for _, sc := range append(fidelityScenarios(), deviceScenarios()...) {
		t.Run(sc.name, func(t *testing.T) {
			if sc.mutates && !mutate {
				t.Skip("mutating scenario: set MAAS_FIDELITY_MUTATE=1 and MAAS_FIDELITY_BMC to a disposable host")
			}
			if sc.needsFaults() && env.real {
				t.Skip("fault scenario: a real MAAS cannot be told to fail; it runs on the simulator")
			}
			e := *env
			if !env.real {
				e.host = func(t *testing.T, _ Faults) (string, bool) { t.Helper(); return env.host(t, sc.faults) }
			}
			r := &fidelityRun{env: &e, ctx: context.Background()}
			r.userDB, r.nodeID = newUserData(t)
			for _, st := range sc.steps {
				ok := t.Run(st.name, func(t *testing.T) { st.do(t, r) })
				require.True(t, ok, "step %q failed; later steps depend on it", st.name)
			}
		})
	}
}

// firstBootUserData renders the first-boot payload of the firstboot
// contract, base64 encoded as MAAS receives it.
func firstBootUserData(t *testing.T, apiURL, nodeID string) string {
	t.Helper()
	bundle, err := json.Marshal(map[string]any{
		"bundle_version": "1", "GPUAAS_NODE_ID": nodeID, "GPUAAS_ENROLLMENT_TOKEN": "token-" + nodeID,
		"GPUAAS_API_URL": apiURL, "GPUAAS_TASK_SIGNING_PUBKEYS": []string{}, "ca_bundle_pem": "", "ca_fingerprint": "",
		"GPUAAS_CA_BUNDLE_PATH": "/etc/gpuaas/ca.pem", "GPUAAS_NODE_CERT_CA_BUNDLE_PATH": "/etc/gpuaas/node-ca.pem",
		"GPUAAS_CERT_PATH": "/etc/gpuaas/node.crt", "GPUAAS_KEY_PATH": "/etc/gpuaas/node.key",
		"package": map[string]string{"oci_ref": "registry.example/agent:1", "digest": "sha256:00", "pull_delivery_mode": "pull",
			"install_root": "/opt/gpuaas", "env_file_path": "/etc/gpuaas/agent.env", "systemd_unit_name": "gpuaas-agent.service"},
	})
	require.NoError(t, err)
	site := base64.StdEncoding.EncodeToString([]byte(`{"url":"https://bundles.example/site.tgz","version":"1","sha256":"00","oci_ref":"","oci_digest":""}`))
	ud := "#cloud-config\n# maasflow first-boot payload\n# site-bootstrap 1; node-bootstrap 1\nwrite_files:\n" +
		"  - path: /etc/maasflow/site-bootstrap.json\n    permissions: '0600'\n    encoding: b64\n    content: " + site + "\n" +
		"  - path: /etc/gpuaas/bootstrap-bundle.json\n    permissions: '0600'\n    encoding: b64\n    content: " +
		base64.StdEncoding.EncodeToString(bundle) + "\n" +
		"runcmd:\n  - [/bin/sh, -c, \"/opt/maasflow/site-bootstrap\"]\n  - [/bin/sh, -c, \"/opt/gpuaas/node-bootstrap\"]\n"
	return base64.StdEncoding.EncodeToString([]byte(ud))
}

// enrollRecorder is the enrollment API the simulated node calls.
type enrollRecorder struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []enrollCall
	ch    chan enrollCall
}

type enrollCall struct {
	nodeID, token, contentType string
}

func newEnrollRecorder(t *testing.T, status int) *enrollRecorder {
	t.Helper()
	er := &enrollRecorder{ch: make(chan enrollCall, 64)}
	er.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := strings.CutPrefix(r.URL.Path, "/api/v1/nodes/")
		id, ok2 := strings.CutSuffix(id, "/enroll")
		if !ok || !ok2 || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		var body struct {
			Token string `json:"token"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		c := enrollCall{nodeID: id, token: body.Token, contentType: r.Header.Get("Content-Type")}
		er.mu.Lock()
		er.calls = append(er.calls, c)
		er.mu.Unlock()
		er.ch <- c
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status == http.StatusOK {
			_, _ = fmt.Fprintf(w, `{"node_id":%q,"status":"active"}`, id)
			return
		}
		_, _ = w.Write([]byte(`{"error":{"code":"token_rejected","message":"token rejected"}}`))
	}))
	t.Cleanup(er.srv.Close)
	return er
}

// wait blocks until the node calls, bounded so a broken simulator fails the
// test instead of hanging it.
func (er *enrollRecorder) wait(t *testing.T, nodeID string) enrollCall {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case c := <-er.ch:
			if c.nodeID == nodeID {
				return c
			}
		case <-deadline:
			t.Fatalf("node %s never called the enrollment URL", nodeID)
			return enrollCall{}
		}
	}
}

func (er *enrollRecorder) count(nodeID string) int {
	er.mu.Lock()
	defer er.mu.Unlock()
	n := 0
	for _, c := range er.calls {
		if c.nodeID == nodeID {
			n++
		}
	}
	return n
}

// fidelityDrivers are the clients the suite runs with.
var fidelityDrivers = []struct {
	name string
	make func(t *testing.T, maasURL, key string) fidelityDriver
}{
	{"gomaasclient", func(t *testing.T, u, k string) fidelityDriver { t.Helper(); return newGomaasDriver(t, u, k) }},
	{"maasflow", func(t *testing.T, u, k string) fidelityDriver { t.Helper(); return newMaasflowDriver(t, u, k) }},
}

func TestFidelitySimulator(t *testing.T) {
	for _, drv := range fidelityDrivers {
		t.Run(drv.name, func(t *testing.T) {
			h := newHarness(t)
			er := newEnrollRecorder(t, http.StatusOK)
			hosts := 0
			names := 0
			env := &fidelityEnv{
				d:      drv.make(t, h.srv.URL+"/MAAS", testKey),
				enroll: er, bmcUser: "admin", bmcPass: "bmc-password-1",
				host: func(t *testing.T, f Faults) (string, bool) {
					t.Helper()
					hosts++
					return h.host(t, hosts, f), true
				},
				pass: func(_ *testing.T, d time.Duration) { h.clock.Advance(d) },
				hostname: func() string {
					names++
					return fmt.Sprintf("gpu-%03d", names)
				},
			}
			nodes := 0
			runFidelity(t, env, true, func(t *testing.T) (string, string) {
				t.Helper()
				nodes++
				id := fmt.Sprintf("node-%d", nodes)
				return firstBootUserData(t, er.srv.URL, id), id
			})
			assert.Positive(t, h.sim.Calls().Total)
		})
	}
}

// TestFidelityRealMAAS runs the same suite against a real MAAS. It needs
// MAAS_URL (http://host:5240/MAAS) and MAAS_API_KEY; the mutating scenarios
// also need MAAS_FIDELITY_MUTATE=1 and MAAS_FIDELITY_BMC (a disposable IPMI
// host, with MAAS_FIDELITY_BMC_USER and MAAS_FIDELITY_BMC_PASS).
func TestFidelityRealMAAS(t *testing.T) {
	maasURL, key := os.Getenv("MAAS_URL"), os.Getenv("MAAS_API_KEY")
	if maasURL == "" || key == "" {
		t.Skip("no real MAAS configured: set MAAS_URL and MAAS_API_KEY to run the fidelity suite against one " +
			"(MAAS_FIDELITY_MUTATE=1 and MAAS_FIDELITY_BMC for the mutating scenarios); CI has no reachable MAAS")
	}
	bmc := os.Getenv("MAAS_FIDELITY_BMC")
	mutate := os.Getenv("MAAS_FIDELITY_MUTATE") == "1" && bmc != ""
	names := 0
	for _, drv := range fidelityDrivers {
		t.Run(drv.name, func(t *testing.T) {
			env := &fidelityEnv{
				d: drv.make(t, maasURL, key), real: true,
				bmcUser: os.Getenv("MAAS_FIDELITY_BMC_USER"), bmcPass: os.Getenv("MAAS_FIDELITY_BMC_PASS"),
				host: func(*testing.T, Faults) (string, bool) { return bmc, bmc != "" },
				pass: func(_ *testing.T, d time.Duration) { time.Sleep(d) },
				hostname: func() string {
					// Unique across scenarios and drivers: MAAS refuses a
					// second machine of one hostname.
					names++
					return fmt.Sprintf("maasflow-fidelity-%d-%d", time.Now().Unix(), names)
				},
			}
			runFidelity(t, env, mutate, func(*testing.T) (string, string) {
				return base64.StdEncoding.EncodeToString([]byte("#cloud-config\n{}\n")), "real"
			})
		})
	}
}
