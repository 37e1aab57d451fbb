package domain

import "time"

// DecommissionPolicy is the part of a site or profile policy the decommission
// paths read (requirements readiness §4.5). Every field is optional: nil inherits.
type DecommissionPolicy struct {
	// EraseMode is the erase asked of MAAS's release: none, plain, quick or
	// secure.
	EraseMode *string `json:"erase_mode,omitempty" dynamodbav:"erase_mode,omitempty"`
	// ReleaseFallback lets a decommission whose erase failed or hung
	// release again without erasing (and say so on the record) instead of
	// stopping for an operator.
	ReleaseFallback *bool `json:"release_fallback,omitempty" dynamodbav:"release_fallback,omitempty"`
	// EraseTimeoutSeconds bounds an erase: past it a machine still Disk
	// erasing counts as hung (MAAS sets no timeout of its own there).
	EraseTimeoutSeconds *int `json:"erase_timeout_seconds,omitempty" dynamodbav:"erase_timeout_seconds,omitempty"`
	// DrainTimeoutSeconds bounds the wait for the node's allocations to be
	// released.
	DrainTimeoutSeconds *int `json:"drain_timeout_seconds,omitempty" dynamodbav:"drain_timeout_seconds,omitempty"`
	// DeleteOnFull deletes the machine from MAAS at the end of a full
	// decommission; off leaves it Ready in MAAS.
	DeleteOnFull *bool `json:"delete_on_full,omitempty" dynamodbav:"delete_on_full,omitempty"`
	// MarkFixedBeforeRelease marks a Broken machine fixed before its
	// release. Off by default: MAAS releases straight from Broken
	// (RELEASABLE_STATUSES), and mark_fixed needs an admin key and clears
	// the mark someone else set.
	MarkFixedBeforeRelease *bool `json:"mark_fixed_before_release,omitempty" dynamodbav:"mark_fixed_before_release,omitempty"`
}

// EffectiveDecommissionPolicy is Decommission with every field resolved.
type EffectiveDecommissionPolicy struct {
	EraseMode           string `json:"erase_mode"`
	ReleaseFallback     bool   `json:"release_fallback"`
	EraseTimeoutSeconds int    `json:"erase_timeout_seconds"`
	DrainTimeoutSeconds int    `json:"drain_timeout_seconds"`
	DeleteOnFull        bool   `json:"delete_on_full"`
	// MarkFixedBeforeRelease: see DecommissionPolicy.
	MarkFixedBeforeRelease bool `json:"mark_fixed_before_release"`
}

// defaultDecommission erases securely (a tenant's data is at stake), never
// falls back to a release without erase unless a policy allows it, gives an
// erase two hours and a drain thirty minutes, and deletes the machine from
// MAAS on a full decommission.
func defaultDecommission() EffectiveDecommissionPolicy {
	return EffectiveDecommissionPolicy{
		EraseMode:           EraseSecure,
		ReleaseFallback:     false,
		EraseTimeoutSeconds: int((2 * time.Hour).Seconds()),
		DrainTimeoutSeconds: int((30 * time.Minute).Seconds()),
		DeleteOnFull:        true,
	}
}

func (p *EffectiveDecommissionPolicy) apply(layer DecommissionPolicy) {
	setString(&p.EraseMode, layer.EraseMode)
	setBool(&p.ReleaseFallback, layer.ReleaseFallback)
	setInt(&p.EraseTimeoutSeconds, layer.EraseTimeoutSeconds)
	setInt(&p.DrainTimeoutSeconds, layer.DrainTimeoutSeconds)
	setBool(&p.DeleteOnFull, layer.DeleteOnFull)
	setBool(&p.MarkFixedBeforeRelease, layer.MarkFixedBeforeRelease)
}

// EraseModes lists the erase modes a policy may name.
func EraseModes() []string { return []string{EraseNone, ErasePlain, EraseQuick, EraseSecure} }
