package stack

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

// The account and region the lane "deploys" to.
const (
	laneRegion  = "us-east-1"
	laneAccount = "111122223333"
	laneStackID = "arn:aws:cloudformation:us-east-1:111122223333:stack/maasflow-dev/6a1b2c3d-0000-4000-8000-1234567890ab"
)

// template is a synthesized CloudFormation template.
type template struct {
	Resources  map[string]*resource `json:"Resources"`
	Parameters map[string]any       `json:"Parameters"`
}

type resource struct {
	Type       string         `json:"Type"`
	Properties map[string]any `json:"Properties"`
	Metadata   map[string]any `json:"Metadata"`
}

func loadTemplate(path string) (*template, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var t template
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &t, nil
}

// ofType returns the logical IDs of the resources of one type, sorted.
func (t *template) ofType(typ string) []string {
	var ids []string
	for id, r := range t.Resources {
		if r.Type == typ {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// resolver evaluates the intrinsic functions CloudFormation would, with the
// physical names and ARNs a deployment of the template would get.
type resolver struct {
	t *template
	// params are the values passed for the template's parameters.
	params map[string]any
	// apiEndpoint is the HTTP API's endpoint (the lane's API Gateway front).
	apiEndpoint string
}

func (r *resolver) pseudo(name string) (any, bool) {
	switch name {
	case "AWS::Region":
		return laneRegion, true
	case "AWS::AccountId":
		return laneAccount, true
	case "AWS::Partition":
		return "aws", true
	case "AWS::URLSuffix":
		return "amazonaws.com", true
	case "AWS::StackId":
		return laneStackID, true
	case "AWS::StackName":
		return "maasflow-dev", true
	case "AWS::NoValue":
		return nil, true
	}
	return nil, false
}

func (r *resolver) prop(id, key string) string {
	res := r.t.Resources[id]
	if res == nil {
		return ""
	}
	v, err := r.resolve(res.Properties[key])
	if err != nil {
		return ""
	}
	s, _ := v.(string)
	return s
}

// ref is what Ref returns for a resource.
func (r *resolver) ref(id string) (string, error) {
	res := r.t.Resources[id]
	if res == nil {
		return "", fmt.Errorf("Ref to unknown resource %s", id)
	}
	switch res.Type {
	case "AWS::DynamoDB::Table":
		return r.named(id, "TableName"), nil
	case "AWS::Events::EventBus":
		return r.named(id, "Name"), nil
	case "AWS::Lambda::Function":
		return r.named(id, "FunctionName"), nil
	case "AWS::StepFunctions::StateMachine":
		return r.getAtt(id, "Arn")
	case "AWS::IAM::Role":
		return r.named(id, "RoleName"), nil
	case "AWS::Logs::LogGroup":
		return r.named(id, "LogGroupName"), nil
	case "AWS::SQS::Queue":
		return fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", laneRegion, laneAccount, r.named(id, "QueueName")), nil
	}
	return id, nil
}

func (r *resolver) named(id, key string) string {
	if n := r.prop(id, key); n != "" {
		return n
	}
	return "maasflow-dev-" + id
}

func (r *resolver) getAtt(id, attr string) (string, error) {
	res := r.t.Resources[id]
	if res == nil {
		return "", fmt.Errorf("Fn::GetAtt of unknown resource %s", id)
	}
	name := func(key string) string { return r.named(id, key) }
	switch res.Type + "." + attr {
	case "AWS::DynamoDB::Table.Arn":
		return fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s", laneRegion, laneAccount, name("TableName")), nil
	case "AWS::Events::EventBus.Arn":
		return fmt.Sprintf("arn:aws:events:%s:%s:event-bus/%s", laneRegion, laneAccount, name("Name")), nil
	case "AWS::Events::EventBus.Name":
		return name("Name"), nil
	case "AWS::Lambda::Function.Arn":
		return functionARN(name("FunctionName")), nil
	case "AWS::StepFunctions::StateMachine.Arn":
		return fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:%s", laneRegion, laneAccount, name("StateMachineName")), nil
	case "AWS::StepFunctions::StateMachine.Name":
		return name("StateMachineName"), nil
	case "AWS::IAM::Role.Arn":
		return fmt.Sprintf("arn:aws:iam::%s:role/%s", laneAccount, name("RoleName")), nil
	case "AWS::Logs::LogGroup.Arn":
		return fmt.Sprintf("arn:aws:logs:%s:%s:log-group:%s:*", laneRegion, laneAccount, name("LogGroupName")), nil
	case "AWS::ApiGatewayV2::Api.ApiEndpoint":
		return r.apiEndpoint, nil
	case "AWS::SQS::Queue.Arn":
		return fmt.Sprintf("arn:aws:sqs:%s:%s:%s", laneRegion, laneAccount, name("QueueName")), nil
	case "AWS::SQS::Queue.QueueName":
		return name("QueueName"), nil
	case "AWS::SNS::Topic.TopicArn":
		return fmt.Sprintf("arn:aws:sns:%s:%s:%s", laneRegion, laneAccount, id), nil
	case "AWS::Lambda::Url.FunctionUrl":
		return fmt.Sprintf("https://%s.lambda-url.%s.on.aws/", strings.ToLower(id), laneRegion), nil
	}
	return fmt.Sprintf("arn:aws:lane:%s:%s:%s/%s", laneRegion, laneAccount, id, attr), nil
}

func functionARN(name string) string {
	return fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", laneRegion, laneAccount, name)
}

// resolve evaluates v's intrinsic functions.
func (r *resolver) resolve(v any) (any, error) {
	switch x := v.(type) {
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			rv, err := r.resolve(e)
			if err != nil {
				return nil, err
			}
			out = append(out, rv)
		}
		return out, nil
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				if k == "Ref" || strings.HasPrefix(k, "Fn::") {
					return r.intrinsic(k, arg)
				}
			}
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			rv, err := r.resolve(e)
			if err != nil {
				return nil, err
			}
			out[k] = rv
		}
		return out, nil
	}
	return v, nil
}

