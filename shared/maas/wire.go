package maas

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"
)

// The wire types mirror MAAS's JSON (maas-behaviour §7, §9–§13) and stay
// unexported: only this package's own types cross the ports. Nullable MAAS
// fields are pointers or nullString here and plain zero values outside.

// nullString is a JSON string or null ("" for null). encoding/json
// decodes it natively: a null leaves a Go string as it is, and every
// nullString is decoded into a fresh, zero value, so null reads as "". No
// UnmarshalJSON on purpose: a machine object holds dozens of these, and a
// custom decoder makes encoding/json scan each value twice and start a
// second decoder for it.
type nullString string

// jsonString is the string a JSON string literal b holds. A literal of
// printable ASCII without escapes, as nearly every MAAS name and id is,
// is its bytes between the quotes; anything else goes through
// encoding/json.
func jsonString(b []byte) (string, error) {
	if n := len(b); n >= 2 && b[0] == '"' && b[n-1] == '"' && plainASCII(b[1:n-1]) {
		return string(b[1 : n-1]), nil
	}
	var v string
	err := json.Unmarshal(b, &v)
	return v, err
}

// plainASCII says whether b needs no JSON unescaping: no control
// character, quote, backslash or non-ASCII byte.
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// named decodes MAAS's nested {id, name, …} objects (domain, zone, pool) to
// their name; a bare string is accepted too.
type named string

func (n *named) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*n = ""
	case len(b) > 0 && b[0] == '"':
		v, err := jsonString(b)
		if err != nil {
			return err
		}
		*n = named(v)
	default:
		var v struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*n = named(v.Name)
	}
	return nil
}

// idRef decodes a reference that MAAS renders either as an id or as the
// whole object (relay_vlan, maas-behaviour §10); nil for null.
type idRef struct{ id *int }

