package store

import (
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

// The direct decoders give what attributevalue gives, for the items the
// store writes and for items it does not.
func TestWatchDecodersMatchAttributevalue(t *testing.T) {
	// A field added to either record must be added to its decoder too.
	require.Equal(t, 10, reflect.TypeFor[domain.MachineWatch]().NumField(), "decodeMachineWatch reads every field")
	require.Equal(t, 3, reflect.TypeFor[domain.WatchCursor]().NumField(), "decodeWatchCursor reads every field")

	at := time.Date(2026, 11, 24, 5, 0, 0, 123456789, time.UTC)
	w := domain.MachineWatch{
		SiteID: "site-1", SystemID: "abc123", OnboardingID: "ob-1", Attempt: 2, Run: 3, Target: "deployed",
		TaskToken: "token-xyz", After: 4711, WakeAt: at, RegisteredAt: at.In(time.FixedZone("CET", 3600)),
	}
	item, err := marshalItem(w, machineWatchKey(w.SiteID, w.SystemID), entityMachineWtch, nil)
	require.NoError(t, err)
	c := domain.WatchCursor{SiteID: "site-1", After: 99, ListedAt: at}
	cursorItem, err := marshalItem(c, watchCursorKey(c.SiteID), entityWatchCursor, nil)
	require.NoError(t, err)

	odd := withAttr
	watchItems := map[string]map[string]types.AttributeValue{
		"as written":         item,
		"zero watch":         mustMarshal(t, domain.MachineWatch{}),
		"attribute missing":  odd(item, "target", nil),
		"null attribute":     odd(item, "target", &types.AttributeValueMemberNULL{Value: true}),
		"number as a string": odd(item, "after", &types.AttributeValueMemberS{Value: "5"}),
		"string as a number": odd(item, "target", &types.AttributeValueMemberN{Value: "5"}),
		"time as a number":   odd(item, "wake_at", &types.AttributeValueMemberN{Value: "1700000000"}),
		"bad time":           odd(item, "wake_at", &types.AttributeValueMemberS{Value: "yesterday"}),
		"decimal number":     odd(item, "attempt", &types.AttributeValueMemberN{Value: "2.5"}),
	}
	assertDecodesAsAttributevalue(t, decodeMachineWatch, watchItems)
	_, direct := readMachineWatch(item)
	assert.True(t, direct, "a watch as the store writes it is read directly")
	_, direct = readWatchCursor(cursorItem)
	assert.True(t, direct, "a cursor as the store writes it is read directly")
	got, err := decodeMachineWatch(item)
	require.NoError(t, err)
	assert.Equal(t, w.RegisteredAt.UnixNano(), got.RegisteredAt.UnixNano())
	assert.Equal(t, w.TaskToken, got.TaskToken)

	cursorItems := map[string]map[string]types.AttributeValue{
		"as written":     cursorItem,
		"null after":     odd(cursorItem, "after", &types.AttributeValueMemberNULL{Value: true}),
		"listed missing": odd(cursorItem, "listed_at", nil),
	}
	assertDecodesAsAttributevalue(t, decodeWatchCursor, cursorItems)
}

// assertDecodesAsAttributevalue checks that decode gives each item what
// attributevalue gives it, or fails where attributevalue fails.
func assertDecodesAsAttributevalue[T any](t *testing.T, decode func(map[string]types.AttributeValue) (T, error), items map[string]map[string]types.AttributeValue) {
	t.Helper()
	for name, item := range items {
		var want T
		wantErr := attributevalue.UnmarshalMap(item, &want)
		got, gotErr := decode(item)
		assert.Equal(t, wantErr != nil, gotErr != nil, name)
		if wantErr == nil {
			assert.Equal(t, want, got, name)
		}
	}
}

// withAttr is a copy of item with the attribute name set to v, or left
// out when v is nil.
func withAttr(item map[string]types.AttributeValue, name string, v types.AttributeValue) map[string]types.AttributeValue {
	out := maps.Clone(item)
	if v == nil {
		delete(out, name)
	} else {
		out[name] = v
	}
	return out
}

func mustMarshal(t *testing.T, v any) map[string]types.AttributeValue {
	t.Helper()
	item, err := attributevalue.MarshalMap(v)
	require.NoError(t, err)
	return item
}
