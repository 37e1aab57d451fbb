package maas

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
)

// FindByHostname lists machines whose hostname equals hostname (GET
// machines/?hostname=, maas-behaviour §6). A read: repeating it is free.
func (c *Client) FindByHostname(ctx context.Context, hostname string) ([]Machine, error) {
	const op = "find machines by hostname"
	if err := requireArg(op, "", "hostname", hostname); err != nil {
		return nil, err
	}
	return c.listMachines(ctx, op, url.Values{"hostname": {hostname}})
}

// FindByMAC lists machines with an interface of that MAC (GET
// machines/?mac_address=). MAAS answers 400 to a malformed MAC. A read.
func (c *Client) FindByMAC(ctx context.Context, mac string) ([]Machine, error) {
	const op = "find machines by MAC"
	if err := requireArg(op, "", "mac_address", mac); err != nil {
		return nil, err
	}
	return c.listMachines(ctx, op, url.Values{"mac_address": {mac}})
}

// FindByPowerAddress lists machines whose BMC power_address equals addr
// (case-insensitive, surrounding spaces ignored) and sets PowerAddress on
// each. MAAS has no such filter (maas-behaviour §6), so this reads every
// machine's power parameters with GET machines/?op=power_parameters, which
// needs an admin key (MAASForbiddenError otherwise), then reads the matches with
// GET machines/?id=…. The power parameters include BMC passwords: only
// power_address is kept, and the reply is never logged or quoted. A read.
func (c *Client) FindByPowerAddress(ctx context.Context, addr string) ([]Machine, error) {
	const op = "find machines by power address"
	if err := requireArg(op, "", "power_address", addr); err != nil {
		return nil, err
	}
	r := request{op: op, method: http.MethodGet, path: "machines/", maasOp: "power_parameters"}
	rep, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	ids, err := scanPowerAddresses(rep.body, addr) // the scan copies what it keeps
	rep.release()
	if err != nil {
		return nil, &MAASUnexpectedResponseError{Op: op, StatusCode: rep.status, Message: err.Error()}
	}
	want := strings.TrimSpace(addr)
	if len(ids) == 0 {
		return []Machine{}, nil
	}
	sort.Strings(ids)
	ids = slices.Compact(ids) // a key repeated in the reply
	ms, err := c.listMachines(ctx, op, url.Values{"id": ids})
	if err != nil {
		return nil, err
	}
	for i := range ms {
		ms[i].PowerAddress = want
	}
	return ms, nil
}

func (c *Client) listMachines(ctx context.Context, op string, q url.Values) ([]Machine, error) {
	var ws []wireMachine
	if err := c.doJSON(ctx, request{op: op, method: http.MethodGet, path: "machines/", query: q}, &ws); err != nil {
		return nil, err
	}
	return machines(ws), nil
}

// Get reads one machine (GET machines/{system_id}/); MAASNotFoundError when
// MAAS has no such system id. A read.
func (c *Client) Get(ctx context.Context, systemID string) (Machine, error) {
	return c.machineCall(ctx, request{op: "get machine", systemID: systemID, method: http.MethodGet, path: machinePath(systemID)})
}

// machineCall sends a request about one machine and decodes the machine
// MAAS returns.
func (c *Client) machineCall(ctx context.Context, r request) (Machine, error) {
	if err := requireArg(r.op, r.systemID, "system_id", r.systemID); err != nil {
		return Machine{}, err
	}
	var w wireMachine
	if err := c.doJSON(ctx, r, &w); err != nil {
		return Machine{}, err
	}
	return w.machine(), nil
}

