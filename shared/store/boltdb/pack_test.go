package boltdb

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every kind of attribute value survives packing, empty ones included.
func TestPackRoundTrip(t *testing.T) {
	item := map[string]types.AttributeValue{
		"s": &types.AttributeValueMemberS{Value: "onboarding é"}, "empty": &types.AttributeValueMemberS{Value: ""},
		"n":    &types.AttributeValueMemberN{Value: "-12.5e3"},
		"b":    &types.AttributeValueMemberB{Value: []byte{0, 1, 255}},
		"t":    &types.AttributeValueMemberBOOL{Value: true},
		"f":    &types.AttributeValueMemberBOOL{Value: false},
		"null": &types.AttributeValueMemberNULL{Value: true},
		"ss":   &types.AttributeValueMemberSS{Value: []string{"a", "", "c"}},
		"ns":   &types.AttributeValueMemberNS{Value: []string{"1", "2"}},
		"bs":   &types.AttributeValueMemberBS{Value: [][]byte{{1}, {}}},
		"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{
			&types.AttributeValueMemberS{Value: "x"}, &types.AttributeValueMemberL{Value: []types.AttributeValue{}},
		}},
		"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"inner": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}},
			"n":     &types.AttributeValueMemberN{Value: "7"},
		}},
	}
	p, err := pack(item)
	require.NoError(t, err)
	assert.Equal(t, item, mustUnpack(t, p))
	assert.Nil(t, mustUnpack(t, nil), "an absent item stays absent")

	empty, err := pack(map[string]types.AttributeValue{})
	require.NoError(t, err)
	assert.Equal(t, map[string]types.AttributeValue{}, mustUnpack(t, empty))
}

// A stored item does not change when the caller reuses what it wrote, or
// what it read.
func TestPackedItemsAreTheirOwn(t *testing.T) {
	b := []byte("abc")
	item := map[string]types.AttributeValue{"b": &types.AttributeValueMemberB{Value: b}}
	p, err := pack(item)
	require.NoError(t, err)
	b[0] = 'X'
	got := mustUnpack(t, p)
	assert.Equal(t, []byte("abc"), got["b"].(*types.AttributeValueMemberB).Value) //nolint:forcetypeassert // packed as B
	got["b"] = &types.AttributeValueMemberS{Value: "changed"}
	assert.Equal(t, []byte("abc"), mustUnpack(t, p)["b"].(*types.AttributeValueMemberB).Value) //nolint:forcetypeassert // packed as B
}

func TestPackRefusesAnUnknownValue(t *testing.T) {
	_, err := pack(map[string]types.AttributeValue{"x": &types.UnknownUnionMember{Tag: "Z"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unsupported attribute value")
}

func TestUnpackRefusesACorruptItem(t *testing.T) {
	p, err := pack(map[string]types.AttributeValue{"s": &types.AttributeValueMemberS{Value: "value"}})
	require.NoError(t, err)
	_, err = unpack(p[:len(p)-2])
	assert.ErrorIs(t, err, errUnpack)
}

func mustUnpack(t *testing.T, p []byte) map[string]types.AttributeValue {
	t.Helper()
	item, err := unpack(p)
	require.NoError(t, err)
	return item
}
