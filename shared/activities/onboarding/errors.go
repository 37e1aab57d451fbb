package onboarding

import (
	"maps"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
)

// vocabulary holds one value of every error type only the onboarding's
// activities declare; the shared ones are the parent package's.
var vocabulary = []domain.ClassifiedError{
	(*HardwareMismatchError)(nil),
	(*MachineDesignError)(nil),
	(*AdoptionRefusedError)(nil),
}

// errorRoutes is every error name an onboarding activity can return, with
// its class: the shared vocabulary and the onboarding's own. The contract
// tests check it against the declared types and the ASL.
var errorRoutes = activities.ErrorRoutes(vocabulary...)

// ErrorRoutes is every error name an onboarding activity can return, with
// its class (a copy of errorRoutes).
func ErrorRoutes() map[string]domain.ErrorClass { return maps.Clone(errorRoutes) }