// Create adds a machine (POST machines/, maas-behaviour §6) with power_type ipmi
// unless p says otherwise, its power parameters as power_parameters_<name>
// fields, and commission=true/false always sent, because MAAS's default is
// true. Architecture is sent whenever set: with ipmi and no architecture
// MAAS discards the MACs (maas-behaviour §14.9). Not idempotent: a repeat with the
// same MAC fails with MAASBadRequestError, so callers look the machine up first.
func (c *Client) Create(ctx context.Context, p MachineCreateParams) (Machine, error) {
	const op = "create machine"
	powerType := p.PowerType
	if powerType == "" {
		powerType = "ipmi"
	}
	form := url.Values{}
	setIf(form, "hostname", p.Hostname)
	setIf(form, "architecture", p.Architecture)
	setIf(form, "domain", p.Domain)
	for _, mac := range p.MACAddresses {
		if mac != "" {
			form.Add("mac_addresses", mac)
		}
	}
	form.Set("power_type", powerType)
	setIf(form, "power_parameters_power_address", p.PowerAddress)
	setIf(form, "power_parameters_power_user", p.PowerUser)
	setIf(form, "power_parameters_power_pass", p.PowerPass.Reveal())
	if powerType == "ipmi" {
		driver := p.PowerDriver
		if driver == "" {
			driver = "LAN_2_0"
		}
		form.Set("power_parameters_power_driver", driver)
	}
	form.Set("commission", boolString(p.Commission))
	if p.Commission {
		commissionForm(form, p.Commissioning)
	}
	var w wireMachine
	err := c.doJSON(ctx, request{
		op: op, method: http.MethodPost, path: "machines/", form: form,
		secrets: []string{p.PowerPass.Reveal()},
	}, &w)
	if err != nil {
		return Machine{}, err
	}
	return w.machine(), nil
}

// Commission starts commissioning (POST machines/{id}/?op=commission,
// maas-behaviour §8). The four flags are always sent as true/false; script lists
// travel as one comma-separated value (maas-behaviour §2). MAAS refuses a state it
// cannot commission from (e.g. already Commissioning) with MAASBadRequestError;
// callers read the status before repeating.
func (c *Client) Commission(ctx context.Context, systemID string, p CommissionParams) (Machine, error) {
	form := url.Values{}
	commissionForm(form, p)
	return c.machineCall(ctx, request{
		op: "commission", systemID: systemID, method: http.MethodPost,
		path: machinePath(systemID), maasOp: "commission", form: form,
	})
}

func commissionForm(form url.Values, p CommissionParams) {
	form.Set("enable_ssh", boolString(p.EnableSSH))
	form.Set("skip_bmc_config", boolString(p.SkipBMCConfig))
	form.Set("skip_networking", boolString(p.SkipNetworking))
	form.Set("skip_storage", boolString(p.SkipStorage))
	setIf(form, "commissioning_scripts", joinList(p.CommissioningScripts))
	setIf(form, "testing_scripts", joinList(p.TestingScripts))
}

// joinList joins a script list with commas, dropping empty names.
func joinList(items []string) string {
	kept := make([]string, 0, len(items))
	for _, it := range items {
		if it = strings.TrimSpace(it); it != "" {
			kept = append(kept, it)
		}
	}
	return strings.Join(kept, ",")
}

// Allocate claims a Ready machine by system id (POST
// machines/?op=allocate system_id=…, maas-behaviour §6). MAASConflictError when it is
// not Ready, including when it is already Allocated: callers read the
// status (and owner) before repeating.
func (c *Client) Allocate(ctx context.Context, systemID string) (Machine, error) {
	return c.machineCall(ctx, request{
		op: "allocate", systemID: systemID, method: http.MethodPost,
		path: "machines/", maasOp: "allocate", form: url.Values{"system_id": {systemID}},
	})
}

