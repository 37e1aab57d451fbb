package maassim

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// The region's scripts (GET scripts/, MS/api/scripts.py ScriptsHandler)
// and the commissioning form's script fields (MS/forms/ephemeral.py
// TestForm/CommissionForm). MAAS ships its built-in commissioning and
// testing scripts; a site adds its own by name (firmware update, RAID
// configuration, hardware manifest, GPU burn-in). Options.MissingScripts
// is the missing_script fault: the region lacks those scripts, so the
// scripts list omits them and a commission naming one is refused.

// MAAS's SCRIPT_TYPE (metadataserver/enum.py) with the display names of
// SCRIPT_TYPE_CHOICES.
const (
	scriptTypeCommissioning = 0
	scriptTypeTesting       = 2
)

var scriptTypeNames = map[int]string{scriptTypeCommissioning: "Commissioning script", scriptTypeTesting: "Testing script"}

// scriptDef is a Script row.
type scriptDef struct {
	id          int
	name        string
	title       string
	description string
	typ         int
	hwType      int
	tags        []string
	timeout     string
	destructive bool
	// builtin: shipped with MAAS (default true on the API); the others are
	// a site's own uploads.
	builtin bool
}

// regionScripts are the scripts of a MAAS region: the built-in ones the
// simulator runs (and a few more MAAS ships) and a site's named scripts.
var regionScripts = []scriptDef{
	{1, "00-maas-00-support-info", "", "Collect support information", scriptTypeCommissioning, hwTypeNode, []string{"node"}, "0:01:00", false, true},
	{2, "20-maas-01-install-lldpd", "", "Install lldpd", scriptTypeCommissioning, hwTypeNode, []string{"node"}, "0:00:30", false, true},
	{3, "30-maas-01-bmc-config", "", "Detect and configure the BMC", scriptTypeCommissioning, hwTypeNode, []string{"bmc-config", "node"}, "0:05:00", false, true},
	{4, "50-maas-01-commissioning", "", "Gather machine resources", scriptTypeCommissioning, hwTypeNode, []string{"node"}, "0:01:00", false, true},
	{5, "maas-lshw", "", "List hardware", scriptTypeCommissioning, hwTypeNode, []string{"node"}, "0:05:00", false, true},
	{6, "smartctl-validate", "Storage integrity", "Validate SMART health for all drives in parallel.", scriptTypeTesting, hwTypeStorage, []string{"storage"}, "0:05:00", false, true},
	{7, "memtester", "Memory integrity", "Run memtester against all available RAM.", scriptTypeTesting, hwTypeMemory, []string{"memory"}, "0:00:00", false, true},
	{8, "stress-ng-cpu-long", "CPU validation", "Run the stress-ng CPU tests over 12 hours.", scriptTypeTesting, hwTypeCPU, []string{"cpu"}, "12:00:00", false, true},
	{9, "badblocks-destructive", "Storage integrity", "Run badblocks in destructive mode.", scriptTypeTesting, hwTypeStorage, []string{"storage", "destructive"}, "0:00:00", true, true},
	{20, "firmware-update", "Firmware update", "Flash the site's BMC, BIOS and NIC firmware bundle.", scriptTypeCommissioning, hwTypeNode, []string{"firmware"}, "0:30:00", false, false},
	{21, "raid-config", "RAID configuration", "Configure the hardware RAID controller.", scriptTypeCommissioning, hwTypeStorage, []string{"raid"}, "0:10:00", false, false},
	{22, "hardware-manifest", "Hardware manifest", "Record the hardware manifest for as-built validation.", scriptTypeCommissioning, hwTypeNode, []string{"manifest"}, "0:05:00", false, false},
	{23, "gpu-burn", "GPU burn-in", "Run gpu-burn on every GPU.", scriptTypeTesting, hwTypeGPU, []string{"gpu", "burn-in"}, "1:00:00", false, false},
}

