package maassim

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// systemIDAlphabet is MAAS's base-24 system id alphabet (maas-behaviour §7).
const systemIDAlphabet = "34678abcdefghkmnpqrstwxy"

// newSystemID draws a fresh 6-character id from the seeded generator.
func (s *Simulator) newSystemID() string {
	for {
		b := make([]byte, 6)
		for i := range b {
			b[i] = systemIDAlphabet[s.rng.IntN(len(systemIDAlphabet))]
		}
		if id := string(b); s.st.machines[id] == nil {
			return id
		}
	}
}

var (
	petAdjectives = []string{"able", "brave", "calm", "eager", "fair", "glad", "happy", "keen", "lucky", "merry", "noble", "proud", "quick", "sharp", "tidy", "vivid"}
	petNouns      = []string{"ant", "bat", "cat", "deer", "eel", "fox", "gnu", "hare", "ibex", "jay", "kiwi", "lynx", "mole", "newt", "owl", "puma"}
)

// petName is the random hostname MAAS gives a machine created without one.
func (s *Simulator) petName() string {
	for {
		h := petAdjectives[s.rng.IntN(len(petAdjectives))] + "-" + petNouns[s.rng.IntN(len(petNouns))]
		if len(s.st.byHostname[h]) == 0 {
			return h
		}
		h = fmt.Sprintf("%s-%d", h, s.rng.IntN(1000))
		if len(s.st.byHostname[h]) == 0 {
			return h
		}
	}
}

// normMAC is MAAS's MAC spelling: lower case, colon separated. Invalid input
// is returned lower-cased so that it never matches.
func normMAC(mac string) string {
	hw, err := net.ParseMAC(mac)
	if err != nil {
		return strings.ToLower(mac)
	}
	return hw.String()
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// quoteList renders 'a', 'b' as MAAS's choice errors do.
func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, v := range list {
		q[i] = "'" + v + "'"
	}
	return strings.Join(q, ", ")
}

func atoiOr(v string, def int) int {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return def
	}
	return n
}
