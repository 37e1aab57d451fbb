package stack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/config"
	"github.com/maasflow/maasflow/shared/connector"
	"github.com/maasflow/maasflow/shared/connector/sqsrelay"
)

// mainTable is the logical ID of the stack's own table (maasflow-dev), not
// the connector's reply table.
func mainTable(t *testing.T, tpl *template) string {
	t.Helper()
	for _, id := range tpl.ofType("AWS::DynamoDB::Table") {
		if tpl.Resources[id].Properties["TableName"] == "maasflow-dev" {
			return id
		}
	}
	t.Fatal("no table maasflow-dev in the template")
	return ""
}

// sessionTagSite is the session tag Roles Anywhere maps from a
// certificate's subject CN, which maasflow sets to the connector's site.
const sessionTagSite = "x509Subject/CN"

// principalTagSite is that tag as a policy variable.
const principalTagSite = "${aws:PrincipalTag/" + sessionTagSite + "}"

// condStatement is a policy statement with its conditions, operator → key
// → values.
type condStatement struct {
	statement
	conditions map[string]map[string][]string
}

// roleStatements reads a role's inline and attached policies with their
// conditions resolved.
func roleStatements(res *resolver, role string) ([]condStatement, error) {
	var docs []any
	inline, _ := res.t.Resources[role].Properties["Policies"].([]any)
	for _, pol := range inline {
		docs = append(docs, pol.(map[string]any)["PolicyDocument"])
	}
	for _, id := range res.t.ofType("AWS::IAM::Policy") {
		props := res.t.Resources[id].Properties
		roles, _ := props["Roles"].([]any)
		for _, ro := range roles {
			if ref, _ := ro.(map[string]any)["Ref"].(string); ref == role {
				docs = append(docs, props["PolicyDocument"])
			}
		}
	}
	var out []condStatement
	for _, d := range docs {
		doc, err := res.resolve(d)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", role, err)
		}
		for _, raw := range rawStatements(doc) {
			e, _ := raw["Effect"].(string)
			st := condStatement{statement: statement{Effect: e, Actions: strs(raw["Action"]), Resources: strs(raw["Resource"])},
				conditions: map[string]map[string][]string{}}
			cond, _ := raw["Condition"].(map[string]any)
			for op, kv := range cond {
				st.conditions[op] = map[string][]string{}
				for k, v := range kv.(map[string]any) {
					st.conditions[op][k] = strs(v)
				}
			}
			out = append(out, st)
		}
	}
	return out, nil
}

// evalConditional is IAM's evaluation of statements with conditions, for
// the operators the connector role uses; request holds the request's
// condition keys. Another operator is an error: the lane must not pass a
// policy it does not understand.
func evalConditional(sts []condStatement, pr principal, action, resource string, request map[string][]string) (bool, error) {
	allowed := false
	for _, st := range sts {
		if !st.matches(pr, action, resource) {
			continue
		}
		holds := true
		for op, kv := range st.conditions {
			for key, values := range kv {
				want := make([]string, len(values))
				for i, v := range values {
					want[i] = expandVars(v, pr)
				}
				ok, err := conditionHolds(op, request[key], want)
				if err != nil {
					return false, fmt.Errorf("%s %s: %w", op, key, err)
				}
				holds = holds && ok
			}
		}
		if !holds {
			continue
		}
		if st.Effect == "Deny" {
			return false, nil
		}
		allowed = true
	}
	return allowed, nil
}

func conditionHolds(op string, got, want []string) (bool, error) {
	in := func(v string, match func(p, s string) bool) bool {
		for _, w := range want {
			if match(w, v) {
				return true
			}
		}
		return false
	}
	eq := func(p, s string) bool { return p == s }
	switch op {
	case "StringEquals", "ArnEquals":
		return len(got) == 1 && in(got[0], eq), nil
	case "StringLike", "ArnLike":
		return len(got) == 1 && in(got[0], globMatch), nil
	case "ForAllValues:StringEquals":
		// Every value the request carries is allowed (an absent key holds,
		// as in IAM: the statement must not rely on it alone).
		for _, g := range got {
			if !in(g, eq) {
				return false, nil
			}
		}
		return true, nil
	case "ForAnyValue:StringEquals":
		for _, g := range got {
			if in(g, eq) {
				return true, nil
			}
		}
		return false, nil
	}
	return false, errors.New("the lane does not evaluate this condition operator")
}

// connectorSession is a connector's Roles Anywhere session: its AWS calls,
// made by the real sqsrelay.Link, are authorised against the connector
// role's policy in the template with the session's site tag, and recorded.
type connectorSession struct {
	pr    principal
	sts   []condStatement
	mu    sync.Mutex
	calls []call
}

var errAccessDenied = errors.New("AccessDenied")

func (s *connectorSession) authorize(action, resource string, request map[string][]string) error {
	ok, err := evalConditional(s.sts, s.pr, action, resource, request)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.calls = append(s.calls, call{Principal: s.pr.name, Role: s.pr.role, Action: action, Resource: resource, Allowed: ok})
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %s on %s", errAccessDenied, action, resource)
	}
	return nil
}

