package store

import (
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/maasflow/maasflow/shared/domain"
)

// The watcher lists every watch and cursor on each of its rounds, twice a
// minute, and attributevalue's reflection was as much of a round's CPU as
// the MAAS query it makes. These decoders read the attributes the store
// writes for these two records directly; an item holding anything else
// (a NULL, a number stored as a string) is decoded by attributevalue as
// before, so every item decodes to the same value either way.

// decodeDirect decodes item with read, a direct reader of the attributes
// the store writes, or with attributevalue when read leaves the item to it
// (ok false: an attribute of another kind): to the same value either way.
func decodeDirect[T any](item map[string]types.AttributeValue, read func(map[string]types.AttributeValue) (T, bool)) (T, error) {
	if v, ok := read(item); ok {
		return v, nil
	}
	var v T
	err := attributevalue.UnmarshalMap(item, &v)
	return v, err
}

// decodeMachineWatch decodes a machine watch item.
func decodeMachineWatch(item map[string]types.AttributeValue) (domain.MachineWatch, error) {
	return decodeDirect(item, readMachineWatch)
}

// readMachineWatch is decodeMachineWatch's direct path; ok is false for
// an item it leaves to attributevalue.
func readMachineWatch(item map[string]types.AttributeValue) (domain.MachineWatch, bool) {
	r := attrReader{item: item, ok: true}
	w := domain.MachineWatch{
		SiteID:       r.str("site_id"),
		SystemID:     r.str("system_id"),
		OnboardingID: r.str("onboarding_id"),
		Attempt:      r.int("attempt"),
		Run:          r.int("run"),
		Target:       r.str("target"),
		TaskToken:    domain.Secret(r.str("task_token")),
		After:        r.int64("after"),
		WakeAt:       r.time("wake_at"),
		RegisteredAt: r.time("registered_at"),
	}
	return w, r.ok
}

// decodeWatchCursor decodes a site's watch cursor item.
func decodeWatchCursor(item map[string]types.AttributeValue) (domain.WatchCursor, error) {
	return decodeDirect(item, readWatchCursor)
}

// readWatchCursor is decodeWatchCursor's direct path.
func readWatchCursor(item map[string]types.AttributeValue) (domain.WatchCursor, bool) {
	r := attrReader{item: item, ok: true}
	c := domain.WatchCursor{
		SiteID:   r.str("site_id"),
		After:    r.int64("after"),
		ListedAt: r.time("listed_at"),
	}
	return c, r.ok
}

// attrReader reads an item's attributes as attributevalue decodes them
// into Go strings, integers and times (RFC 3339 strings). ok turns false
// at the first attribute of another kind. The timeline's rows are read
// with it too (decodeTimelineEntry).
type attrReader struct {
	item map[string]types.AttributeValue
	ok   bool
}

func (r *attrReader) str(name string) string {
	switch v := r.item[name].(type) {
	case nil:
		return ""
	case *types.AttributeValueMemberS:
		return v.Value
	default:
		r.ok = false
		return ""
	}
}

func (r *attrReader) int64(name string) int64 {
	switch v := r.item[name].(type) {
	case nil:
		return 0
	case *types.AttributeValueMemberN:
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			r.ok = false
		}
		return n
	default:
		r.ok = false
		return 0
	}
}

func (r *attrReader) int(name string) int {
	n := r.int64(name)
	if int64(int(n)) != n {
		r.ok = false
	}
	return int(n)
}

func (r *attrReader) time(name string) time.Time {
	switch v := r.item[name].(type) {
	case nil:
		return time.Time{}
	case *types.AttributeValueMemberS:
		// attributevalue's default for a time held as a string.
		t, err := time.Parse(time.RFC3339, v.Value)
		if err != nil {
			r.ok = false
		}
		return t
	default:
		r.ok = false
		return time.Time{}
	}
}
