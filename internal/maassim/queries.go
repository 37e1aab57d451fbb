package maassim

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

var (
	versionResource = resource{"GET ": (*Simulator).version}
	usersResource   = resource{"GET whoami": (*Simulator).whoami}
	maasResource    = resource{"GET get_config": (*Simulator).getConfig}
	eventsResource  = resource{"GET query": (*Simulator).queryEvents}
	resultsResource = resource{"GET ": (*Simulator).listResults}
	resultResource  = resource{"GET ": (*Simulator).readResult, "GET download": (*Simulator).downloadResult}
)

// capabilities and version are those of the MAAS most sites run (maas-behaviour §13).
var capabilities = []string{
	"networks-management", "static-ipaddresses", "ipv6-deployment-ubuntu", "devices-management",
	"storage-deployment-ubuntu", "network-deployment-ubuntu", "bridging-interface-ubuntu",
	"bridging-automatic-ubuntu", "authenticate-api",
}

func (s *Simulator) version(*request) reply {
	return jsonReply(http.StatusOK, map[string]any{"capabilities": capabilities, "version": "3.5.4", "subversion": ""})
}

func (s *Simulator) whoami(rq *request) reply {
	return jsonReply(http.StatusOK, map[string]any{
		"username": rq.user, "email": rq.user + "@example.com", "is_local": true, "is_superuser": rq.user == adminUser,
		"resource_uri": apiPrefix + "users/" + rq.user + "/",
	})
}

func (s *Simulator) getConfig(rq *request) reply {
	name := rq.params.Get("name")
	host := rq.http.Host
	config := map[string]any{
		"maas_url":                         "http://" + host + "/MAAS/",
		"maas_name":                        "maassim",
		"default_distro_series":            "jammy",
		"default_osystem":                  "ubuntu",
		"node_timeout":                     int(s.dur.NodeTimeout.Minutes()),
		"enable_disk_erasing_on_release":   false,
		"default_boot_interface_link_type": "auto",
		"commissioning_distro_series":      "jammy",
		"default_min_hwe_kernel":           "",
	}
	if name == "" {
		return formError("name", "This field is required.")
	}
	v, ok := config[name]
	if !ok {
		return formError("name", fmt.Sprintf("No configuration setting named %s.", name))
	}
	return jsonReply(http.StatusOK, v)
}

// --- events ----------------------------------------------------------------

var eventParams = []string{"agent_name", "domain", "hostname", "id", "level", "limit", "mac_address", "op", "zone", "owner"}