// queueARN is the ARN of the queue at an SQS queue URL.
func queueARN(queueURL string) string {
	name := queueURL[strings.LastIndexByte(queueURL, '/')+1:]
	return fmt.Sprintf("arn:aws:sqs:%s:%s:%s", laneRegion, laneAccount, name)
}

// sessionSQS is the session's SQS: one request waits on every queue.
type sessionSQS struct{ s *connectorSession }

func (q sessionSQS) SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return nil, errors.New("a connector sends nothing")
}

func (q sessionSQS) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	if err := q.s.authorize("sqs:ReceiveMessage", queueARN(aws.ToString(in.QueueUrl)), nil); err != nil {
		return nil, err
	}
	body := `{"id":"req-1","site":"x","kind":"maas","method":"GET","url":"/MAAS/api/2.0/version/"}`
	return &sqs.ReceiveMessageOutput{Messages: []sqstypes.Message{{Body: aws.String(body), ReceiptHandle: aws.String("handle-1")}}}, nil
}

func (q sessionSQS) DeleteMessage(_ context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	return &sqs.DeleteMessageOutput{}, q.s.authorize("sqs:DeleteMessage", queueARN(aws.ToString(in.QueueUrl)), nil)
}

// sessionDynamo is the session's DynamoDB: an item write is authorised
// with its partition key as dynamodb:LeadingKeys.
type sessionDynamo struct{ s *connectorSession }

func (d sessionDynamo) tableARN(name *string) string {
	return fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s", laneRegion, laneAccount, aws.ToString(name))
}

func leadingKey(item map[string]ddbtypes.AttributeValue) map[string][]string {
	if v, ok := item[connector.AttrSite].(*ddbtypes.AttributeValueMemberS); ok {
		return map[string][]string{"dynamodb:LeadingKeys": {v.Value}}
	}
	return nil
}

func (d sessionDynamo) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{}, d.s.authorize("dynamodb:GetItem", d.tableARN(in.TableName), leadingKey(in.Key))
}

func (d sessionDynamo) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return &dynamodb.PutItemOutput{}, d.s.authorize("dynamodb:PutItem", d.tableARN(in.TableName), leadingKey(in.Item))
}

func (d sessionDynamo) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return &dynamodb.DeleteItemOutput{}, d.s.authorize("dynamodb:DeleteItem", d.tableARN(in.TableName), leadingKey(in.Key))
}

