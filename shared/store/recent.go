package store

import (
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// recentItems remembers the items this Store read last, so that the
// read-modify-write of an UpdateX that follows a GetX of the same record
// (an activity reads the onboarding, then moves it to its stage) can skip
// its read. It is only ever a guess: the write is conditional on the
// version read, so a stale item costs a failed condition and a fresh read,
// never a lost update.
type recentItems struct {
	mu    sync.Mutex
	items map[key]map[string]types.AttributeValue
}

// recentCapacity bounds the memory: past it the oldest half is not
// tracked, everything is simply dropped.
const recentCapacity = 1024

func (r *recentItems) put(k key, item map[string]types.AttributeValue) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.items == nil || len(r.items) >= recentCapacity {
		// Not sized for the capacity: a Store that guesses for a few
		// records at a time (an activity's, the enrollment API's) would pay
		// for a thousand slots it never fills, on every fresh start.
		r.items = map[key]map[string]types.AttributeValue{}
	}
	r.items[k] = item
}

// take returns and forgets the item under k: one guess per read.
func (r *recentItems) take(k key) (map[string]types.AttributeValue, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	item, ok := r.items[k]
	delete(r.items, k)
	return item, ok
}
