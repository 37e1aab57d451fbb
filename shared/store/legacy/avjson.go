package legacy

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

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
