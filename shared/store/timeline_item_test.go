package store

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

// A timeline row's item is exactly the one marshalItem builds.
func TestEventItemMatchesMarshalItem(t *testing.T) {
	// A field added to the row must be added to eventItem too.
	require.Equal(t, 10, reflect.TypeFor[domain.TimelineEntry]().NumField(), "eventItem writes every field")
	at := time.Date(2026, 11, 24, 5, 0, 0, 120000000, time.UTC)
	rows := []domain.TimelineEntry{
		{},
		{OnboardingID: "ob-1", Seq: "s1", Time: at, Attempt: 1, Kind: "stage_entered", Stage: "commissioning"},
		{OnboardingID: "ob-1", Seq: "s2", Time: at.In(time.FixedZone("X", -7200)), Attempt: -3, Kind: "stage_exited",
			Stage: "deploying", Outcome: "ok", Detail: "a \"detail\" é", Source: "maas", MAASEventID: 4711},
		{OnboardingID: "ob-2", Seq: "s3", Time: at, Kind: "maas_event", MAASEventID: -1},
	}
	s := &Store{}
	for _, ev := range rows {
		want, err := marshalItem(ev, key{pkOnboarding + ev.OnboardingID, skEventPrefix + ev.Seq}, "onboarding_event", nil)
		require.NoError(t, err)
		got, err := s.eventItem(ev)
		require.NoError(t, err)
		assert.Equal(t, want, got, "%+v", ev)
	}
}
