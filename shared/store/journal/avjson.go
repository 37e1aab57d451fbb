package journal

import (
	"fmt"

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