// scripts are the region's scripts, without those the missing_script
// fault removes, in id order as MAAS lists them.
func (s *Simulator) scripts() []scriptDef {
	out := make([]scriptDef, 0, len(regionScripts))
	for _, sc := range regionScripts {
		if !slices.Contains(s.missingScripts, sc.name) {
			out = append(out, sc)
		}
	}
	return out
}

var scriptsResource = resource{"GET ": (*Simulator).listScripts}

type scriptJSON struct {
	ID               int      `json:"id"`
	Name             string   `json:"name"`
	Title            string   `json:"title"`
	Description      string   `json:"description"`
	Tags             []string `json:"tags"`
	Type             int      `json:"type"`
	TypeName         string   `json:"type_name"`
	HardwareType     int      `json:"hardware_type"`
	HardwareTypeName string   `json:"hardware_type_name"`
	Parallel         int      `json:"parallel"`
	ParallelName     string   `json:"parallel_name"`
	Results          []any    `json:"results"`
	Parameters       struct{} `json:"parameters"`
	Packages         struct{} `json:"packages"`
	Timeout          string   `json:"timeout"`
	Destructive      bool     `json:"destructive"`
	ForHardware      []string `json:"for_hardware"`
	MayReboot        bool     `json:"may_reboot"`
	Recommission     bool     `json:"recommission"`
	Default          bool     `json:"default"`
	ApplyConfigured  bool     `json:"apply_configured_networking"`
	ResourceURI      string   `json:"resource_uri"`
}

func renderScript(sc scriptDef) scriptJSON {
	return scriptJSON{
		ID: sc.id, Name: sc.name, Title: sc.title, Description: sc.description, Tags: append([]string{}, sc.tags...),
		Type: sc.typ, TypeName: scriptTypeNames[sc.typ], HardwareType: sc.hwType, HardwareTypeName: hardwareTypeNames[sc.hwType],
		Parallel: 0, ParallelName: "Disabled", Results: []any{}, Timeout: sc.timeout, Destructive: sc.destructive,
		ForHardware: []string{}, Default: sc.builtin,
		ResourceURI: apiPrefix + "scripts/" + sc.name,
	}
}

// translateScriptType is MAAS's translate_script_type (MS/models/script.py).
func translateScriptType(v string) (int, string) {
	if n, err := strconv.Atoi(v); err == nil {
		switch n {
		case 0, 2, 3, 4:
			return n, ""
		}
		return 0, "Invalid script type numeric value."
	}
	switch v {
	case "test", "testing":
		return scriptTypeTesting, ""
	case "commission", "commissioning":
		return scriptTypeCommissioning, ""
	case "release":
		return 3, ""
	case "deployment":
		return 4, ""
	}
	return 0, "Script type must be commissioning, testing, release or deployment"
}

// listScripts applies ScriptsHandler.read's filters: type and
// hardware_type (a bad value is a 400 with the validation message),
// filters (a comma list of names or tags); include_script would add the
// base64 script, which the simulator has none of.
func (s *Simulator) listScripts(rq *request) reply {
	p := rq.params
	typ, hwType := -1, -1
	if v, ok := p["type"]; ok && len(v) > 0 {
		t, msg := translateScriptType(v[0])
		if msg != "" {
			return badRequest(msg)
		}
		typ = t
	}
	if v, ok := p["hardware_type"]; ok && len(v) > 0 {
		t, msg := translateHardwareType(v[0])
		if msg != "" {
			return badRequest(msg)
		}
		hwType = t
	}
	var filters []string
	if v := p.Get("filters"); v != "" {
		filters = strings.Split(v, ",")
	}
	out := []scriptJSON{}
	for _, sc := range s.scripts() {
		if (typ >= 0 && sc.typ != typ) || (hwType >= 0 && sc.hwType != hwType) {
			continue
		}
		if filters != nil && !slices.Contains(filters, sc.name) && !slices.ContainsFunc(sc.tags, func(t string) bool { return slices.Contains(filters, t) }) {
			continue
		}
		out = append(out, renderScript(sc))
	}
	return jsonReply(http.StatusOK, out)
}

