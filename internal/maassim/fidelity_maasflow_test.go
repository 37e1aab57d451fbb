package maassim

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// maasflowDriver drives MAAS with maasflow's own client (shared/maas), the
// one every activity uses. Only this test file imports it: the simulator
// itself never does, so the two are checked against docs/maas-behaviour.md and not
// against each other.
type maasflowDriver struct{ c *maas.Client }

func newMaasflowDriver(t *testing.T, maasURL, key string) *maasflowDriver {
	t.Helper()
	c, err := maas.NewClient(maasURL, domain.Secret(key))
	require.NoError(t, err)
	return &maasflowDriver{c: c}
}

// asFidelityMAAS turns the client's typed errors into the status and body
// MAAS sent. Form errors come back as the JSON object MAAS wrote, keys
// sorted, spaced as Python's json.dumps writes them.
func asFidelityMAAS(err error) error {
	var (
		bad         *maas.MAASBadRequestError
		unauth      *maas.MAASUnauthorizedError
		forbidden   *maas.MAASForbiddenError
		notFound    *maas.MAASNotFoundError
		conflict    *maas.MAASConflictError
		unavailable *maas.MAASUnavailableError
		unexpected  *maas.MAASUnexpectedResponseError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &bad):
		if bad.Fields != nil {
			return &fidelityError{Status: http.StatusBadRequest, Body: pythonFormErrors(bad.Fields)}
		}
		return &fidelityError{Status: http.StatusBadRequest, Body: bad.Message}
	case errors.As(err, &unauth):
		return &fidelityError{Status: http.StatusUnauthorized}
	case errors.As(err, &forbidden):
		return &fidelityError{Status: http.StatusForbidden, Body: forbidden.Message}
	case errors.As(err, &notFound):
		return &fidelityError{Status: http.StatusNotFound, Body: notFound.Message}
	case errors.As(err, &conflict):
		return &fidelityError{Status: http.StatusConflict, Body: conflict.Message}
	case errors.As(err, &unavailable):
		return &fidelityError{Status: unavailable.StatusCode, Body: unavailable.Message}
	case errors.As(err, &unexpected):
		return &fidelityError{Status: unexpected.StatusCode, Body: unexpected.Message}
	default:
		return err
	}
}

func pythonFormErrors(fields map[string][]string) string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := "{"
	for n, k := range keys {
		if n > 0 {
			out += ", "
		}
		kb, _ := json.Marshal(k)
		out += string(kb) + ": ["
		for m, msg := range fields[k] {
			if m > 0 {
				out += ", "
			}
			mb, _ := json.Marshal(msg)
			out += string(mb)
		}
		out += "]"
	}
	return out + "}"
}

func fromMAAS(m maas.Machine) fMachine {
	return fMachine{
		SystemID: m.SystemID, Hostname: m.Hostname, Status: int(m.Status), StatusName: m.StatusName,
		Owner: m.Owner, PowerType: m.PowerType, Architecture: m.Architecture,
		ErrorDescription: m.ErrorDescription, BootInterfaceID: m.BootInterfaceID, Interfaces: len(m.Interfaces),
	}
}

func (d *maasflowDriver) machine(m maas.Machine, err error) (fMachine, error) {
	if err != nil {
		return fMachine{}, asFidelityMAAS(err)
	}
	return fromMAAS(m), nil
}

func (d *maasflowDriver) Probe(ctx context.Context) (string, string, error) {
	p, err := d.c.Probe(ctx)
	if err != nil {
		return "", "", asFidelityMAAS(err)
	}
	return p.Version, p.Username, nil
}

func (d *maasflowDriver) Create(ctx context.Context, p fCreate) (fMachine, error) {
	return d.machine(d.c.Create(ctx, maas.MachineCreateParams{
		Hostname: p.Hostname, Architecture: p.Architecture, MACAddresses: p.MACs,
		PowerType: p.PowerType, PowerAddress: p.BMC, PowerUser: p.User, PowerPass: domain.Secret(p.Pass),
		Commission: false,
	}))
}

func (d *maasflowDriver) Get(ctx context.Context, sid string) (fMachine, error) {
	return d.machine(d.c.Get(ctx, sid))
}

func (d *maasflowDriver) FindByHostname(ctx context.Context, hostname string) ([]fMachine, error) {
	ms, err := d.c.FindByHostname(ctx, hostname)
	if err != nil {
		return nil, asFidelityMAAS(err)
	}
	out := make([]fMachine, 0, len(ms))
	for _, m := range ms {
		out = append(out, fromMAAS(m))
	}
	return out, nil
}

func (d *maasflowDriver) FindByPowerAddress(ctx context.Context, addr string) ([]string, error) {
	ms, err := d.c.FindByPowerAddress(ctx, addr)
	if err != nil {
		return nil, asFidelityMAAS(err)
	}
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.SystemID)
	}
	return out, nil
}

func (d *maasflowDriver) Commission(ctx context.Context, sid string) (fMachine, error) {
	return d.machine(d.c.Commission(ctx, sid, maas.CommissionParams{SkipBMCConfig: true}))
}

