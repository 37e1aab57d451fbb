package onboarding

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryExecutionTakesASiteSlotFirst: the onboarding state machine
// starts at TakeSiteSlot, and without the granted branch of SlotGranted no
// state but the slot loop and the failed path can be reached. So every
// execution, a recovery entering at a later stage too, holds a slot before
// the guardrails and anything that touches MAAS.
func TestEveryExecutionTakesASiteSlotFirst(t *testing.T) {
	raw, states := loadASL(t)
	var def struct {
		StartAt string `json:"StartAt"`
		States  map[string]struct {
			Choices []struct {
				Variable      string `json:"Variable"`
				BooleanEquals *bool  `json:"BooleanEquals"`
				Next          string `json:"Next"`
			} `json:"Choices"`
		} `json:"States"`
	}
	require.NoError(t, json.Unmarshal(raw, &def))
	assert.Equal(t, "TakeSiteSlot", def.StartAt)
	gate := def.States["SlotGranted"].Choices
	require.Len(t, gate, 1)
	assert.Equal(t, "$.slot.granted", gate[0].Variable)
	require.NotNil(t, gate[0].BooleanEquals)
	assert.True(t, *gate[0].BooleanEquals)
	assert.Equal(t, "ValidateOnboarding", gate[0].Next)

	reached := map[string]bool{}
	var walk func(name string)
	walk = func(name string) {
		if name == "" || reached[name] {
			return
		}
		reached[name] = true
		st := states[name]
		walk(st.Next)
		walk(st.Default)
		for _, c := range st.Catch {
			walk(c.Next)
		}
		if name == "SlotGranted" {
			return // the granted branch is the only way on
		}
		for _, c := range st.Choices {
			walk(c.Next)
		}
	}
	walk(def.StartAt)
	var got []string
	for name := range reached {
		got = append(got, name)
	}
	sort.Strings(got)
	assert.Equal(t, []string{"OnboardingFailed", "RecordFailure", "SlotGranted", "TakeSiteSlot", "WaitForSiteSlot"}, got)
}
