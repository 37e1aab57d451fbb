package store

import (
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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
	for _, ev := range rows {
		want, err := marshalItem(ev, key{pkOnboarding + ev.OnboardingID, skEventPrefix + ev.Seq}, "onboarding_event", nil)
		require.NoError(t, err)
		assert.Equal(t, want, eventItem(ev), "%+v", ev)
	}
}

// A timeline row reads back as attributevalue reads it, written by
// eventItem or holding something eventItem never writes.
func TestDecodeTimelineEntryMatchesAttributevalue(t *testing.T) {
	at := time.Date(2026, 11, 24, 5, 0, 0, 120000000, time.UTC)
	written := eventItem(domain.TimelineEntry{OnboardingID: "ob-1", Seq: "s2", Time: at, Attempt: 2, Kind: "stage_exited",
		Stage: "deploying", Outcome: "ok", Detail: "d", Source: "maas", MAASEventID: 4711})
	empty := eventItem(domain.TimelineEntry{})
	_, direct := readTimelineEntry(written)
	assert.True(t, direct, "a row as eventItem writes it is read directly")

	with := func(name string, v types.AttributeValue) map[string]types.AttributeValue {
		return withAttr(written, name, v)
	}
	items := map[string]map[string]types.AttributeValue{
		"written":          written,
		"empty row":        empty,
		"null detail":      with("detail", &types.AttributeValueMemberNULL{Value: true}),
		"attempt a string": with("attempt", &types.AttributeValueMemberS{Value: "2"}),
		"id as a string":   with("maas_event_id", &types.AttributeValueMemberS{Value: "4711"}),
		"bad time":         with("time", &types.AttributeValueMemberS{Value: "now"}),
	}
	assertDecodesAsAttributevalue(t, decodeTimelineEntry, items)
}
