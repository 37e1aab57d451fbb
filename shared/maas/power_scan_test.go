package maas

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScanPowerAddresses(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    []string
		wantErr string
	}{
		{name: "matches by address", want: []string{"aaa111", "ccc333"},
			body: `{"aaa111": {"power_address": "10.0.0.1", "power_pass": "x"},
			        "bbb222": {"power_address": "10.0.0.2"},
			        "ccc333": {"power_user": "maas", "power_address": " 10.0.0.1 "}}`},
		{name: "an address in another field or deeper is not the machine's", want: []string{},
			body: `{"aaa111": {"mac_address": "10.0.0.1", "nested": {"power_address": "10.0.0.1"}, "list": ["10.0.0.1"]}}`},
		{name: "a non-string address never matches", want: []string{},
			body: `{"aaa111": {"power_address": 10}, "bbb222": {"power_address": null}}`},
		{name: "a machine without parameters", want: []string{}, body: `{"aaa111": null, "bbb222": {}}`},
		{name: "no machines", want: []string{}, body: `{}`},
		{name: "not an object", body: `[{"power_address": "10.0.0.1"}]`, wantErr: "reply is not a JSON object of machines"},
		{name: "parameters not an object", body: `{"aaa111": "10.0.0.1"}`, wantErr: "reply has a machine whose power parameters are not an object"},
		{name: "two documents", body: `{} {}`, wantErr: "reply is not JSON"},
		{name: "truncated", body: `{"aaa111": {"power_address": "10.0.0.1", "power_pass": "Zq8-bmc-SEEDED"`, wantErr: "reply is not"},
		{name: "garbage", body: `<html>Zq8-bmc-SEEDED</html>`, wantErr: "reply is not JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ids, err := scanPowerAddresses([]byte(tc.body), "10.0.0.1")
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				assert.NotContains(t, err.Error(), "Zq8", "the reply holds passwords and is never quoted")
				return
			}
			require.NoError(t, err)
			if ids == nil {
				ids = []string{}
			}
			assert.Equal(t, tc.want, ids)
		})
	}
}

// BenchmarkScanPowerAddresses reads the power_parameters reply of a site
// of a thousand IPMI machines, as each discovery by BMC address does.
func BenchmarkScanPowerAddresses(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("{")
	for i := range 1000 {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `"m%05d":{"cipher_suite_id":"3","power_address":"10.40.%d.%d","power_boot_type":"auto","power_driver":"LAN_2_0","power_pass":"abcdefghijklmnopqrst","power_user":"maas","privilege_level":"OPERATOR"}`,
			i, i/250, i%250+1)
	}
	sb.WriteString("}")
	body := []byte(sb.String())
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		ids, err := scanPowerAddresses(body, "10.40.3.7")
		if err != nil || len(ids) != 1 {
			b.Fatal(ids, err)
		}
	}
}
