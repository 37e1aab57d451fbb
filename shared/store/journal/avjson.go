package journal

import (
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The journal writes items in DynamoDB's own JSON shape ({"S":"x"},
// {"M":{…}}), which the SDK does not expose for the v2 types.

func itemToJSON(item map[string]types.AttributeValue) (map[string]any, error) {
	out := make(map[string]any, len(item))
	for name, av := range item {
		v, err := avToJSON(av)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}

func avToJSON(av types.AttributeValue) (map[string]any, error) {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": v.Value}, nil
	case *types.AttributeValueMemberN:
		return map[string]any{"N": v.Value}, nil
	case *types.AttributeValueMemberB:
		return map[string]any{"B": v.Value}, nil
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}, nil
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": true}, nil
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": v.Value}, nil
	case *types.AttributeValueMemberNS:
		return map[string]any{"NS": v.Value}, nil
	case *types.AttributeValueMemberBS:
		return map[string]any{"BS": v.Value}, nil
	case *types.AttributeValueMemberL:
		l := make([]any, len(v.Value))
		for i, e := range v.Value {
			j, err := avToJSON(e)
			if err != nil {
				return nil, err
			}
			l[i] = j
		}
		return map[string]any{"L": l}, nil
	case *types.AttributeValueMemberM:
		m, err := itemToJSON(v.Value)
		if err != nil {
			return nil, err
		}
		return map[string]any{"M": m}, nil
	}
	return nil, fmt.Errorf("unsupported attribute value %T", av)
}

// taggedAV is one attribute value in DynamoDB JSON, decoded by a single
// json.Unmarshal of the whole record (replay's hot path); exactly one field
// is set in a well-formed value.
type taggedAV struct {
	S    *string              `json:"S"`
	N    *string              `json:"N"`
	B    []byte               `json:"B"`
	BOOL *bool                `json:"BOOL"`
	NULL *bool                `json:"NULL"`
	SS   []string             `json:"SS"`
	NS   []string             `json:"NS"`
	BS   [][]byte             `json:"BS"`
	L    []*taggedAV          `json:"L"`
	M    map[string]*taggedAV `json:"M"`
}

func (t *taggedAV) value() (types.AttributeValue, error) {
	if t == nil {
		return nil, fmt.Errorf("empty attribute value")
	}
	var out types.AttributeValue
	n := 0
	set := func(v types.AttributeValue) { out = v; n++ }
	if t.S != nil {
		set(&types.AttributeValueMemberS{Value: *t.S})
	}
	if t.N != nil {
		set(&types.AttributeValueMemberN{Value: *t.N})
	}
	if t.B != nil {
		set(&types.AttributeValueMemberB{Value: t.B})
	}
	if t.BOOL != nil {
		set(&types.AttributeValueMemberBOOL{Value: *t.BOOL})
	}
	if t.NULL != nil {
		set(&types.AttributeValueMemberNULL{Value: true})
	}
	if t.SS != nil {
		set(&types.AttributeValueMemberSS{Value: t.SS})
	}
	if t.NS != nil {
		set(&types.AttributeValueMemberNS{Value: t.NS})
	}
	if t.BS != nil {
		set(&types.AttributeValueMemberBS{Value: t.BS})
	}
	if t.L != nil {
		l := make([]types.AttributeValue, len(t.L))
		for i, e := range t.L {
			v, err := e.value()
			if err != nil {
				return nil, err
			}
			l[i] = v
		}
		set(&types.AttributeValueMemberL{Value: l})
	}
	if t.M != nil {
		m, err := taggedItem(t.M)
		if err != nil {
			return nil, err
		}
		set(&types.AttributeValueMemberM{Value: m})
	}
	if n != 1 {
		return nil, fmt.Errorf("want one type tag, got %d", n)
	}
	return out, nil
}

func taggedItem(raw map[string]*taggedAV) (map[string]types.AttributeValue, error) {
	item := make(map[string]types.AttributeValue, len(raw))
	for name, t := range raw {
		v, err := t.value()
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", name, err)
		}
		item[name] = v
	}
	return item, nil
}

// appendItem appends item as a DynamoDB JSON object, attributes in name
// order. It writes the same JSON as encoding/json would for avToJSON's
// maps, without building them: the journal encodes every write under its
// lock, so this is on every write's path.
func appendItem(b []byte, item map[string]types.AttributeValue) ([]byte, error) {
	b = append(b, '{')
	for i, name := range slices.Sorted(maps.Keys(item)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, name)
		b = append(b, ':')
		var err error
		if b, err = appendAV(b, item[name]); err != nil {
			return nil, fmt.Errorf("attribute %s: %w", name, err)
		}
	}
	return append(b, '}'), nil
}

func appendAV(b []byte, av types.AttributeValue) ([]byte, error) {
	tagged := func(tag string) []byte {
		b = append(b, `{"`...)
		b = append(b, tag...)
		return append(b, `":`...)
	}
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		b = appendString(tagged("S"), v.Value)
	case *types.AttributeValueMemberN:
		b = appendString(tagged("N"), v.Value)
	case *types.AttributeValueMemberB:
		b = appendBytes(tagged("B"), v.Value)
	case *types.AttributeValueMemberBOOL:
		b = strconv.AppendBool(tagged("BOOL"), v.Value)
	case *types.AttributeValueMemberNULL:
		b = append(tagged("NULL"), "true"...)
	case *types.AttributeValueMemberSS:
		b = appendStrings(tagged("SS"), v.Value)
	case *types.AttributeValueMemberNS:
		b = appendStrings(tagged("NS"), v.Value)
	case *types.AttributeValueMemberBS:
		b = append(tagged("BS"), '[')
		for i, e := range v.Value {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendBytes(b, e)
		}
		b = append(b, ']')
	case *types.AttributeValueMemberL:
		b = append(tagged("L"), '[')
		for i, e := range v.Value {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendAV(b, e); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	case *types.AttributeValueMemberM:
		var err error
		if b, err = appendItem(tagged("M"), v.Value); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unsupported attribute value %T", av)
	}
	return append(b, '}'), nil
}

func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

func appendBytes(b []byte, p []byte) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, p)
	return append(b, '"')
}

// appendString appends s as a JSON string: quotes, backslashes and control
// characters escaped, everything else as is.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
