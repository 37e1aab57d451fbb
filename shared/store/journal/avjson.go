package journal

import (
	"encoding/json"
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

func itemFromJSON(raw map[string]json.RawMessage) (map[string]types.AttributeValue, error) {
	item := make(map[string]types.AttributeValue, len(raw))
	for name, r := range raw {
		av, err := avFromJSON(r)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", name, err)
		}
		item[name] = av
	}
	return item, nil
}

func avFromJSON(r json.RawMessage) (types.AttributeValue, error) {
	var tagged map[string]json.RawMessage
	if err := json.Unmarshal(r, &tagged); err != nil {
		return nil, err
	}
	if len(tagged) != 1 {
		return nil, fmt.Errorf("want one type tag, got %d", len(tagged))
	}
	for tag, v := range tagged {
		switch tag {
		case "S":
			var x string
			err := json.Unmarshal(v, &x)
			return &types.AttributeValueMemberS{Value: x}, err
		case "N":
			var x string
			err := json.Unmarshal(v, &x)
			return &types.AttributeValueMemberN{Value: x}, err
		case "B":
			var x []byte
			err := json.Unmarshal(v, &x)
			return &types.AttributeValueMemberB{Value: x}, err
		case "BOOL":
			var x bool
			err := json.Unmarshal(v, &x)
			return &types.AttributeValueMemberBOOL{Value: x}, err
		case "NULL":
			return &types.AttributeValueMemberNULL{Value: true}, nil
		case "SS":
			var x []string
			err := json.Unmarshal(v, &x)
			return &types.AttributeValueMemberSS{Value: x}, err
		case "NS":
			var x []string
			err := json.Unmarshal(v, &x)
			return &types.AttributeValueMemberNS{Value: x}, err
		case "BS":
			var x [][]byte
			err := json.Unmarshal(v, &x)
			return &types.AttributeValueMemberBS{Value: x}, err
		case "L":
			var raw []json.RawMessage
			if err := json.Unmarshal(v, &raw); err != nil {
				return nil, err
			}
			l := make([]types.AttributeValue, len(raw))
			for i, e := range raw {
				av, err := avFromJSON(e)
				if err != nil {
					return nil, err
				}
				l[i] = av
			}
			return &types.AttributeValueMemberL{Value: l}, nil
		case "M":
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(v, &raw); err != nil {
				return nil, err
			}
			m, err := itemFromJSON(raw)
			if err != nil {
				return nil, err
			}
			return &types.AttributeValueMemberM{Value: m}, nil
		default:
			return nil, fmt.Errorf("unknown type tag %q", tag)
		}
	}
	return nil, fmt.Errorf("empty attribute value")
}
