package maassim

import (
	"net/http"
	"strings"
)

// SetFaults replaces the faults of the host named hostname (its hardware
// hostname or that of a machine on it) from now on, remaining counts
// included: a host changed after it was onboarded, e.g. a GPU that fell off
// the bus or a swapped NIC. As on MAAS, what the host's machine shows
// (node devices, interfaces, block devices) changes only when it is next
// commissioned: MAAS records hardware from the commissioning scripts'
// output, never on its own (PUT /_sim/hardware/{hostname}/faults).
func (s *Simulator) SetFaults(hostname string, f Faults) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.setFaultsLocked(hostname, f)
	return err
}

func (s *Simulator) setFaultsLocked(hostname string, f Faults) (*hardware, error) {
	hw, err := s.hostNamed(hostname)
	if err != nil {
		return nil, err
	}
	if f.negativeCount() {
		return nil, &SimulatorInputError{Field: "faults", Reason: "counts cannot be negative"}
	}
	spec := hw.spec
	spec.Faults = f
	if err := setHardwareDefaults(&spec); err != nil {
		return nil, err
	}
	hw.spec.Faults = f
	hw.faults = f
	return hw, nil
}

// faultsHost matches /_sim/hardware/{hostname}/faults.
func faultsHost(path string) (string, bool) {
	name, ok := strings.CutPrefix(path, "/_sim/hardware/")
	if !ok {
		return "", false
	}
	name, ok = strings.CutSuffix(name, "/faults")
	return name, ok && name != "" && !strings.Contains(name, "/")
}

// serveSetFaults answers PUT /_sim/hardware/{hostname}/faults with the
// host as stored.
func (s *Simulator) serveSetFaults(w http.ResponseWriter, r *http.Request, hostname string) {
	if r.Method != http.MethodPut {
		jsonReply(http.StatusMethodNotAllowed, map[string]string{"error": "method not allowed"}).write(w)
		return
	}
	var f Faults
	if err := decodeStrict(r, &f); err != nil {
		controlError(w, err)
		return
	}
	s.mu.Lock()
	hw, err := s.setFaultsLocked(hostname, f)
	var view hardwareView
	if err == nil {
		view = s.viewHardware(hw)
	}
	s.mu.Unlock()
	if err != nil {
		controlError(w, err)
		return
	}
	jsonReply(http.StatusOK, view).write(w)
}

func isFaultsPath(path string) bool {
	_, ok := faultsHost(path)
	return ok
}

// negativeCount reports a negative attempt count; the device faults are
// checked with the host's parts (setHardwareDefaults).
func (f Faults) negativeCount() bool {
	return f.CommissionFailures < 0 || f.TestingFailures < 0 || f.DeployDatasourceFailures < 0 ||
		f.DeployOtherFailures < 0 || f.EraseFailures < 0 || f.EraseHangs < 0
}
