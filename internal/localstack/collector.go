package localstack

import (
	"fmt"
	"math"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// CollectorPercent is the garbage collector's target (GOGC) for a process
// that runs the local stack. The process holds every open execution, record
// index and the simulator's machines for hours, and the collector marks all
// of it on every cycle while requests wait for the cores it takes: with
// 1,000 onboardings open on two cores, the default of 100 ran a cycle about
// every half second of posting and made the tail of POST /onboardings;
// at 400 cycles are a quarter as frequent (docs/benchmarks.md, "The
// collector's target").
const CollectorPercent = 400

// memoryShare is the part of the memory the process may use (its cgroup's
// limit, else the machine's) that the collector treats as a soft ceiling:
// the heap grows to five times what is live only while that fits.
const memoryShare = 0.5

// Collector is how TuneCollector left the collector.
type Collector struct {
	Percent      int   // GOGC
	MemoryLimit  int64 // bytes; math.MaxInt64 when none
	FromEnv      bool  // $GOGC or $GOMEMLIMIT chose at least one of them
	previousPerc int
	previousLim  int64
}

func (c Collector) String() string {
	limit := "none"
	if c.MemoryLimit != math.MaxInt64 {
		limit = fmt.Sprintf("%d MiB", c.MemoryLimit>>20)
	}
	return fmt.Sprintf("GOGC=%d, memory limit %s", c.Percent, limit)
}

// Restore puts back the settings TuneCollector replaced, for a process
// (a benchmark) that goes on to run something else.
func (c Collector) Restore() {
	debug.SetGCPercent(c.previousPerc)
	debug.SetMemoryLimit(c.previousLim)
}

// TuneCollector sets the garbage collector for a process that runs the
// local stack: CollectorPercent, under a soft memory limit of half the
// memory the process may use, so that a large heap (100,000 records) costs
// more collection instead of more memory than the machine has to give.
// $GOGC and $GOMEMLIMIT, read through getenv, keep the setting they name:
// the Go runtime has already applied them. available reports the memory the
// process may use; nil reads the cgroup's limit, else the machine's memory.
// When neither it nor $GOMEMLIMIT gives a ceiling, nothing is changed: a
// heap five times what is live is only safe under one.
func TuneCollector(getenv func(string) string, available func() (uint64, error)) (Collector, error) {
	if available == nil {
		available = memlimit.ApplyFallback(memlimit.FromCgroup, memlimit.FromSystem)
	}
	prev := debug.SetGCPercent(-1) // reading the setting needs a write
	debug.SetGCPercent(prev)
	c := Collector{previousPerc: prev, previousLim: debug.SetMemoryLimit(-1)}
	c.Percent, c.MemoryLimit = c.previousPerc, c.previousLim
	if getenv("GOMEMLIMIT") != "" {
		c.FromEnv = true
	} else {
		total, err := available()
		if err == nil && (total == 0 || total > math.MaxInt64) {
			err = fmt.Errorf("it reads %d bytes", total)
		}
		if err != nil {
			return c, fmt.Errorf("collector left at GOGC=%d: the memory available to bound the heap is unknown: %w", c.Percent, err)
		}
		c.MemoryLimit = int64(float64(total) * memoryShare)
	}
	if getenv("GOGC") != "" {
		c.FromEnv = true
	} else {
		c.Percent = CollectorPercent
	}
	debug.SetGCPercent(c.Percent)
	debug.SetMemoryLimit(c.MemoryLimit)
	return c, nil
}
