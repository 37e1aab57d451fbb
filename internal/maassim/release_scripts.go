package maassim

import (
	"fmt"
	"strings"
	"time"
)

// Release scripts: from MAAS 3.5 a release that erases runs the wipe-disks
// release script in the ephemeral environment, and its result set (type 3,
// "Release") is listed by GET nodes/{id}/results/?type=release
// (maas-behaviour §5, §12). There is no current-release alias.

// scriptSetRelease is the Release script-set type (maas-behaviour §12).
const scriptSetRelease = 3

// startWipe opens the release script set of an erase with one running
// wipe-disks result.
func (s *Simulator) startWipe(m *machine, at time.Time) {
	ss := s.newSet(m, scriptSetRelease, at, []string{"wipe-disks"}, []int{3}, "0:10:00")
	startResults(ss, at)
	m.currentRelease = ss
}

// finishWipe ends the wipe-disks result: passed with each disk named, or
// failed as MAAS reports a failed erase ("Failed to erase disks.",
// maas-behaviour §5).
func (s *Simulator) finishWipe(m *machine, at time.Time, ok bool) {
	ss := m.currentRelease
	m.currentRelease = nil
	if ss == nil {
		return
	}
	var disks []string
	if m.hw != nil {
		for _, d := range m.hw.spec.Disks {
			disks = append(disks, d.Name)
		}
	}
	if ok {
		var b strings.Builder
		for _, d := range disks {
			fmt.Fprintf(&b, "%s: wiped\n", d)
		}
		b.WriteString("All disks have been successfully wiped.\n")
		finishResult(ss.results[0], at, scriptPassed, 0, b.String(), "")
		return
	}
	finishResult(ss.results[0], at, scriptFailed, 1, "", fmt.Sprintf("Failed to wipe %s: I/O error\n", strings.Join(disks, ", ")))
}

// eraseHangs consumes an erase_hangs fault: the erase never finishes, and
// the machine stays Disk erasing until it is aborted, as MAAS sets no
// timeout there (maas-behaviour §4).
func (s *Simulator) eraseHangs(m *machine) bool {
	if m.hw == nil || m.hw.faults.EraseHangs <= 0 {
		return false
	}
	m.hw.faults.EraseHangs--
	return true
}
