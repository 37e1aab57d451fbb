package onboarding

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSlotWaitIsBounded(t *testing.T) {
	assert.Equal(t, 15, slotWait(1))
	assert.Equal(t, 15, slotWait(0), "never shorter than a step")
	assert.Equal(t, 45, slotWait(3))
	assert.Equal(t, 300, slotWait(500), "a long queue asks every five minutes")
}