func (d *maasflowDriver) Allocate(ctx context.Context, sid string) (fMachine, error) {
	return d.machine(d.c.Allocate(ctx, sid))
}

// Deploy takes the base64 user_data the suite shares with gomaasclient; the
// client base64-encodes the raw payload itself.
func (d *maasflowDriver) Deploy(ctx context.Context, sid, userDataB64 string) (fMachine, error) {
	raw, err := base64.StdEncoding.DecodeString(userDataB64)
	if err != nil {
		return fMachine{}, err
	}
	return d.machine(d.c.Deploy(ctx, sid, maas.MachineDeployParams{UserData: domain.Secret(raw), DistroSeries: "jammy"}))
}

func (d *maasflowDriver) Abort(ctx context.Context, sid string) (fMachine, error) {
	return d.machine(d.c.Abort(ctx, sid, "fidelity suite"))
}

func (d *maasflowDriver) Release(ctx context.Context, sid string, erase bool) (fMachine, error) {
	return d.machine(d.c.Release(ctx, sid, maas.MachineReleaseParams{Erase: erase, QuickErase: erase, Comment: "fidelity suite"}))
}

func (d *maasflowDriver) MarkBroken(ctx context.Context, sid, comment string) (fMachine, error) {
	return d.machine(d.c.MarkBroken(ctx, sid, comment))
}

func (d *maasflowDriver) MarkFixed(ctx context.Context, sid string) (fMachine, error) {
	return d.machine(d.c.MarkFixed(ctx, sid, "fidelity suite"))
}

func (d *maasflowDriver) PowerState(ctx context.Context, sid string) (string, error) {
	st, err := d.c.PowerState(ctx, sid)
	return st, asFidelityMAAS(err)
}

func fromMAASIface(i maas.Interface) fInterface {
	out := fInterface{ID: i.ID, Name: i.Name, MAC: i.MACAddress, HasLAN: i.VLAN != nil}
	for _, l := range i.Links {
		fl := fLink{ID: l.ID, Mode: l.Mode, IP: l.IPAddress}
		if l.Subnet != nil {
			fl.SubnetID = l.Subnet.ID
		}
		out.Links = append(out.Links, fl)
	}
	return out
}

func (d *maasflowDriver) Interfaces(ctx context.Context, sid string) ([]fInterface, error) {
	is, err := d.c.Interfaces(ctx, sid)
	if err != nil {
		return nil, asFidelityMAAS(err)
	}
	out := make([]fInterface, 0, len(is))
	for _, i := range is {
		out = append(out, fromMAASIface(i))
	}
	return out, nil
}

func (d *maasflowDriver) LinkSubnet(ctx context.Context, sid string, ifaceID int, mode string, subnetID int) (fInterface, error) {
	i, err := d.c.LinkSubnet(ctx, sid, ifaceID, maas.LinkSubnetParams{Mode: mode, SubnetID: subnetID})
	if err != nil {
		return fInterface{}, asFidelityMAAS(err)
	}
	return fromMAASIface(i), nil
}

func (d *maasflowDriver) UnlinkSubnet(ctx context.Context, sid string, ifaceID, linkID int) (fInterface, error) {
	i, err := d.c.UnlinkSubnet(ctx, sid, ifaceID, linkID)
	if err != nil {
		return fInterface{}, asFidelityMAAS(err)
	}
	return fromMAASIface(i), nil
}

func (d *maasflowDriver) Subnets(ctx context.Context) ([]fSubnet, error) {
	ss, err := d.c.Subnets(ctx)
	if err != nil {
		return nil, asFidelityMAAS(err)
	}
	out := make([]fSubnet, 0, len(ss))
	for _, s := range ss {
		out = append(out, fSubnet{ID: s.ID, CIDR: s.CIDR})
	}
	return out, nil
}

func (d *maasflowDriver) Events(ctx context.Context, sid string) ([]fEvent, error) {
	evs, err := d.c.Events(ctx, maas.EventQuery{SystemID: sid, Level: maas.EventLevelDebug, Limit: 1000})
	if err != nil {
		return nil, asFidelityMAAS(err)
	}
	out := make([]fEvent, 0, len(evs))
	for _, e := range evs {
		out = append(out, fEvent{ID: int(e.ID), Level: e.Level, Type: e.Type, Description: e.Description})
	}
	return out, nil
}

func (d *maasflowDriver) InstallLog(ctx context.Context, sid string) (string, error) {
	set, err := d.c.ScriptResults(ctx, sid, maas.ScriptsInstallation)
	if err != nil {
		return "", asFidelityMAAS(err)
	}
	for _, r := range set.Results {
		if r.Name == "/tmp/install.log" {
			return r.Output, nil
		}
	}
	return "", errors.New("no /tmp/install.log result")
}

func (d *maasflowDriver) Delete(ctx context.Context, sid string) error {
	return asFidelityMAAS(d.c.Delete(ctx, sid))
}
