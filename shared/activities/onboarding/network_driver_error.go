package onboarding

import (
	"fmt"

	"github.com/maasflow/maasflow/shared/domain"
)

// NetworkDriverError: the site's network driver could not configure what
// lies outside the machine for its design (switch ports, VLANs, LACP).
// The machine's own side is set in MAAS; the switch is not, and repeating
// the call cannot tell why: an operator looks at the switch or the driver
// and retries the stage. Reason is the driver's own message.
type NetworkDriverError struct {
	SystemID string `json:"system_id"`
	Hostname string `json:"hostname"`
	Reason   string `json:"reason"`
}

func (e *NetworkDriverError) Error() string {
	return fmt.Sprintf("network driver could not configure the network of machine %s (%s): %s", e.SystemID, e.Hostname, e.Reason)
}

// Class: an operator checks the switch or the driver.
func (*NetworkDriverError) Class() domain.ErrorClass { return domain.ErrorNeedsOperator }
