package api

import (
	"encoding/json"

	"github.com/maasflow/maasflow/shared/domain"
)

// maxConcurrentOnboardings bounds the site throttle's limit: far above any
// rack controller's PXE capacity, low enough to catch a typo.
const maxConcurrentOnboardings = 10000

// fieldMaxConcurrent is the policy member of the site throttle.
const fieldMaxConcurrent = "max_concurrent_onboardings"

// checkThrottle checks the site throttle's limit: 0 (or absent) is no
// limit.
func checkThrottle(p domain.Policy, prefix string) error {
	if n := p.MaxConcurrentOnboardings; n != nil && (*n < 0 || *n > maxConcurrentOnboardings) {
		return fieldError(prefix+fieldMaxConcurrent, "must be between 0 (no limit) and %d", maxConcurrentOnboardings)
	}
	return nil
}

// refuseProfileThrottle refuses the site throttle in a profile's policy
// (whole or as a merge patch): the limit counts every onboarding of the
// site, whatever its profile, so only the site can set it.
func refuseProfileThrottle(raw json.RawMessage) error {
	if len(raw) == 0 || isNull(raw) {
		return nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return nil // the policy's own decoding reports it
	}
	if v, ok := members[fieldMaxConcurrent]; ok && !isNull(v) {
		return fieldError("policy."+fieldMaxConcurrent, "is a site policy: set it on the site")
	}
	return nil
}
