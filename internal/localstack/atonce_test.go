package localstack_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestOnboardingsAtOnceAllEnroll posts 200 onboardings at once on a stack
// with the limits `maasflow local` ships with: more node agents enroll at
// the same moment than one client address may hold connections, so they
// only all enroll because each calls from its own address and retries a
// refusal. It counts completed onboardings; it times nothing.
func TestOnboardingsAtOnceAllEnroll(t *testing.T) {
	const n = 200
	s, site := startBenchStack(t, t.TempDir())
	r := onboardBatch(t, s, site, n, 0)
	assert.Equal(t, n, r.completed, "the others: %v", r.others)
}