// queryEvents follows MS/api/events.py: newest first, level and above,
// next_uri/prev_uri built from the same filters (maas-behaviour §11).
func (s *Simulator) queryEvents(rq *request) reply {
	p := rq.params
	level := p.Get("level")
	if level == "" {
		level = "INFO"
	}
	minLevel, ok := levelByName[level]
	if !ok {
		return badRequest("Unrecognised log level: " + level)
	}
	limit := 100
	if v := p.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return badRequest("Invalid limit: Please enter an integer value")
		}
		limit = n
	}
	if limit > 1000 {
		return badRequest(fmt.Sprintf("Requested number of events %d is greater than limit: %d", limit, 1000))
	}
	if limit < 1 {
		limit = 1
	}
	before, hasBefore, bad := intParam(p, "before")
	if bad != nil {
		return *bad
	}
	after, hasAfter, bad := intParam(p, "after")
	if bad != nil {
		return *bad
	}
	if hasBefore && hasAfter {
		return badRequest("There is undetermined behaviour when both `after` and `before` are specified.")
	}

	var pool []*event
	if nodes := s.eventNodes(p); nodes != nil {
		for _, m := range nodes {
			pool = append(pool, m.events...)
		}
		sort.Slice(pool, func(i, j int) bool { return pool[i].id < pool[j].id })
	} else {
		pool = s.st.events
	}
	owner, hasOwner := p["owner"]
	keep := func(e *event) bool {
		if minLevel == levelAudit {
			if e.level != levelAudit {
				return false
			}
		} else if e.level < minLevel || e.level == levelAudit {
			return false
		}
		if hasOwner && !contains(owner, e.username) {
			return false
		}
		return true
	}
	var out []*event
	if hasAfter {
		// Oldest first after `after`, then reversed (events.py). The pool
		// is in id order (ids are handed out as events are appended), so
		// the scan starts at the first newer event, not at the oldest: the
		// machine watch asks for what is new on every round.
		first := sort.Search(len(pool), func(i int) bool { return pool[i].id > after })
		for _, e := range pool[first:] {
			if keep(e) {
				out = append(out, e)
				if len(out) == limit {
					break
				}
			}
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	} else {
		for n := len(pool) - 1; n >= 0 && len(out) < limit; n-- {
			e := pool[n]
			if hasBefore && e.id >= before {
				continue
			}
			if keep(e) {
				out = append(out, e)
			}
		}
	}

	base := url.Values{}
	for _, k := range eventParams {
		if vs, ok := p[k]; ok {
			base[k] = vs
		}
	}
	mk := func(k, v string) string {
		q := url.Values{}
		for kk, vs := range base {
			q[kk] = vs
		}
		if k != "" {
			q.Set(k, v)
		}
		return apiPrefix + "events/?" + q.Encode()
	}
	var next string
	var prev *string
	switch {
	case len(out) > 0:
		next = mk("after", strconv.Itoa(out[0].id))
		pv := mk("before", strconv.Itoa(out[len(out)-1].id))
		prev = &pv
	default:
		next = mk("", "")
		if hasBefore {
			next = mk("after", strconv.Itoa(before-1))
		}
		if hasAfter {
			pv := mk("before", strconv.Itoa(after+1))
			prev = &pv
		}
	}
	events := make([]eventJSON, 0, len(out))
	for _, e := range out {
		events = append(events, renderEvent(e, s.skew))
	}
	return jsonReply(http.StatusOK, map[string]any{"count": len(events), "events": events, "next_uri": next, "prev_uri": prev})
}

func intParam(p url.Values, key string) (int, bool, *reply) {
	v := p.Get(key)
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		rp := badRequest(fmt.Sprintf("Invalid %s: Please enter an integer value", key))
		return 0, false, &rp
	}
	return n, true, nil
}

// eventNodes applies the node filters of events query; nil means no filter.
func (s *Simulator) eventNodes(p url.Values) []*machine {
	ids, hosts, macs := p["id"], p["hostname"], p["mac_address"]
	agents, zones, domains := p["agent_name"], p["zone"], p["domain"]
	if len(ids)+len(hosts)+len(macs)+len(agents)+len(zones)+len(domains) == 0 {
		return nil
	}
	out := []*machine{}
	for _, m := range s.st.order {
		if len(ids) > 0 && !contains(ids, m.systemID) {
			continue
		}
		if len(hosts) > 0 && !contains(hosts, m.hostname) && !contains(hosts, m.hostname+"."+defaultDomain.Name) {
			continue
		}
		if len(macs) > 0 && !anyOf(macs, func(v string) bool {
			hw, err := net.ParseMAC(v)
			if err != nil {
				return false
			}
			for _, i := range m.ifaces {
				if i.mac == hw.String() {
					return true
				}
			}
			return false
		}) {
			continue
		}
		if len(agents) > 0 && !contains(agents, m.agentName) {
			continue
		}
		if len(zones) > 0 && !contains(zones, defaultZone.Name) {
			continue
		}
		if len(domains) > 0 && !contains(domains, defaultDomain.Name) {
			continue
		}
		out = append(out, m)
	}
	return out
}

// --- script results ----------------------------------------------------------

var resultTypeFilter = map[string]int{
	"commissioning": 0, "commission": 0, "0": 0,
	"installation": 1, "install": 1, "1": 1,
	"testing": 2, "test": 2, "2": 2,
	"release": 3, "3": 3,
	"deployment": 4, "4": 4,
}

// resultFilter reads the comma-separated filters list of script names.
func resultFilter(p url.Values) map[string]bool {
	v := p.Get("filters")
	if v == "" {
		return nil
	}
	out := map[string]bool{}
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out[f] = true
		}
	}
	return out
}

