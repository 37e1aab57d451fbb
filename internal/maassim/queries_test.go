package maassim

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type eventsPage struct {
	Count   int         `json:"count"`
	Events  []eventJSON `json:"events"`
	NextURI string      `json:"next_uri"`
	PrevURI *string     `json:"prev_uri"`
}

func TestEventsQuery(t *testing.T) {
	h := newHarness(t)
	a := h.ready(t, "gpu-a", 1, Faults{})
	b := h.ready(t, "gpu-b", 2, Faults{})
	page := func(t *testing.T, params url.Values) eventsPage {
		t.Helper()
		r := h.call(t, http.MethodGet, "events/", "query", params)
		require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
		var p eventsPage
		r.json(t, &p)
		return p
	}

	t.Run("newest first, INFO and up by default", func(t *testing.T) {
		p := page(t, url.Values{"id": {a}})
		require.NotEmpty(t, p.Events)
		assert.Equal(t, len(p.Events), p.Count)
		for n, e := range p.Events {
			assert.Equal(t, a, *e.Node)
			assert.NotEqual(t, "DEBUG", e.Level)
			if n > 0 {
				assert.Greater(t, p.Events[n-1].ID, e.ID)
			}
		}
		assert.Equal(t, "Ready", p.Events[0].Type)
		assert.Regexp(t, `^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2}\. \d{4} \d{2}:\d{2}:\d{2}$`, p.Events[0].Created)
		assert.Equal(t, "Tue, 07 Jan. 2025 10:03:00", p.Events[0].Created)
	})
	t.Run("DEBUG shows the user requests", func(t *testing.T) {
		p := page(t, url.Values{"id": {a}, "level": {"DEBUG"}})
		last := p.Events[len(p.Events)-1]
		assert.Equal(t, "User starting node commissioning", last.Type)
		assert.Equal(t, "(admin)", last.Description)
		assert.Equal(t, "admin", last.Username)
	})
	t.Run("hostname filter and limit", func(t *testing.T) {
		p := page(t, url.Values{"hostname": {"gpu-b"}, "limit": {"2"}})
		require.Len(t, p.Events, 2)
		assert.Equal(t, b, *p.Events[0].Node)
		assert.Contains(t, p.NextURI, "after="+itoa(p.Events[0].ID))
		require.NotNil(t, p.PrevURI)
		assert.Contains(t, *p.PrevURI, "before="+itoa(p.Events[1].ID))
		assert.True(t, strings.HasPrefix(p.NextURI, "/MAAS/api/2.0/events/?"))
		assert.Contains(t, p.NextURI, "hostname=gpu-b")
	})
	t.Run("after returns newer events, newest first", func(t *testing.T) {
		all := page(t, url.Values{"id": {a}})
		oldest := all.Events[len(all.Events)-1].ID
		p := page(t, url.Values{"id": {a}, "after": {itoa(oldest)}, "limit": {"2"}})
		require.Len(t, p.Events, 2)
		assert.Greater(t, p.Events[0].ID, p.Events[1].ID)
		assert.Greater(t, p.Events[1].ID, oldest)
	})
	t.Run("nothing new keeps polling from the same place", func(t *testing.T) {
		p := page(t, url.Values{"id": {a}, "after": {"100000"}})
		assert.Empty(t, p.Events)
		require.NotNil(t, p.PrevURI)
		assert.Contains(t, *p.PrevURI, "before=100001")
	})
	for _, tc := range []struct {
		name   string
		params url.Values
		body   string
	}{
		{"unknown level", url.Values{"level": {"info"}}, "Unrecognised log level: info"},
		{"limit too high", url.Values{"limit": {"1001"}}, "Requested number of events 1001 is greater than limit: 1000"},
		{"before and after", url.Values{"before": {"3"}, "after": {"1"}}, "There is undetermined behaviour when both `after` and `before` are specified."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.call(t, http.MethodGet, "events/", "query", tc.params)
			assert.Equal(t, http.StatusBadRequest, r.code)
			assert.Equal(t, tc.body, string(r.body))
		})
	}
	t.Run("status_message follows the newest INFO event", func(t *testing.T) {
		assert.Equal(t, "Ready", h.machine(t, a)["status_message"])
	})
}

func itoa(n int) string { return strconv.Itoa(n) }

