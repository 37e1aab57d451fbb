package eventstest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/events"
)

// Recorder is an in-memory publisher. The zero value works; NewRecorder ties
// it to a test so that an invalid event also fails that test, even when the
// code under test swallows the publish error.
type Recorder struct {
	// TB, when set, gets an Errorf for every event that breaks its schema.
	TB testing.TB
	// Clock stamps event times; nil means the wall clock.
	Clock clock.Clock

	mu      sync.Mutex
	events  []events.Envelope
	failErr error
}

var _ interface {
	Publish(ctx context.Context, detailType string, detail any) error
} = (*Recorder)(nil)

// NewRecorder returns a Recorder that reports invalid events to tb.
func NewRecorder(tb testing.TB) *Recorder {
	tb.Helper()
	return &Recorder{TB: tb}
}

// Publish validates and records one event. It returns the error set by
// FailWith without recording anything, and the validation error (after
// reporting it to TB) for an invalid detail.
func (r *Recorder) Publish(ctx context.Context, detailType string, detail any) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("publish %s: %w", detailType, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failErr != nil {
		return r.failErr
	}
	raw, err := events.EncodeDetail(detailType, detail)
	if err != nil {
		if r.TB != nil {
			r.TB.Errorf("eventstest: invalid event: %v", err)
		}
		return err
	}
	now := clock.Real().Now()
	if r.Clock != nil {
		now = r.Clock.Now()
	}
	r.events = append(r.events, events.Envelope{
		ID:         fmt.Sprintf("evt-%06d", len(r.events)+1),
		Source:     events.Source,
		DetailType: detailType,
		Time:       now.UTC(),
		Detail:     raw,
	})
	return nil
}

// FailWith makes every later Publish return err (nil restores success), to
// test how callers handle a bus outage.
func (r *Recorder) FailWith(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failErr = err
}

// Events returns a copy of the recorded events, in publish order.
func (r *Recorder) Events() []events.Envelope {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]events.Envelope(nil), r.events...)
}

// DetailTypes returns the detail type of each recorded event, in order.
func (r *Recorder) DetailTypes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.events))
	for i, e := range r.events {
		out[i] = e.DetailType
	}
	return out
}

// OnboardingDetails decodes the details of the recorded events of one
// detail type, in order.
func (r *Recorder) OnboardingDetails(detailType string) ([]events.OnboardingDetail, error) {
	var out []events.OnboardingDetail
	for _, e := range r.Events() {
		if e.DetailType != detailType {
			continue
		}
		var d events.OnboardingDetail
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			return nil, fmt.Errorf("decode %s detail %s: %w", detailType, e.ID, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// Reset forgets the recorded events.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = nil
}