// Deploy starts deployment from Ready or Allocated (POST
// machines/{id}/?op=deploy, maas-behaviour §8). user_data is sent base64-encoded
// and scrubbed, in both forms, from any error text. MAASConflictError from any
// other state, including Deploying and Deployed (maas-behaviour §14.2), so a
// repeat after success is a MAASConflictError the caller reads as "already
// started".
func (c *Client) Deploy(ctx context.Context, systemID string, p MachineDeployParams) (Machine, error) {
	form := url.Values{}
	userData := p.UserData.Reveal()
	if userData != "" {
		form.Set("user_data", base64.StdEncoding.EncodeToString([]byte(userData)))
	}
	setIf(form, "distro_series", p.DistroSeries)
	setIf(form, "hwe_kernel", p.HWEKernel)
	if p.EnableHWSync {
		form.Set("enable_hw_sync", "true")
	}
	setIf(form, "comment", p.Comment)
	return c.machineCall(ctx, request{
		op: "deploy", systemID: systemID, method: http.MethodPost,
		path: machinePath(systemID), maasOp: "deploy", form: form,
		secrets: []string{userData},
	})
}

// Abort cancels Commissioning, Deploying, Disk erasing or Testing (POST
// op=abort); MAASConflictError elsewhere, so a repeat after the status moved is
// a MAASConflictError. Asynchronous: the reply still shows the old status
// (maas-behaviour §14.5).
func (c *Client) Abort(ctx context.Context, systemID, comment string) (Machine, error) {
	return c.simpleOp(ctx, "abort", systemID, comment)
}

// Release releases a machine (POST op=release, maas-behaviour §8). Erase flags and
// force are sent only when set, so a region whose
// enable_disk_erasing_on_release is on keeps erasing when the caller did not
// ask. From Ready or Releasing MAAS treats it as a no-op, so a repeat is
// safe; while Disk erasing it is a MAASConflictError (maas-behaviour §14.3).
func (c *Client) Release(ctx context.Context, systemID string, p MachineReleaseParams) (Machine, error) {
	form := url.Values{}
	for _, f := range []struct {
		key string
		on  bool
	}{{"erase", p.Erase}, {"secure_erase", p.SecureErase}, {"quick_erase", p.QuickErase}, {"force", p.Force}} {
		if f.on {
			form.Set(f.key, "true")
		}
	}
	setIf(form, "comment", p.Comment)
	return c.machineCall(ctx, request{
		op: "release", systemID: systemID, method: http.MethodPost,
		path: machinePath(systemID), maasOp: "release", form: form,
	})
}

// MarkBroken sets Broken (POST op=mark_broken); the comment becomes
// error_description. MAASForbiddenError unless the key's user owns the machine,
// admins included (maas-behaviour §14.4). A repeat on a Broken machine leaves it
// Broken.
func (c *Client) MarkBroken(ctx context.Context, systemID, comment string) (Machine, error) {
	return c.simpleOp(ctx, "mark_broken", systemID, comment)
}

// MarkFixed moves Broken to Ready, or to Deployed when it was Deployed
// before (POST op=mark_fixed); MAASConflictError from any other status, so a
// repeat after success is a MAASConflictError (maas-behaviour §14.3).
func (c *Client) MarkFixed(ctx context.Context, systemID, comment string) (Machine, error) {
	return c.simpleOp(ctx, "mark_fixed", systemID, comment)
}

func (c *Client) simpleOp(ctx context.Context, maasOp, systemID, comment string) (Machine, error) {
	form := url.Values{}
	setIf(form, "comment", comment)
	return c.machineCall(ctx, request{
		op: maasOp, systemID: systemID, method: http.MethodPost,
		path: machinePath(systemID), maasOp: maasOp, form: form,
	})
}

// Delete removes the machine (DELETE machines/{id}/, 204); MAASNotFoundError
// when it is already gone, which a repeating caller treats as done.
func (c *Client) Delete(ctx context.Context, systemID string) error {
	const op = "delete machine"
	if err := requireArg(op, systemID, "system_id", systemID); err != nil {
		return err
	}
	_, err := c.do(ctx, request{op: op, systemID: systemID, method: http.MethodDelete, path: machinePath(systemID)})
	return err
}

// setIf sets key when value is not empty.
func setIf(form url.Values, key, value string) {
	if value != "" {
		form.Set(key, value)
	}
}
