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

// deployMilestoneEvents is how many polls of a deploy wait see new MAAS
// events and so read the machine too: power-on, PXE boot, loading the
// ephemeral, installing and configuring the OS, rebooting (maas-behaviour
// §11) — taken as six, one per poll.
const deployMilestoneEvents = 6

// newGETs is the MAAS GETs of CheckMachine's polls over a wait of polls
// polls (pollMachine): the first, every machineFullReadEvery-th and the
// last poll read the machine and its events (two GETs), and so does the
// wait for Ready's second, which sees the host's boot; the others cost
// one — the status-filtered list for ready, the events for deployed, plus
// the machine on the polls that see new deploy events.
func newGETs(target PollTarget, polls int) int {
	gets := 0
	for n := range polls {
		switch {
		case n == 0 || n == polls-1 || n%machineFullReadEvery == 0, target == TargetReady && n == 1:
			gets += 2
		default:
			gets++
		}
	}
	if target == TargetDeployed {
		gets += min(deployMilestoneEvents, max(polls-2, 0))
	}
	return gets
}

// BenchmarkMachinePollSchedule compares CheckMachine's schedule and polls
// with the previous 15 s ×1.5 → 120 s backoff, whose every poll read the
// machine and its events (two GETs), over phase durations that bracket
// commissioning+testing and deploy of a GPU server. Per duration: GETs
// per waiting hour, and the worst detection latency for a transition in
// the last poll interval (transition at every second of the wait).
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
				perHour := func(gets int) float64 { return float64(gets) * 3600 / float64(d) }
				b.ReportMetric(perHour(2*oldPolls), "old-GETs/h")
				b.ReportMetric(perHour(newGETs(target, newPolls)), "new-GETs/h")
				b.ReportMetric(float64(oldWorst), "old-worst-latency-s")
				b.ReportMetric(float64(newWorst), "new-worst-latency-s")
			})
		}
	}
}
