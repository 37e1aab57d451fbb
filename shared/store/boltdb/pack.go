package boltdb

import (
	"encoding/binary"
	"errors"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Items are stored packed: each one is a single byte slice, the value of
// its key in the table's bucket. A read copies the value out of the
// database's page once and unpacks the item it returns from that copy;
// its strings and binaries point into the copy, which nothing writes
// again, so they need no copy of their own.
//
// The format: an item is a uvarint count of attributes, then per attribute
// its name (uvarint length, bytes) and its value. A value is a tag byte,
// then: S, N and B a uvarint length and the bytes; BOOL and NULL one byte;
// SS, NS and BS a uvarint count and each element as S; L a count and each
// value; M an item.

const (
	tagS    = 'S'
	tagN    = 'N'
	tagB    = 'B'
	tagBOOL = 'T'
	tagNULL = '0'
	tagSS   = 's'
	tagNS   = 'n'
	tagBS   = 'b'
	tagL    = 'L'
	tagM    = 'M'
)

var errUnpack = errors.New("boltdb: corrupt packed item")

// pack encodes item; an attribute value of a kind DynamoDB does not have
// is a ValidationException.
func pack(item map[string]types.AttributeValue) ([]byte, error) {
	return appendItem(make([]byte, 0, 64+itemSize(item)+4*len(item)), item)
}

func appendItem(b []byte, item map[string]types.AttributeValue) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(item)))
	for name, v := range item {
		b = appendBytes(b, name)
		var err error
		if b, err = appendValue(b, v); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func appendBytes[T string | []byte](b []byte, s T) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendValue(b []byte, v types.AttributeValue) ([]byte, error) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return appendBytes(append(b, tagS), v.Value), nil
	case *types.AttributeValueMemberN:
		return appendBytes(append(b, tagN), v.Value), nil
	case *types.AttributeValueMemberB:
		return appendBytes(append(b, tagB), v.Value), nil
	case *types.AttributeValueMemberBOOL:
		return append(b, tagBOOL, boolByte(v.Value)), nil
	case *types.AttributeValueMemberNULL:
		return append(b, tagNULL, boolByte(v.Value)), nil
	case *types.AttributeValueMemberSS:
		return appendSet(append(b, tagSS), v.Value), nil
	case *types.AttributeValueMemberNS:
		return appendSet(append(b, tagNS), v.Value), nil
	case *types.AttributeValueMemberBS:
		return appendSet(append(b, tagBS), v.Value), nil
	case *types.AttributeValueMemberL:
		b = binary.AppendUvarint(append(b, tagL), uint64(len(v.Value)))
		for _, e := range v.Value {
			var err error
			if b, err = appendValue(b, e); err != nil {
				return nil, err
			}
		}
		return b, nil
	case *types.AttributeValueMemberM:
		return appendItem(append(b, tagM), v.Value)
	}
	return nil, validation("unsupported attribute value type %T", v)
}

func appendSet[T string | []byte](b []byte, set []T) []byte {
	b = binary.AppendUvarint(b, uint64(len(set)))
	for _, e := range set {
		b = appendBytes(b, e)
	}
	return b
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// unpack decodes a packed item; nil stays nil (an absent item). The
// item's strings share p, which the caller must own (a copy of the
// database page, never the page itself). A value pack did not write is
// errUnpack: the file was damaged.
func unpack(p []byte) (map[string]types.AttributeValue, error) {
	if p == nil {
		return nil, nil //nolint:nilnil // an absent item is nil, as GetItem answers it
	}
	r := reader{b: p}
	item := r.item()
	if r.err != nil || r.i != len(p) {
		return nil, errUnpack
	}
	return item, nil
}

type reader struct {
	b   []byte
	i   int
	err error
}

func (r *reader) uvarint() int {
	v, n := binary.Uvarint(r.b[r.i:])
	if n <= 0 || v > uint64(len(r.b)) {
		r.err = errUnpack
		return 0
	}
	r.i += n
	return int(v) //nolint:gosec // G115: bounded by the slice's length just above
}

// bytes returns the next length-prefixed bytes, sharing the packed slice.
func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil || r.i+n > len(r.b) {
		r.err = errUnpack
		return nil
	}
	s := r.b[r.i : r.i+n : r.i+n]
	r.i += n
	return s
}

// str returns the next length-prefixed string without copying it: the
// packed slice is never written again.
func (r *reader) str() string {
	s := r.bytes()
	if len(s) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(s), len(s)) //nolint:gosec // G103: the packed slice is never written after pack returns it
}

func (r *reader) item() map[string]types.AttributeValue {
	n := r.uvarint()
	item := make(map[string]types.AttributeValue, n)
	for range n {
		if r.err != nil {
			return nil
		}
		name := r.str()
		item[name] = r.value()
	}
	return item
}

func (r *reader) value() types.AttributeValue {
	if r.err != nil || r.i >= len(r.b) {
		r.err = errUnpack
		return nil
	}
	tag := r.b[r.i]
	r.i++
	switch tag {
	case tagS:
		return &types.AttributeValueMemberS{Value: r.str()}
	case tagN:
		return &types.AttributeValueMemberN{Value: r.str()}
	case tagB:
		return &types.AttributeValueMemberB{Value: r.bytes()}
	case tagBOOL, tagNULL:
		if r.i >= len(r.b) {
			r.err = errUnpack
			return nil
		}
		v := r.b[r.i] == 1
		r.i++
		if tag == tagBOOL {
			return &types.AttributeValueMemberBOOL{Value: v}
		}
		return &types.AttributeValueMemberNULL{Value: v}
	case tagSS, tagNS:
		set := make([]string, r.uvarint())
		for i := range set {
			set[i] = r.str()
		}
		if tag == tagSS {
			return &types.AttributeValueMemberSS{Value: set}
		}
		return &types.AttributeValueMemberNS{Value: set}
	case tagBS:
		set := make([][]byte, r.uvarint())
		for i := range set {
			set[i] = r.bytes()
		}
		return &types.AttributeValueMemberBS{Value: set}
	case tagL:
		l := make([]types.AttributeValue, r.uvarint())
		for i := range l {
			l[i] = r.value()
		}
		return &types.AttributeValueMemberL{Value: l}
	case tagM:
		return &types.AttributeValueMemberM{Value: r.item()}
	}
	r.err = errUnpack
	return nil
}
