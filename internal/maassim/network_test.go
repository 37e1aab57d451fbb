package maassim

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAWideSubnetHoldsAThousandMachines(t *testing.T) {
	s := New(Options{SubnetCIDR: "10.20.0.0/20"})
	t.Cleanup(s.Close)
	sn := s.net.subnet
	assert.Equal(t, "10.20.0.0/20", sn.name)
	assert.Equal(t, netip.MustParseAddr("10.20.0.1"), sn.gateway)
	seen := map[string]bool{}
	for range 1500 {
		ip, ok := s.allocateIP(sn)
		require.True(t, ok, "address %d", len(seen)+1)
		a := netip.MustParseAddr(ip)
		assert.True(t, sn.cidr.Contains(a))
		assert.False(t, sn.inDynamicRange(a) || a == sn.gateway, ip)
		assert.False(t, seen[ip], "handed out twice: %s", ip)
		seen[ip] = true
	}
}

func TestTheDefaultSubnetStaysA24(t *testing.T) {
	for _, cidr := range []string{"", "nonsense", "10.20.0.0/28", "fd00::/64"} {
		s := New(Options{SubnetCIDR: cidr})
		assert.Equal(t, DefaultSubnetCIDR, s.net.subnet.name, cidr)
		n := 0
		for {
			if _, ok := s.allocateIP(s.net.subnet); !ok {
				break
			}
			n++
		}
		assert.Less(t, n, 254, "a /24 runs out: %q", cidr)
		s.Close()
	}
}
