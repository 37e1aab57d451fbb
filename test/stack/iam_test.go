package stack

import (
	"fmt"
	"regexp"
	"strings"
)

// statement is one IAM policy statement with its intrinsics resolved.
type statement struct {
	Effect    string
	Actions   []string
	Resources []string
}

// policies holds every role's identity policy and trust from the template.
// It evaluates Allow and Deny statements with Action and Resource
// wildcards and the aws:PrincipalTag policy variable; conditions are not
// evaluated (they only narrow what the statements allow).
type policies struct {
	statements map[string][]statement // role logical ID → statements
	trusted    map[string][]string    // role logical ID → AWS principal ARNs its trust policy names
	roleARNs   map[string]string      // role ARN → logical ID
	arnOfRole  map[string]string      // logical ID → ARN
}

func loadPolicies(r *resolver) (*policies, error) {
	p := &policies{statements: map[string][]statement{}, trusted: map[string][]string{}, roleARNs: map[string]string{}, arnOfRole: map[string]string{}}
	for _, id := range r.t.ofType("AWS::IAM::Role") {
		arn, err := r.getAtt(id, "Arn")
		if err != nil {
			return nil, err
		}
		p.roleARNs[arn], p.arnOfRole[id] = id, arn
		trust, err := r.resolve(r.t.Resources[id].Properties["AssumeRolePolicyDocument"])
		if err != nil {
			return nil, fmt.Errorf("%s trust policy: %w", id, err)
		}
		for _, st := range rawStatements(trust) {
			if pr, ok := st["Principal"].(map[string]any); ok {
				p.trusted[id] = append(p.trusted[id], strs(pr["AWS"])...)
			}
		}
		inline, _ := r.t.Resources[id].Properties["Policies"].([]any)
		for _, pol := range inline {
			doc, err := r.resolve(pol.(map[string]any)["PolicyDocument"])
			if err != nil {
				return nil, fmt.Errorf("%s inline policy: %w", id, err)
			}
			p.statements[id] = append(p.statements[id], toStatements(doc)...)
		}
	}
	for _, id := range r.t.ofType("AWS::IAM::Policy") {
		props := r.t.Resources[id].Properties
		doc, err := r.resolve(props["PolicyDocument"])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		roles, _ := props["Roles"].([]any)
		for _, ro := range roles {
			ref, _ := ro.(map[string]any)["Ref"].(string)
			p.statements[ref] = append(p.statements[ref], toStatements(doc)...)
		}
	}
	return p, nil
}

func rawStatements(doc any) []map[string]any {
	m, _ := doc.(map[string]any)
	var out []map[string]any
	switch s := m["Statement"].(type) {
	case []any:
		for _, e := range s {
			if st, ok := e.(map[string]any); ok {
				out = append(out, st)
			}
		}
	case map[string]any:
		out = append(out, s)
	}
	return out
}

func toStatements(doc any) []statement {
	var out []statement
	for _, st := range rawStatements(doc) {
		e, _ := st["Effect"].(string)
		out = append(out, statement{Effect: e, Actions: strs(st["Action"]), Resources: strs(st["Resource"])})
	}
	return out
}

func strs(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func (p *policies) roleByARN(arn string) string { return p.roleARNs[arn] }

// trusts reports whether role's trust policy names the caller's role.
func (p *policies) trusts(role, callerRole string) bool {
	callerARN := p.arnOfRole[callerRole]
	for _, a := range p.trusted[role] {
		if a == callerARN || a == "*" {
			return true
		}
	}
	return false
}

// allows evaluates the principal's role policy: an explicit Deny wins,
// else an Allow must match.
func (p *policies) allows(pr principal, action, resource string) bool {
	allowed := false
	for _, st := range p.statements[pr.role] {
		if !st.matches(pr, action, resource) {
			continue
		}
		if st.Effect == "Deny" {
			return false
		}
		allowed = true
	}
	return allowed
}

func (st statement) matches(pr principal, action, resource string) bool {
	actionOK := false
	for _, a := range st.Actions {
		if globMatch(strings.ToLower(a), strings.ToLower(action)) {
			actionOK = true
			break
		}
	}
	if !actionOK {
		return false
	}
	for _, r := range st.Resources {
		if globMatch(expandVars(r, pr), resource) {
			return true
		}
	}
	return false
}

var tagVarRE = regexp.MustCompile(`\$\{aws:PrincipalTag/([^}]+)\}`)

// expandVars substitutes the session's tags into a resource pattern; an
// absent tag matches nothing, as in IAM.
func expandVars(pattern string, pr principal) string {
	return tagVarRE.ReplaceAllStringFunc(pattern, func(m string) string {
		k := tagVarRE.FindStringSubmatch(m)[1]
		if v, ok := pr.tags[k]; ok {
			return v
		}
		return "\x00no-tag\x00"
	})
}

// globMatch matches IAM's * and ? wildcards.
func globMatch(pattern, s string) bool {
	var b strings.Builder
	b.WriteString("^")
	for _, r := range pattern {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	ok, _ := regexp.MatchString(b.String(), s)
	return ok
}
