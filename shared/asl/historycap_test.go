package asl

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHistoryCapacityFollowsTheLastExecution(t *testing.T) {
	r := &registered{sm: &StateMachine{root: &machine{states: map[string]*state{"A": {}, "B": {}, "C": {}}}}}
	assert.Equal(t, 2*3+8, r.historyCapacity(25000), "before any execution: two events per state and a few more")
	r.histLen.Store(130)
	assert.Equal(t, 130, r.historyCapacity(25000), "the last execution's length")
	assert.Equal(t, 100, r.historyCapacity(100), "never past the history limit")
	r.histLen.Store(20000)
	assert.Equal(t, 1024, r.historyCapacity(25000), "a long history does not make every execution reserve as much")
}