func (s *Simulator) listResults(rq *request) reply {
	m, bad := s.lookupNode(rq)
	if bad != nil {
		return *bad
	}
	p := rq.params
	typ := -1
	if v := p.Get("type"); v != "" {
		t, ok := resultTypeFilter[v]
		if !ok {
			return badRequest(fmt.Sprintf("Unknown type: %s", v))
		}
		typ = t
	}
	// include_output: any value turns output on (formencode Bool).
	_, withOutput := p["include_output"]
	names := resultFilter(p)
	out := []scriptSetJSON{}
	for _, ss := range m.sets {
		if typ >= 0 && ss.typ != typ {
			continue
		}
		out = append(out, renderSet(ss, withOutput, names, s.skew))
	}
	return jsonReply(http.StatusOK, out)
}

// lookupSet resolves a script-set id or current-<type>.
func (s *Simulator) lookupSet(rq *request) (*scriptSet, *reply) {
	m, bad := s.lookupNode(rq)
	if bad != nil {
		return nil, bad
	}
	spec := rq.vars[1]
	if kind, ok := strings.CutPrefix(spec, "current-"); ok {
		var ss *scriptSet
		switch kind {
		case "commissioning":
			ss = m.currentCommissioning
		case "testing":
			ss = m.currentTesting
		case "installation":
			ss = m.currentInstallation
		default:
			rp := badRequest(fmt.Sprintf("Unknown id: %s", spec))
			return nil, &rp
		}
		if ss == nil {
			rp := badRequest(fmt.Sprintf("No current %s script set exists for this node.", kind))
			return nil, &rp
		}
		return ss, nil
	}
	for _, ss := range m.sets {
		if strconv.Itoa(ss.id) == spec {
			return ss, nil
		}
	}
	rp := notFound("ScriptSet")
	return nil, &rp
}

func (s *Simulator) readResult(rq *request) reply {
	ss, bad := s.lookupSet(rq)
	if bad != nil {
		return *bad
	}
	_, withOutput := rq.params["include_output"]
	return jsonReply(http.StatusOK, renderSet(ss, withOutput, resultFilter(rq.params), s.skew))
}

// downloadResult is op=download: the raw output of one result, or several
// concatenated under dashed headers (MS/api/scriptresults.py).
func (s *Simulator) downloadResult(rq *request) reply {
	ss, bad := s.lookupSet(rq)
	if bad != nil {
		return *bad
	}
	p := rq.params
	if ft := p.Get("filetype"); ft != "" && ft != "txt" {
		return badRequest(fmt.Sprintf("Unknown filetype \"%s\"; this simulator serves txt only", ft))
	}
	output := p.Get("output")
	if output == "" {
		output = "combined"
	}
	names := resultFilter(p)
	type file struct {
		name string
		data []byte
	}
	var files []file
	for _, r := range ss.results {
		if names != nil && !names[r.name] && !names[strconv.Itoa(r.id)] {
			continue
		}
		switch output {
		case "combined":
			files = append(files, file{r.name, r.output()})
		case "stdout":
			files = append(files, file{r.name + ".out", r.stdout})
		case "stderr":
			files = append(files, file{r.name + ".err", r.stderr})
		case "result":
			files = append(files, file{r.name + ".yaml", r.result})
		case "all":
			files = append(files, file{r.name, r.output()}, file{r.name + ".out", r.stdout},
				file{r.name + ".err", r.stderr}, file{r.name + ".yaml", r.result})
		default:
			return badRequest(fmt.Sprintf("Unknown output type \"%s\"", output))
		}
	}
	if len(files) == 0 {
		return notFound("ScriptResult")
	}
	var body []byte
	if len(files) == 1 {
		body = files[0].data
	} else {
		var b bytes.Buffer
		for _, f := range files {
			dashes := strings.Repeat("-", (80-(2+len(f.name)))/2)
			fmt.Fprintf(&b, "%s %s %s\n", dashes, f.name, dashes)
			b.Write(f.data)
			b.WriteString("\n")
		}
		body = b.Bytes()
	}
	return reply{code: http.StatusOK, ctype: "application/binary", body: body}
}
