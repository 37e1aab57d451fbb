package clock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestScaledRunsFaster(t *testing.T) {
	c := Scaled(1000)
	start := c.Now()
	tm := c.NewTimer(10 * time.Second) // 10ms of wall time
	fired := <-tm.Chan()
	assert.GreaterOrEqual(t, fired.Sub(start), 10*time.Second)
}

func TestScaledFactorOneIsReal(t *testing.T) {
	_, isScaled := Scaled(1).(*scaled)
	assert.False(t, isScaled)
}