// Every status change is a DEBUG "Node changed status" event, oldest first
// in the order MAAS made them; an INFO query does not show them
// (MS/models/signals/events.py, maas-behaviour §11).
func TestStatusChangeEvents(t *testing.T) {
	h := newHarness(t)
	sid := h.ready(t, "gpu-a", 1, Faults{})
	h.deployed(t, sid, "")
	var changes []string
	evs := h.events(t, sid)
	for n := len(evs) - 1; n >= 0; n-- {
		if e := evs[n]; e.Type == "Node changed status" {
			assert.Equal(t, "DEBUG", e.Level)
			changes = append(changes, e.Description)
		}
	}
	assert.Equal(t, []string{
		"From 'New' to 'Commissioning'",
		"From 'Commissioning' to 'Testing'",
		"From 'Testing' to 'Ready'",
		"From 'Ready' to 'Allocated' (to admin)",
		"From 'Allocated' to 'Deploying'",
		"From 'Deploying' to 'Deployed'",
	}, changes)

	r := h.call(t, http.MethodGet, "events/", "query", url.Values{"id": {sid}, "limit": {"1000"}})
	require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
	assert.NotContains(t, string(r.body), "Node changed status", "INFO is the default level")
}

func TestScriptResults(t *testing.T) {
	h := newHarness(t)
	sid := h.ready(t, "gpu-1", 1, Faults{DeployOtherFailures: 1})
	require.Equal(t, http.StatusOK, h.call(t, http.MethodPost, "machines/"+sid+"/", "deploy", nil).code)

	t.Run("installation set exists at once, pending", func(t *testing.T) {
		r := h.call(t, http.MethodGet, "nodes/"+sid+"/results/current-installation/", "", nil)
		require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
		var set scriptSetJSON
		r.json(t, &set)
		assert.Equal(t, "Installation", set.TypeName)
		require.Len(t, set.Results, 1)
		assert.Equal(t, "/tmp/install.log", set.Results[0].Name)
		assert.Equal(t, "Pending", set.Results[0].StatusName)
		assert.Equal(t, "", set.Results[0].Starttime, "starttime is \"\" until the script starts") //nolint:testifylint // empty: Starttime is any and must be "", not nil
		assert.Nil(t, set.Results[0].Output, "no output unless asked")
	})
	h.clock.Advance(8 * time.Minute)
	require.Equal(t, "Failed deployment", h.statusName(t, sid))

	t.Run("failed install log with output", func(t *testing.T) {
		r := h.call(t, http.MethodGet, "nodes/"+sid+"/results/current-installation/", "", url.Values{"include_output": {"false"}})
		var set scriptSetJSON
		r.json(t, &set)
		res := set.Results[0]
		assert.Equal(t, "Failed", res.StatusName)
		require.NotNil(t, res.ExitStatus)
		assert.Equal(t, 1, *res.ExitStatus)
		require.NotNil(t, res.Output, "any include_output value turns output on")
		out, err := base64.StdEncoding.DecodeString(*res.Output)
		require.NoError(t, err)
		assert.Contains(t, string(out), "curtin: Installation failed")
		assert.IsType(t, float64(0), res.Starttime)
		assert.Regexp(t, `^\d+:\d{2}:\d{2}$`, res.Runtime)
		assert.Equal(t, "Failed", set.StatusName)
	})
	t.Run("download the raw log", func(t *testing.T) {
		r := h.call(t, http.MethodGet, "nodes/"+sid+"/results/current-installation/", "download", url.Values{"filters": {"/tmp/install.log"}})
		require.Equal(t, http.StatusOK, r.code)
		assert.Equal(t, "application/binary", r.header.Get("Content-Type"))
		assert.True(t, strings.HasPrefix(string(r.body), "curtin: Installation started."))
	})
	t.Run("download several under headers", func(t *testing.T) {
		r := h.call(t, http.MethodGet, "nodes/"+sid+"/results/current-commissioning/", "download", nil)
		require.Equal(t, http.StatusOK, r.code)
		assert.Contains(t, string(r.body), " 50-maas-01-commissioning ")
		assert.Contains(t, string(r.body), "---- maas-lshw ----")
	})
	t.Run("list by type", func(t *testing.T) {
		for typ, want := range map[string]string{"commissioning": "Commissioning", "testing": "Testing", "install": "Installation"} {
			r := h.call(t, http.MethodGet, "nodes/"+sid+"/results/", "", url.Values{"type": {typ}})
			var sets []scriptSetJSON
			r.json(t, &sets)
			require.Len(t, sets, 1, typ)
			assert.Equal(t, want, sets[0].TypeName)
		}
		r := h.call(t, http.MethodGet, "nodes/"+sid+"/results/", "", nil)
		var sets []scriptSetJSON
		r.json(t, &sets)
		assert.Len(t, sets, 3)
	})
	t.Run("no current set", func(t *testing.T) {
		other := h.create(t, "gpu-2", h.host(t, 2, Faults{}), false)
		r := h.call(t, http.MethodGet, "nodes/"+other+"/results/current-installation/", "", nil)
		assert.Equal(t, http.StatusBadRequest, r.code)
		assert.Equal(t, "No current installation script set exists for this node.", string(r.body))
		r = h.call(t, http.MethodGet, "nodes/xxxxxx/results/", "", nil)
		assert.Equal(t, "No Node matches the given query.", string(r.body))
	})
}