// TestConnectorRoleScopesASessionToItsSite runs a connector's side of the
// relay (sqsrelay.Link: receive and delete its requests, write its replies
// and heartbeat) as a Roles Anywhere session of the template's connector
// role tagged with its site, on the queue URL prefix and table the
// template gives the api to hand out. Its own site's calls are allowed;
// the same session on another site's queue, or writing under another
// site's key, is denied.
func TestConnectorRoleScopesASessionToItsSite(t *testing.T) {
	tpl := freshTemplate(t)
	res := &resolver{t: tpl, apiEndpoint: "https://api.lane.test",
		params: map[string]any{"JwtIssuer": "https://issuer.lane.test", "JwtAudience": []any{"lane-cli"}, "BootstrapVersion": "21"}}
	roles := tpl.ofType("AWS::IAM::Role")
	role := ""
	for _, id := range roles {
		if strings.HasPrefix(id, "ConnectorRole") {
			role = id
		}
	}
	require.NotEmpty(t, role, "the stack synthesized with the connector CA has a connector role")

	// Only Roles Anywhere, for the stack's trust anchor, may take it.
	trust, err := res.resolve(tpl.Resources[role].Properties["AssumeRolePolicyDocument"])
	require.NoError(t, err)
	anchors := tpl.ofType("AWS::RolesAnywhere::TrustAnchor")
	require.Len(t, anchors, 1)
	actions := map[string]bool{}
	for _, st := range rawStatements(trust) {
		pr, _ := st["Principal"].(map[string]any)
		require.Equal(t, []string{"rolesanywhere.amazonaws.com"}, strs(pr["Service"]), "trusted: %v", st)
		require.Contains(t, fmt.Sprint(st["Condition"]), anchors[0], "only the stack's trust anchor: %v", st)
		for _, a := range strs(st["Action"]) {
			actions[a] = true
		}
	}
	assert.Equal(t, map[string]bool{"sts:AssumeRole": true, "sts:TagSession": true, "sts:SetSourceIdentity": true}, actions)

	// What the api hands a connector at enrollment (connector.json).
	env := map[string]string{}
	envAny, err := res.resolve(tpl.Resources[functionID(t, tpl, "api")].Properties["Environment"])
	require.NoError(t, err)
	for k, v := range envAny.(map[string]any)["Variables"].(map[string]any) {
		env[k], _ = v.(string)
	}
	prefix, table := env[config.EnvConnectorQueuePrefix], env[config.EnvConnectorTable]
	require.NotEmpty(t, prefix, "the api's %s", config.EnvConnectorQueuePrefix)
	require.NotEmpty(t, table, "the api's %s", config.EnvConnectorTable)
	require.Equal(t, res.named(connectorTableID(t, tpl), "TableName"), table)

	sts, err := roleStatements(res, role)
	require.NoError(t, err)
	session := func(site string) *connectorSession {
		return &connectorSession{pr: principal{name: "connector " + site, role: role, tags: map[string]string{sessionTagSite: site}}, sts: sts}
	}
	ctx := context.Background()
	reply := connector.Response{ID: "req-1", Status: 200, Body: []byte(`{"version":"3.5"}`)}
	hb := connector.Heartbeat{Site: "site-a", Version: "lane", StartedAt: time.Now(), At: time.Now(), MAASReachable: true}

	t.Run("its own site", func(t *testing.T) {
		s := session("site-a")
		link := sqsrelay.NewLink(sessionSQS{s}, sessionDynamo{s}, prefix+"site-a", table, "site-a")
		ds, err := link.Receive(ctx)
		require.NoError(t, err)
		require.Len(t, ds, 1)
		require.NoError(t, ds[0].Ack(ctx))
		require.NoError(t, link.Reply(ctx, reply))
		require.NoError(t, link.Heartbeat(ctx, hb))
		var made []string
		for _, c := range s.calls {
			require.True(t, c.Allowed, "%s %s", c.Action, c.Resource)
			made = append(made, c.Action+" "+shortARN(c.Resource))
		}
		assert.Equal(t, []string{
			"sqs:ReceiveMessage sqs:maasflow-dev-connector-site-a",
			"sqs:DeleteMessage sqs:maasflow-dev-connector-site-a",
			"dynamodb:PutItem dynamodb:table/" + table,
			"dynamodb:PutItem dynamodb:table/" + table,
		}, made)
	})

	t.Run("another site's queue", func(t *testing.T) {
		s := session("site-a")
		link := sqsrelay.NewLink(sessionSQS{s}, sessionDynamo{s}, prefix+"site-b", table, "site-b")
		_, err := link.Receive(ctx)
		require.ErrorIs(t, err, errAccessDenied)
		require.ErrorContains(t, err, "maasflow-dev-connector-site-b")
	})

	t.Run("a reply under another site's key", func(t *testing.T) {
		s := session("site-a")
		// The session's own queue, but the link writes as site-b.
		link := sqsrelay.NewLink(sessionSQS{s}, sessionDynamo{s}, prefix+"site-a", table, "site-b")
		require.ErrorIs(t, link.Reply(ctx, reply), errAccessDenied)
		require.ErrorIs(t, link.Heartbeat(ctx, hb), errAccessDenied)
	})

	t.Run("a session without the site tag", func(t *testing.T) {
		s := session("")
		delete(s.pr.tags, sessionTagSite)
		link := sqsrelay.NewLink(sessionSQS{s}, sessionDynamo{s}, prefix+"site-a", table, "site-a")
		_, err := link.Receive(ctx)
		require.ErrorIs(t, err, errAccessDenied)
		require.ErrorIs(t, link.Reply(ctx, reply), errAccessDenied)
	})

	t.Run("a policy scoped by prefix instead of the tag would let it through", func(t *testing.T) {
		// The check above fails on such a template: the same session reads
		// site-b's queue once the resource is the stage's whole prefix.
		s := session("site-a")
		s.sts = nil
		for _, st := range sts {
			cp := st
			cp.Resources = append([]string(nil), st.Resources...)
			for i, r := range cp.Resources {
				cp.Resources[i] = strings.ReplaceAll(r, principalTagSite, "*")
			}
			s.sts = append(s.sts, cp)
		}
		link := sqsrelay.NewLink(sessionSQS{s}, sessionDynamo{s}, prefix+"site-b", table, "site-b")
		_, err := link.Receive(ctx)
		require.NoError(t, err)
	})

	t.Run("the connector may not read or delete replies, nor touch the stack's table", func(t *testing.T) {
		s := session("site-a")
		for _, c := range []struct{ action, resource string }{
			{"dynamodb:GetItem", tableARN(table)},
			{"dynamodb:DeleteItem", tableARN(table)},
			{"dynamodb:PutItem", tableARN("maasflow-dev")},
			{"sqs:SendMessage", queueARN(prefix + "site-a")},
		} {
			err := s.authorize(c.action, c.resource, map[string][]string{"dynamodb:LeadingKeys": {"site-a"}})
			require.ErrorIs(t, err, errAccessDenied, "%s %s", c.action, c.resource)
		}
	})
}

// connectorTableID is the connector reply table's logical ID.
func connectorTableID(t *testing.T, tpl *template) string {
	t.Helper()
	for _, id := range tpl.ofType("AWS::DynamoDB::Table") {
		if id != mainTable(t, tpl) {
			return id
		}
	}
	t.Fatal("no connector table in the template")
	return ""
}
