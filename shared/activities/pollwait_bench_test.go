package activities

import (
	"fmt"
	"testing"
)

// schedule returns the poll times (seconds after the action) of a wait
// whose MAAS transition happens at done, and the delay until it is seen.
func schedule(wait func(n int) int, done int) (polls, latency int) {
	t := 0
	for n := 0; ; n++ {
		polls++
		if t >= done {
			return polls, t - done
		}
		t += wait(n)
	}
}

// BenchmarkMachinePollSchedule compares CheckMachine's schedule with the
// previous 15 s ×1.5 → 120 s backoff over phase durations that bracket
// commissioning+testing and deploy of a GPU server. Per duration: polls
// (each one machine GET and one events GET), GETs per waiting hour, and
// the worst detection latency for a transition in the last poll interval
// (transition at every second of the wait).
func BenchmarkMachinePollSchedule(b *testing.B) {
	old := pollWait
	for _, target := range []PollTarget{TargetReady, TargetDeployed} {
		now := func(n int) int { return machinePollWait(target, n) }
		for _, minutes := range []int{10, 12, 15, 20, 30, 60} {
			b.Run(fmt.Sprintf("%s/%dmin", target, minutes), func(b *testing.B) {
				d := minutes * 60
				var oldPolls, newPolls, oldWorst, newWorst int
				for range b.N {
					oldPolls, _ = schedule(old, d)
					newPolls, _ = schedule(now, d)
					oldWorst, newWorst = 0, 0
					// Worst latency for a transition anywhere after the
					// quiet period up to d.
					for at := machinePollQuietSeconds[target]; at <= d; at++ {
						if _, l := schedule(old, at); l > oldWorst {
							oldWorst = l
						}
						if _, l := schedule(now, at); l > newWorst {
							newWorst = l
						}
					}
				}
				perHour := func(polls int) float64 { return float64(2*polls) * 3600 / float64(d) }
				b.ReportMetric(perHour(oldPolls), "old-GETs/h")
				b.ReportMetric(perHour(newPolls), "new-GETs/h")
				b.ReportMetric(float64(oldWorst), "old-worst-latency-s")
				b.ReportMetric(float64(newWorst), "new-worst-latency-s")
			})
		}
	}
}
