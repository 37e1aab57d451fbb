package enroll

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The validators accept exactly what the counted-repetition patterns they
// replaced accepted.
func TestValidatorsMatchTheirCountedPatterns(t *testing.T) {
	tests := []struct {
		name    string
		counted string
		match   func(string) bool
		inputs  []string
	}{
		{"token", `^[A-Za-z0-9_-]{1,512}$`, tokenPattern.MatchString, []string{
			"", "a", "abc-_XYZ09", strings.Repeat("a", 512), strings.Repeat("a", 513), "a b", "é", "a=",
		}},
		{"pubkey", `^[A-Za-z0-9+/=:._-]{1,1000}$`, pubKeyPattern.MatchString, []string{
			"", "ed25519:AAAA+/==", strings.Repeat("k", 1000), strings.Repeat("k", 1001), "a,b", "a b", "kéy",
		}},
		{"site oci ref", `^[A-Za-z0-9][A-Za-z0-9./:@_-]{0,511}$`, siteOCIRefPattern.MatchString, []string{
			"", "r", "registry.example.com/site/bootstrap:1.0", "-r", "r" + strings.Repeat("x", 511), "r" + strings.Repeat("x", 512), "r x", "r\"",
		}},
		{"unit", `^[A-Za-z0-9:_.@-]+\.service$`, isServiceUnit, []string{
			"", ".service", "a.service", "gpuaas-node-agent.service", "a.service.service", "a@b.service", "a b.service",
			"a.socket", "a.servicex", "aservice", "..service",
		}},
	}
	for _, tc := range tests {
		re := regexp.MustCompile(tc.counted)
		for _, in := range tc.inputs {
			assert.Equal(t, re.MatchString(in), tc.match(in), "%s %q", tc.name, in)
		}
	}
}
