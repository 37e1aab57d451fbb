package boltdb

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
)

// Numbers compare by value, integers and decimals alike.
func TestOrderNumbers(t *testing.T) {
	n := func(s string) types.AttributeValue { return &types.AttributeValueMemberN{Value: s} }
	tests := []struct {
		l, r string
		want int
	}{
		{"1", "2", -1}, {"10", "9", 1}, {"7", "7", 0}, {"-3", "2", -1}, {"+4", "4", 0}, {"007", "7", 0},
		{"1", "1.0", 0}, {"1.5", "2", -1}, {"2.50", "2.5", 0},
		{"9223372036854775808", "9223372036854775807", 1}, {"-9223372036854775809", "0", -1},
	}
	for _, tc := range tests {
		got, ok := order(n(tc.l), n(tc.r))
		assert.True(t, ok, "%s vs %s", tc.l, tc.r)
		assert.Equal(t, tc.want, got, "%s vs %s", tc.l, tc.r)
	}
	_, ok := order(n("x"), n("1"))
	assert.False(t, ok, "not a number")
}