func TestInterfaces(t *testing.T) {
	h := newHarness(t)
	sid := h.ready(t, "gpu-1", 1, Faults{})
	list := func(t *testing.T) []ifaceJSON {
		t.Helper()
		r := h.call(t, http.MethodGet, "nodes/"+sid+"/interfaces/", "", nil)
		require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
		var is []ifaceJSON
		r.json(t, &is)
		return is
	}
	is := list(t)
	require.Len(t, is, 1)
	boot := is[0]
	require.Len(t, boot.Links, 1)
	assert.Equal(t, "auto", boot.Links[0].Mode)
	assert.Equal(t, "10.20.0.0/24", boot.Links[0].Subnet.CIDR)
	assert.Empty(t, boot.Links[0].IPAddress, "an AUTO link has no address until deploy")
	path := "nodes/" + sid + "/interfaces/" + itoa(boot.ID) + "/"

	tests := []struct {
		name   string
		op     string
		params url.Values
		code   int
		body   string
	}{
		{"mode required", "link_subnet", url.Values{}, http.StatusBadRequest, `{"mode": ["This field is required."]}`},
		{"bad mode", "link_subnet", url.Values{"mode": {"bridge"}}, http.StatusBadRequest,
			`{"mode": ["'bridge' is not a valid mode.  It should be one of: 'auto', 'dhcp', 'static', 'link_up'."]}`},
		{"AUTO needs a subnet", "link_subnet", url.Values{"mode": {"AUTO"}}, http.StatusBadRequest, `{"subnet": ["This field is required."]}`},
		{"unknown subnet", "link_subnet", url.Values{"mode": {"AUTO"}, "subnet": {"99"}}, http.StatusBadRequest,
			`{"subnet": ["Select a valid choice. That choice is not one of the available choices."]}`},
		{"static outside the subnet", "link_subnet", url.Values{"mode": {"STATIC"}, "subnet": {"1"}, "ip_address": {"10.9.9.9"}},
			http.StatusBadRequest, `{"ip_address": ["IP address is not in the given subnet '10.20.0.0/24'."]}`},
		{"LINK_UP over a link", "link_subnet", url.Values{"mode": {"LINK_UP"}}, http.StatusBadRequest,
			`{"mode": ["Cannot configure interface to link up (with no IP address) while other links are already configured. Specify force=True to override this behavior and delete all links."]}`},
		{"unlink unknown id", "unlink_subnet", url.Values{"id": {"999"}}, http.StatusBadRequest,
			`{"id": ["'999' is not a valid id.  It should be one of: '` + itoa(boot.Links[0].ID) + `'."]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := h.call(t, http.MethodPost, path, tc.op, tc.params)
			assert.Equal(t, tc.code, r.code)
			assert.Equal(t, tc.body, string(r.body))
		})
	}

	t.Run("AUTO twice makes two links; unlink the old one", func(t *testing.T) {
		r := h.call(t, http.MethodPost, path, "link_subnet", url.Values{"mode": {"auto"}, "subnet": {"10.20.0.0/24"}, "default_gateway": {"false"}})
		require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
		var i ifaceJSON
		r.json(t, &i)
		require.Len(t, i.Links, 2)
		r = h.call(t, http.MethodPost, path, "unlink_subnet", url.Values{"id": {itoa(i.Links[0].ID)}})
		require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
		r.json(t, &i)
		require.Len(t, i.Links, 1)
	})
	t.Run("AUTO replaces a DHCP link", func(t *testing.T) {
		var i ifaceJSON
		h.call(t, http.MethodGet, path, "", nil).json(t, &i)
		for _, l := range i.Links {
			r := h.call(t, http.MethodPost, path, "unlink_subnet", url.Values{"id": {itoa(l.ID)}})
			require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
		}
		r := h.call(t, http.MethodPost, path, "link_subnet", url.Values{"mode": {"DHCP"}, "subnet": {"1"}})
		require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
		r = h.call(t, http.MethodPost, path, "link_subnet", url.Values{"mode": {"AUTO"}, "subnet": {"1"}})
		require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
		r.json(t, &i)
		require.Len(t, i.Links, 1)
		assert.Equal(t, "auto", i.Links[0].Mode)
	})
	t.Run("static address is kept and shown", func(t *testing.T) {
		r := h.call(t, http.MethodPost, path, "link_subnet", url.Values{"mode": {"STATIC"}, "subnet": {"1"}, "ip_address": {"10.20.0.50"}})
		require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
		var i ifaceJSON
		r.json(t, &i)
		assert.Equal(t, "10.20.0.50", i.Links[len(i.Links)-1].IPAddress)
		r = h.call(t, http.MethodPost, path, "link_subnet", url.Values{"mode": {"STATIC"}, "subnet": {"1"}, "ip_address": {"10.20.0.210"}})
		assert.Equal(t, `{"ip_address": ["IP address is inside a dynamic range 10.20.0.200 to 10.20.0.250."]}`, string(r.body))
	})
	t.Run("edits refused while Deploying", func(t *testing.T) {
		require.Equal(t, http.StatusOK, h.call(t, http.MethodPost, "machines/"+sid+"/", "deploy", nil).code)
		r := h.call(t, http.MethodPost, path, "link_subnet", url.Values{"mode": {"AUTO"}, "subnet": {"1"}})
		assert.Equal(t, http.StatusConflict, r.code)
		assert.Equal(t, "Cannot link subnet interface because the machine is not New, Ready, Allocated, or Broken.", string(r.body))
		r = h.call(t, http.MethodPost, path, "unlink_subnet", url.Values{"id": {"1"}})
		assert.Equal(t, "Cannot unlink subnet interface because the machine is not New, Ready, Allocated, or Broken.", string(r.body))
	})
	t.Run("disconnect drops VLAN and links", func(t *testing.T) {
		other := h.ready(t, "gpu-2", 2, Faults{})
		var is []ifaceJSON
		h.call(t, http.MethodGet, "nodes/"+other+"/interfaces/", "", nil).json(t, &is)
		r := h.call(t, http.MethodPost, "nodes/"+other+"/interfaces/"+is[0].Name+"/", "disconnect", nil)
		require.Equal(t, http.StatusOK, r.code, "body: %s", r.body)
		var i ifaceJSON
		r.json(t, &i)
		assert.Nil(t, i.VLAN)
		assert.Empty(t, i.Links)
		r = h.call(t, http.MethodPost, "machines/"+other+"/", "deploy", nil)
		assert.Equal(t, `{"network": ["Node must be configured to use a network"]}`, string(r.body))
	})
}

func TestNetworkReads(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		path string
		code int
		part string
	}{
		{"subnets/", http.StatusOK, `"cidr":"10.20.0.0/24"`},
		{"subnets/1/", http.StatusOK, `"gateway_ip":"10.20.0.1"`},
		{"subnets/cidr:10.20.0.0/24/", http.StatusNotFound, "Not Found"},
		{"subnets/7/", http.StatusNotFound, "No Subnet matches the given query."},
		{"fabrics/", http.StatusOK, `"name":"fabric-0"`},
		{"fabrics/0/vlans/", http.StatusOK, `"dhcp_on":true`},
		{"fabrics/0/vlans/0/", http.StatusOK, `"vid":0`},
		{"vlans/5001/", http.StatusOK, `"fabric_id":0`},
		{"vlans/1/", http.StatusNotFound, "No VLAN matches the given query."},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			r := h.call(t, http.MethodGet, tc.path, "", nil)
			assert.Equal(t, tc.code, r.code)
			assert.Contains(t, string(r.body), tc.part)
		})
	}
	r := h.call(t, http.MethodGet, "maas/", "get_config", url.Values{"name": {"node_timeout"}})
	assert.Equal(t, "30", string(r.body))
	r = h.call(t, http.MethodGet, "version/", "", nil)
	assert.Contains(t, string(r.body), `"authenticate-api"`)
}