func (r *idRef) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		r.id = nil
	case len(b) > 0 && b[0] == '{':
		var v struct {
			ID int `json:"id"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		r.id = &v.ID
	default:
		var v int
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		r.id = &v
	}
	return nil
}

type wireMachine struct {
	SystemID         string          `json:"system_id"`
	Hostname         string          `json:"hostname"`
	FQDN             string          `json:"fqdn"`
	Status           int             `json:"status"`
	StatusName       string          `json:"status_name"`
	StatusMessage    nullString      `json:"status_message"`
	StatusAction     nullString      `json:"status_action"`
	ErrorDescription nullString      `json:"error_description"`
	Owner            nullString      `json:"owner"`
	Locked           bool            `json:"locked"`
	PowerType        nullString      `json:"power_type"`
	PowerState       nullString      `json:"power_state"`
	Architecture     nullString      `json:"architecture"`
	OSystem          nullString      `json:"osystem"`
	DistroSeries     nullString      `json:"distro_series"`
	HWEKernel        nullString      `json:"hwe_kernel"`
	CPUCount         int             `json:"cpu_count"`
	Memory           int             `json:"memory"`
	IPAddresses      []string        `json:"ip_addresses"`
	InterfaceSet     []wireInterface `json:"interface_set"`
	BootInterface    *wireInterface  `json:"boot_interface"`
	BootDisk         *wireRef        `json:"boot_disk"`
	Domain           named           `json:"domain"`
	Zone             named           `json:"zone"`
	Pool             named           `json:"pool"`
	TagNames         []string        `json:"tag_names"`
	// CommissioningStatus is absent before MAAS 2.2: nil reads as none.
	CommissioningStatus *int `json:"commissioning_status"`
}

// wireRef is a nested object read only for its id.
type wireRef struct {
	ID int `json:"id"`
}

func (w wireMachine) machine() Machine {
	m := Machine{
		SystemID:         w.SystemID,
		Hostname:         w.Hostname,
		FQDN:             w.FQDN,
		Status:           Status(w.Status),
		StatusName:       w.StatusName,
		StatusMessage:    string(w.StatusMessage),
		StatusAction:     string(w.StatusAction),
		ErrorDescription: string(w.ErrorDescription),
		Owner:            string(w.Owner),
		Locked:           w.Locked,
		PowerType:        string(w.PowerType),
		PowerState:       string(w.PowerState),
		Architecture:     string(w.Architecture),
		OSystem:          string(w.OSystem),
		DistroSeries:     string(w.DistroSeries),
		HWEKernel:        string(w.HWEKernel),
		CPUCount:         w.CPUCount,
		Memory:           w.Memory,
		IPAddresses:      w.IPAddresses,
		Domain:           string(w.Domain),
		Zone:             string(w.Zone),
		Pool:             string(w.Pool),
		TagNames:         w.TagNames,
	}
	if m.StatusName == "" {
		m.StatusName = m.Status.String()
	}
	m.CommissioningStatus = ScriptStatusNone
	if w.CommissioningStatus != nil {
		m.CommissioningStatus = *w.CommissioningStatus
	}
	if w.BootInterface != nil {
		m.BootInterfaceID = w.BootInterface.ID
	}
	if w.BootDisk != nil {
		m.BootDiskID = w.BootDisk.ID
	}
	if len(w.InterfaceSet) > 0 {
		m.Interfaces = make([]Interface, len(w.InterfaceSet))
		for i, wi := range w.InterfaceSet {
			m.Interfaces[i] = wi.iface()
		}
	}
	return m
}

func machines(ws []wireMachine) []Machine {
	out := make([]Machine, len(ws))
	for i, w := range ws {
		out[i] = w.machine()
	}
	return out
}

type wireInterface struct {
	ID         int        `json:"id"`
	Name       string     `json:"name"`
	Type       string     `json:"type"`
	MACAddress nullString `json:"mac_address"`
	Enabled    bool       `json:"enabled"`
	VLAN       *wireVLAN  `json:"vlan"`
	Links      []wireLink `json:"links"`
	Discovered []wireLink `json:"discovered"`
	Parents    []string   `json:"parents"`
	Children   []string   `json:"children"`
	// EffectiveMTU is read by ObservedInterfaces only.
	EffectiveMTU int `json:"effective_mtu"`
}

func (w wireInterface) iface() Interface {
	i := Interface{
		ID:         w.ID,
		Name:       w.Name,
		Type:       w.Type,
		MACAddress: string(w.MACAddress),
		Enabled:    w.Enabled,
		VLAN:       w.VLAN.vlan(),
		Links:      make([]Link, len(w.Links)),
		Parents:    nilIfEmpty(w.Parents), Children: nilIfEmpty(w.Children),
	}
	for k, l := range w.Links {
		i.Links[k] = l.link()
	}
	for _, d := range w.Discovered {
		i.Discovered = append(i.Discovered, Discovered{IPAddress: string(d.IPAddress), Subnet: d.Subnet.subnet()})
	}
	return i
}

type wireVLAN struct {
	ID        int        `json:"id"`
	VID       int        `json:"vid"`
	Fabric    nullString `json:"fabric"`
	DHCPOn    bool       `json:"dhcp_on"`
	RelayVLAN idRef      `json:"relay_vlan"`
}

func (w *wireVLAN) vlan() *VLAN {
	if w == nil {
		return nil
	}
	return &VLAN{ID: w.ID, VID: w.VID, Fabric: string(w.Fabric), DHCPOn: w.DHCPOn, RelayVLAN: w.RelayVLAN.id}
}

type wireLink struct {
	ID        int         `json:"id"`
	Mode      string      `json:"mode"`
	IPAddress nullString  `json:"ip_address"`
	Subnet    *wireSubnet `json:"subnet"`
}

func (w wireLink) link() Link {
	return Link{ID: w.ID, Mode: w.Mode, IPAddress: string(w.IPAddress), Subnet: w.Subnet.subnet()}
}

type wireSubnet struct {
	ID        int        `json:"id"`
	Name      string     `json:"name"`
	CIDR      string     `json:"cidr"`
	GatewayIP nullString `json:"gateway_ip"`
	VLAN      *wireVLAN  `json:"vlan"`
	DNS       []string   `json:"dns_servers"`
}

func (w *wireSubnet) subnet() *Subnet {
	if w == nil {
		return nil
	}
	return &Subnet{ID: w.ID, Name: w.Name, CIDR: w.CIDR, GatewayIP: string(w.GatewayIP), VLAN: w.VLAN.vlan(), DNSServers: nilIfEmpty(w.DNS)}
}

// eventTimeLayout is MAAS's event "created" format, "%a, %d %b. %Y
// %H:%M:%S" in UTC without a zone (maas-behaviour §11).
const eventTimeLayout = "Mon, 02 Jan. 2006 15:04:05"

// maasTime decodes an event's created time; RFC 1123 and RFC 3339 are
// accepted as well in case a region renders it differently. An unreadable
// time is left zero rather than failing the whole query: the events are
// still worth reading, and they come newest first anyway.
type maasTime time.Time

func (t *maasTime) UnmarshalJSON(b []byte) error {
	var s string
	if !bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		var err error
		if s, err = jsonString(bytes.TrimSpace(b)); err != nil {
			return err
		}
	}
	if s == "" {
		*t = maasTime{}
		return nil
	}
	for _, layout := range []string{eventTimeLayout, time.RFC1123Z, time.RFC1123, time.RFC3339Nano} {
		if v, err := time.Parse(layout, string(s)); err == nil {
			*t = maasTime(v.UTC())
			return nil
		}
	}
	*t = maasTime{}
	return nil
}

type wireEvent struct {
	ID          int64      `json:"id"`
	Node        nullString `json:"node"`
	Hostname    nullString `json:"hostname"`
	Level       string     `json:"level"`
	Created     maasTime   `json:"created"`
	Type        nullString `json:"type"`
	Description nullString `json:"description"`
}

type wireEvents struct {
	Count  int         `json:"count"`
	Events []wireEvent `json:"events"`
}

func (w wireEvent) event() Event {
	return Event{
		ID:          w.ID,
		Node:        string(w.Node),
		Hostname:    string(w.Hostname),
		Level:       w.Level,
		Created:     time.Time(w.Created),
		Type:        string(w.Type),
		Description: string(w.Description),
	}
}

type wireScriptSet struct {
	ID         int                `json:"id"`
	StatusName string             `json:"status_name"`
	Results    []wireScriptResult `json:"results"`
}

type wireScriptResult struct {
	ID         int        `json:"id"`
	Name       string     `json:"name"`
	Status     int        `json:"status"`
	StatusName string     `json:"status_name"`
	ExitStatus *int       `json:"exit_status"`
	Output     nullString `json:"output"`
}

func (w wireScriptSet) scriptSet(t ScriptType) ScriptSet {
	s := ScriptSet{ID: w.ID, Type: t, StatusName: w.StatusName, Results: make([]ScriptResult, len(w.Results))}
	for i, r := range w.Results {
		out, binary := decodeOutput(string(r.Output))
		s.Results[i] = ScriptResult{
			ID: r.ID, Name: r.Name, Status: r.Status, StatusName: r.StatusName,
			ExitStatus: r.ExitStatus, Output: out, Binary: binary,
		}
	}
	return s
}

// decodeOutput decodes a base64 script output (maas-behaviour §12). Text that is
// not base64 is kept as is (a region or proxy that already decoded it);
// bytes that are not UTF-8 text are dropped and reported as binary.
func decodeOutput(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return s, false
	}
	if !utf8.Valid(b) {
		return "", true
	}
	return string(b), false
}

type wireVersion struct {
	Capabilities []string   `json:"capabilities"`
	Version      string     `json:"version"`
	Subversion   nullString `json:"subversion"`
}

type wireWhoami struct {
	Username    string `json:"username"`
	IsSuperuser bool   `json:"is_superuser"`
}

type wirePowerState struct {
	State string `json:"state"`
}

// nilIfEmpty reads MAAS's empty list as no list.
func nilIfEmpty(v []string) []string {
	if len(v) == 0 {
		return nil
	}
	return v
}
