package localstack_test

import (
	"errors"
	"math"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/localstack"
)

// collectorNow reads the collector's settings without changing them.
func collectorNow() (percent int, limit int64) {
	percent = debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

func noEnv(string) string { return "" }

func memory(n uint64) func() (uint64, error) {
	return func() (uint64, error) { return n, nil }
}

func TestTuneCollectorRaisesTheTargetUnderHalfTheMemory(t *testing.T) {
	p0, l0 := collectorNow()
	c, err := localstack.TuneCollector(noEnv, memory(8<<30))
	require.NoError(t, err)
	p, l := collectorNow()
	assert.Equal(t, localstack.CollectorPercent, p)
	assert.Equal(t, int64(4<<30), l)
	assert.Equal(t, "GOGC=400, memory limit 4096 MiB", c.String())
	assert.False(t, c.FromEnv)

	c.Restore()
	p, l = collectorNow()
	assert.Equal(t, p0, p, "Restore puts the target back")
	assert.Equal(t, l0, l, "Restore puts the limit back")
}

func TestTuneCollectorKeepsWhatTheEnvironmentSet(t *testing.T) {
	p0, l0 := collectorNow()
	env := map[string]string{"GOGC": "150", "GOMEMLIMIT": "2GiB"}
	// The runtime applied the variables when the process started; here the
	// test stands in for it.
	debug.SetGCPercent(150)
	debug.SetMemoryLimit(2 << 30)
	t.Cleanup(func() { debug.SetGCPercent(p0); debug.SetMemoryLimit(l0) })

	asked := false
	c, err := localstack.TuneCollector(func(k string) string { return env[k] }, func() (uint64, error) {
		asked = true
		return 64 << 30, nil
	})
	require.NoError(t, err)
	p, l := collectorNow()
	assert.Equal(t, 150, p)
	assert.Equal(t, int64(2<<30), l)
	assert.True(t, c.FromEnv)
	assert.False(t, asked, "a limit from $GOMEMLIMIT needs no measure of the memory")

	// With only $GOGC set, the limit still comes from the memory.
	delete(env, "GOMEMLIMIT")
	c, err = localstack.TuneCollector(func(k string) string { return env[k] }, memory(8<<30))
	require.NoError(t, err)
	p, l = collectorNow()
	assert.Equal(t, 150, p)
	assert.Equal(t, int64(4<<30), l)
	assert.True(t, c.FromEnv)
}

func TestTuneCollectorChangesNothingWithoutACeiling(t *testing.T) {
	p0, l0 := collectorNow()
	for name, available := range map[string]func() (uint64, error){
		"unknown": func() (uint64, error) { return 0, errors.New("no /proc") },
		"zero":    memory(0),
		"huge":    memory(math.MaxUint64),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := localstack.TuneCollector(noEnv, available)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "memory available")
			p, l := collectorNow()
			assert.Equal(t, p0, p)
			assert.Equal(t, l0, l)
		})
	}
}
