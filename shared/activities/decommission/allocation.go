package decommission

import (
	"errors"

	"github.com/maasflow/maasflow/shared/allocation"
)

// allocationError turns the allocation service's errors into activity
// errors.
func allocationError(err error) error {
	var unavailable *allocation.AllocationServiceUnavailableError
	var refused *allocation.AllocationServiceRefusedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &unavailable):
		return &AllocationUnavailableError{Op: unavailable.Op, Message: unavailable.Message}
	case errors.As(err, &refused):
		return &AllocationRefusedError{Op: refused.Op, Message: refused.Message}
	}
	return err
}