// commissionScripts reads the commissioning_scripts and testing_scripts
// fields as the commission form does: one comma-separated string each,
// every value a script name or tag of that type (testing also takes
// "none"), else 400 with MultipleChoiceField's message. It returns the
// scripts selected, tags expanded, in the region's order.
func (s *Simulator) commissionScripts(rq *request) (commissioning, testing []scriptDef, bad *reply) {
	pick := func(field string, typ int, allowNone bool) ([]scriptDef, *fieldError) {
		raw := strings.TrimSpace(rq.params.Get(field))
		if raw == "" {
			return nil, nil
		}
		var names []string
		for _, v := range strings.Split(raw, ",") {
			v = strings.TrimSpace(v)
			if allowNone && v == "none" {
				continue
			}
			known := slices.ContainsFunc(s.scripts(), func(sc scriptDef) bool {
				return sc.typ == typ && (sc.name == v || slices.Contains(sc.tags, v))
			})
			if !known {
				return nil, &fieldError{field, fmt.Sprintf("Select a valid choice. %s is not one of the available choices.", v)}
			}
			names = append(names, v)
		}
		var out []scriptDef
		for _, sc := range s.scripts() {
			if sc.typ == typ && (slices.Contains(names, sc.name) || slices.ContainsFunc(sc.tags, func(t string) bool { return slices.Contains(names, t) })) {
				out = append(out, sc)
			}
		}
		return out, nil
	}
	var errs []fieldError
	commissioning, e := pick("commissioning_scripts", scriptTypeCommissioning, false)
	if e != nil {
		errs = append(errs, *e)
	}
	testing, e = pick("testing_scripts", scriptTypeTesting, true)
	if e != nil {
		errs = append(errs, *e)
	}
	if len(errs) > 0 {
		rp := formErrors(errs)
		return nil, nil, &rp
	}
	return commissioning, testing, nil
}

// scriptNames are the names of list not already in have, appended to it.
func scriptNames(have []string, list []scriptDef) []string {
	out := append([]string{}, have...)
	for _, sc := range list {
		if !slices.Contains(out, sc.name) {
			out = append(out, sc.name)
		}
	}
	return out
}

// failingScriptOutput is what the failing_script fault makes a script
// write: its stdout up to the failure and the error on stderr.
func failingScriptOutput(name string) (stdout, stderr string) {
	return fmt.Sprintf("%s: starting\n", name), fmt.Sprintf("%s: error: step 2 of 3 failed, exit status 1\n", name)
}

// failingResult is the name of the result of ss the host's failing_script
// fault fails, "" when the set does not run that script.
func failingResult(hw *hardware, ss *scriptSet) string {
	if hw == nil || hw.faults.FailingScript == "" || ss == nil {
		return ""
	}
	for _, r := range ss.results {
		if r.name == hw.faults.FailingScript {
			return r.name
		}
	}
	return ""
}

// SetMissingScripts replaces the missing_script fault's list at run time:
// the region lacks these scripts from now on (none, for an empty list).
func (s *Simulator) SetMissingScripts(names []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.missingScripts = append([]string(nil), names...)
}

// missingScriptsBody is the body of PUT /_sim/scripts/missing.
type missingScriptsBody struct {
	MissingScripts []string `json:"missing_scripts"`
}

// serveMissingScripts is PUT /_sim/scripts/missing: the missing_script
// fault at run time. It answers the scripts the region now has.
func (s *Simulator) serveMissingScripts(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		jsonReply(http.StatusMethodNotAllowed, map[string]string{"error": "method not allowed"}).write(w)
		return
	}
	var body missingScriptsBody
	if err := decodeStrict(r, &body); err != nil {
		controlError(w, err)
		return
	}
	s.SetMissingScripts(body.MissingScripts)
	s.mu.Lock()
	names := make([]string, 0, len(regionScripts))
	for _, sc := range s.scripts() {
		names = append(names, sc.name)
	}
	s.mu.Unlock()
	jsonReply(http.StatusOK, map[string][]string{"scripts": names}).write(w)
}