func (r *resolver) str(v any) (string, error) {
	rv, err := r.resolve(v)
	if err != nil {
		return "", err
	}
	s, ok := rv.(string)
	if !ok {
		return "", fmt.Errorf("want a string, got %T", rv)
	}
	return s, nil
}

func (r *resolver) intrinsic(fn string, arg any) (any, error) {
	switch fn {
	case "Ref":
		name, _ := arg.(string)
		if v, ok := r.pseudo(name); ok {
			return v, nil
		}
		if _, ok := r.t.Parameters[name]; ok {
			v, ok := r.params[name]
			if !ok {
				return nil, fmt.Errorf("no value passed for parameter %s", name)
			}
			return v, nil
		}
		return r.ref(name)
	case "Fn::GetAtt":
		var parts []string
		switch a := arg.(type) {
		case []any:
			for _, p := range a {
				s, _ := p.(string)
				parts = append(parts, s)
			}
		case string:
			parts = strings.SplitN(a, ".", 2)
		}
		if len(parts) != 2 {
			return nil, fmt.Errorf("bad Fn::GetAtt %v", arg)
		}
		return r.getAtt(parts[0], parts[1])
	case "Fn::Join":
		a, _ := arg.([]any)
		if len(a) != 2 {
			return nil, fmt.Errorf("bad Fn::Join %v", arg)
		}
		sep, _ := a[0].(string)
		list, err := r.resolve(a[1])
		if err != nil {
			return nil, err
		}
		items, _ := list.([]any)
		strs := make([]string, 0, len(items))
		for _, it := range items {
			s, ok := it.(string)
			if !ok {
				return nil, fmt.Errorf("Fn::Join of a %T", it)
			}
			strs = append(strs, s)
		}
		return strings.Join(strs, sep), nil
	case "Fn::Split":
		a, _ := arg.([]any)
		if len(a) != 2 {
			return nil, fmt.Errorf("bad Fn::Split %v", arg)
		}
		sep, _ := a[0].(string)
		s, err := r.str(a[1])
		if err != nil {
			return nil, err
		}
		var out []any
		for _, p := range strings.Split(s, sep) {
			out = append(out, p)
		}
		return out, nil
	case "Fn::Select":
		a, _ := arg.([]any)
		if len(a) != 2 {
			return nil, fmt.Errorf("bad Fn::Select %v", arg)
		}
		var idx int
		switch i := a[0].(type) {
		case float64:
			idx = int(i)
		case string:
			_, _ = fmt.Sscan(i, &idx)
		}
		list, err := r.resolve(a[1])
		if err != nil {
			return nil, err
		}
		items, _ := list.([]any)
		if idx < 0 || idx >= len(items) {
			return nil, fmt.Errorf("Fn::Select index %d out of %d", idx, len(items))
		}
		return items[idx], nil
	case "Fn::Sub":
		var text string
		vars := map[string]any{}
		switch a := arg.(type) {
		case string:
			text = a
		case []any:
			text, _ = a[0].(string)
			if m, ok := a[1].(map[string]any); ok {
				vars = m
			}
		}
		var b strings.Builder
		for {
			i := strings.Index(text, "${")
			if i < 0 {
				b.WriteString(text)
				break
			}
			j := strings.Index(text[i:], "}")
			if j < 0 {
				return nil, fmt.Errorf("unterminated ${ in Fn::Sub")
			}
			b.WriteString(text[:i])
			name := text[i+2 : i+j]
			text = text[i+j+1:]
			var val any
			var err error
			switch {
			case strings.HasPrefix(name, "!"):
				val = "${" + name[1:] + "}"
			case vars[name] != nil:
				val, err = r.resolve(vars[name])
			case strings.Contains(name, "."):
				p := strings.SplitN(name, ".", 2)
				val, err = r.getAtt(p[0], p[1])
			default:
				val, err = r.intrinsic("Ref", name)
			}
			if err != nil {
				return nil, err
			}
			fmt.Fprint(&b, val)
		}
		return b.String(), nil
	}
	return nil, fmt.Errorf("unsupported intrinsic %s", fn)
}
