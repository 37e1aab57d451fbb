package maassim

// status is MAAS's numeric node status (maas-behaviour §4). The simulator keeps its
// own copy rather than importing shared/maas so that the client and the
// simulator are each built from the reference, not from each other.
type status int

const (
	statusNew                      status = 0
	statusCommissioning            status = 1
	statusFailedCommissioning      status = 2
	statusMissing                  status = 3
	statusReady                    status = 4
	statusReserved                 status = 5
	statusDeployed                 status = 6
	statusRetired                  status = 7
	statusBroken                   status = 8
	statusDeploying                status = 9
	statusAllocated                status = 10
	statusFailedDeployment         status = 11
	statusReleasing                status = 12
	statusFailedReleasing          status = 13
	statusDiskErasing              status = 14
	statusFailedDiskErasing        status = 15
	statusRescueMode               status = 16
	statusEnteringRescueMode       status = 17
	statusFailedEnteringRescueMode status = 18
	statusExitingRescueMode        status = 19
	statusFailedExitingRescueMode  status = 20
	statusTesting                  status = 21
	statusFailedTesting            status = 22
)

type statusInfo struct {
	constant string // lower-case constant, the status= filter value
	name     string // status_name
	simple   string // simple_status
}

// statusTable follows MC/enums/node.py and MS/enum.py (maas-behaviour §4); note
// that 13 is "Releasing failed".
var statusTable = map[status]statusInfo{
	statusNew:                      {"new", "New", "New"},
	statusCommissioning:            {"commissioning", "Commissioning", "Commissioning"},
	statusFailedCommissioning:      {"failed_commissioning", "Failed commissioning", "Failed"},
	statusMissing:                  {"missing", "Missing", "Other"},
	statusReady:                    {"ready", "Ready", "Ready"},
	statusReserved:                 {"reserved", "Reserved", "Other"},
	statusDeployed:                 {"deployed", "Deployed", "Deployed"},
	statusRetired:                  {"retired", "Retired", "Other"},
	statusBroken:                   {"broken", "Broken", "Broken"},
	statusDeploying:                {"deploying", "Deploying", "Deploying"},
	statusAllocated:                {"allocated", "Allocated", "Allocated"},
	statusFailedDeployment:         {"failed_deployment", "Failed deployment", "Failed"},
	statusReleasing:                {"releasing", "Releasing", "Releasing"},
	statusFailedReleasing:          {"failed_releasing", "Releasing failed", "Failed"},
	statusDiskErasing:              {"disk_erasing", "Disk erasing", "Releasing"},
	statusFailedDiskErasing:        {"failed_disk_erasing", "Failed disk erasing", "Failed"},
	statusRescueMode:               {"rescue_mode", "Rescue mode", "Rescue Mode"},
	statusEnteringRescueMode:       {"entering_rescue_mode", "Entering rescue mode", "Rescue Mode"},
	statusFailedEnteringRescueMode: {"failed_entering_rescue_mode", "Failed to enter rescue mode", "Failed"},
	statusExitingRescueMode:        {"exiting_rescue_mode", "Exiting rescue mode", "Rescue Mode"},
	statusFailedExitingRescueMode:  {"failed_exiting_rescue_mode", "Failed to exit rescue mode", "Failed"},
	statusTesting:                  {"testing", "Testing", "Testing"},
	statusFailedTesting:            {"failed_testing", "Failed testing", "Failed"},
}

func (s status) name() string { return statusTable[s].name }

// statusByConstant maps "failed_deployment" to 11.
var statusByConstant = func() map[string]status {
	m := make(map[string]status, len(statusTable))
	for st, info := range statusTable {
		m[info.constant] = st
	}
	return m
}()

// releasableStatuses are MAAS's RELEASABLE_STATUSES (maas-behaviour §5 release).
var releasableStatuses = map[status]bool{
	statusAllocated: true, statusReserved: true, statusBroken: true, statusDeploying: true,
	statusDeployed: true, statusFailedDeployment: true, statusFailedDiskErasing: true,
	statusFailedReleasing: true,
}

// ownedStatuses keep an owner; any move to New or Ready clears it.
var ownedStatuses = map[status]bool{
	statusAllocated: true, statusDeploying: true, statusDeployed: true, statusFailedDeployment: true,
	statusReserved: true, statusReleasing: true, statusDiskErasing: true, statusFailedDiskErasing: true,
	statusFailedReleasing: true,
}

// rescueFrom are the statuses rescue_mode accepts (maas-behaviour §5).
var rescueFrom = map[status]bool{
	statusNew: true, statusFailedCommissioning: true, statusMissing: true, statusReady: true,
	statusReserved: true, statusAllocated: true, statusDeployed: true, statusRetired: true,
	statusBroken: true, statusFailedDeployment: true, statusFailedDiskErasing: true,
	statusFailedEnteringRescueMode: true, statusFailedTesting: true,
}

// exitRescueFrom are the statuses exit_rescue_mode accepts.
var exitRescueFrom = map[status]bool{
	statusRescueMode: true, statusEnteringRescueMode: true, statusFailedEnteringRescueMode: true,
	statusFailedExitingRescueMode: true,
}

// interfaceEditable are the statuses in which a machine's interfaces may be
// linked, unlinked or disconnected (maas-behaviour §9).
var interfaceEditable = map[status]bool{
	statusNew: true, statusReady: true, statusFailedTesting: true, statusAllocated: true, statusBroken: true,
}

// Script status codes (maas-behaviour §12).
const (
	scriptPending = 0
	scriptRunning = 1
	scriptPassed  = 2
	scriptFailed  = 3
	scriptTimeout = 4
	scriptAborted = 5
	scriptSkipped = 9
)

var scriptStatusNames = map[int]string{
	-1: "Unknown", 0: "Pending", 1: "Running", 2: "Passed", 3: "Failed", 4: "Timed out", 5: "Aborted",
	6: "Degraded", 7: "Installing dependencies", 8: "Failed installing dependencies", 9: "Skipped",
	10: "Applying custom network configuration", 11: "Failed to apply custom network configuration",
}

// Script set (result) types (maas-behaviour §12).
const (
	resultCommissioning = 0
	resultInstallation  = 1
	resultTesting       = 2
)

var resultTypeNames = map[int]string{0: "Commissioning", 1: "Installation", 2: "Testing", 3: "Release", 4: "Deployment"}

// Event levels as MAAS numbers them (python logging levels, AUDIT = 0).
const (
	levelAudit    = 0
	levelDebug    = 10
	levelInfo     = 20
	levelWarning  = 30
	levelError    = 40
	levelCritical = 50
)

var levelNames = map[int]string{0: "AUDIT", 10: "DEBUG", 20: "INFO", 30: "WARNING", 40: "ERROR", 50: "CRITICAL"}

var levelByName = map[string]int{"AUDIT": 0, "DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40, "CRITICAL": 50}
