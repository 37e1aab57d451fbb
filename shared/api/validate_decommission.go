package api

import (
	"slices"
	"strings"

	"github.com/maasflow/maasflow/shared/domain"
)

// Bounds of the decommission policy's waits: an erase of large disks can
// take many hours, a drain should not.
const (
	minEraseSeconds = 300
	maxEraseSeconds = 3 * 24 * 3600
	maxDrainSeconds = 24 * 3600
)

// validateDecommissionPolicy checks the decommission fields of a policy.
func validateDecommissionPolicy(p domain.DecommissionPolicy, prefix string) error {
	if p.EraseMode != nil && !slices.Contains(domain.EraseModes(), *p.EraseMode) {
		return fieldError(prefix+"erase_mode", "must be one of %s", strings.Join(domain.EraseModes(), ", "))
	}
	if p.EraseTimeoutSeconds != nil && (*p.EraseTimeoutSeconds < minEraseSeconds || *p.EraseTimeoutSeconds > maxEraseSeconds) {
		return fieldError(prefix+"erase_timeout_seconds", "must be between %d and %d", minEraseSeconds, maxEraseSeconds)
	}
	if p.DrainTimeoutSeconds != nil && (*p.DrainTimeoutSeconds < minWaitSeconds || *p.DrainTimeoutSeconds > maxDrainSeconds) {
		return fieldError(prefix+"drain_timeout_seconds", "must be between %d and %d", minWaitSeconds, maxDrainSeconds)
	}
	return nil
}
