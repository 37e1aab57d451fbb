package maas

import "github.com/maasflow/maasflow/shared/domain"

// Each answer class says how a workflow treats it. A MAAS that is down,
// slow or unreachable may come back by itself; everything else is an
// answer that repeating the call will not change, and since MAAS may hold
// a half-done machine an operator looks at it.
var (
	_ domain.ClassifiedError = (*MAASBadRequestError)(nil)
	_ domain.ClassifiedError = (*MAASUnauthorizedError)(nil)
	_ domain.ClassifiedError = (*MAASForbiddenError)(nil)
	_ domain.ClassifiedError = (*MAASNotFoundError)(nil)
	_ domain.ClassifiedError = (*MAASConflictError)(nil)
	_ domain.ClassifiedError = (*MAASUnavailableError)(nil)
	_ domain.ClassifiedError = (*MAASTimeoutError)(nil)
	_ domain.ClassifiedError = (*MAASTransportError)(nil)
	_ domain.ClassifiedError = (*MAASUnexpectedResponseError)(nil)
)

// Class is retryable: 5xx, 429 and MAAS's database-conflict 409.
func (*MAASUnavailableError) Class() domain.ErrorClass { return domain.ErrorRetryable }

// Class is retryable: MAAS did not answer before the call's deadline.
func (*MAASTimeoutError) Class() domain.ErrorClass { return domain.ErrorRetryable }

// Class is retryable: the call never reached MAAS or lost its answer.
func (*MAASTransportError) Class() domain.ErrorClass { return domain.ErrorRetryable }

// Class needs an operator: MAAS refused the parameters or the state.
func (*MAASBadRequestError) Class() domain.ErrorClass { return domain.ErrorNeedsOperator }

// Class needs an operator: the site's API key is unknown or revoked.
func (*MAASUnauthorizedError) Class() domain.ErrorClass { return domain.ErrorNeedsOperator }

// Class needs an operator: locked, not the owner, not an admin.
func (*MAASForbiddenError) Class() domain.ErrorClass { return domain.ErrorNeedsOperator }

// Class needs an operator: the machine or interface is gone.
func (*MAASNotFoundError) Class() domain.ErrorClass { return domain.ErrorNeedsOperator }

// Class needs an operator: the machine is in a state the operation refuses.
func (*MAASConflictError) Class() domain.ErrorClass { return domain.ErrorNeedsOperator }

// Class needs an operator: a wrong URL, a proxy page, an API MAAS does not speak.
func (*MAASUnexpectedResponseError) Class() domain.ErrorClass { return domain.ErrorNeedsOperator }
