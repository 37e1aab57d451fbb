package stack

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// grantUse is one action a function's role allows on one resource of its
// policy, named without the lane's region and account.
type grantUse struct {
	Function string // without the stack's "maasflow-dev-" prefix
	Action   string
	Resource string
}

func (g grantUse) String() string { return g.Function + " " + g.Action + " " + g.Resource }

// justifiedGrant keeps a grant that the lane's recorded calls do not use:
// Function, Action and Resource are IAM-style patterns (* and ?).
type justifiedGrant struct {
	Function, Action, Resource string
	Reason                     string
}

func (j justifiedGrant) covers(g grantUse) bool {
	return globMatch(j.Function, g.Function) && globMatch(strings.ToLower(j.Action), strings.ToLower(g.Action)) &&
		globMatch(j.Resource, g.Resource)
}

const functionPrefix = "maasflow-dev-"

// shortARN drops the partition, region and account of an ARN:
// arn:aws:dynamodb:us-east-1:111122223333:table/x → dynamodb:table/x.
func shortARN(arn string) string {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" {
		return arn
	}
	return parts[2] + ":" + parts[5]
}

// unusedGrants lists, per function, every action its role allows on each
// resource of its policy that no recorded call of the function used.
// Functions that made no call at all come back in notRun instead: none of
// their grants was exercised.
func (p *policies) unusedGrants(roleOf map[string]string, calls []call) (unused []grantUse, notRun []string) {
	byFunction := map[string][]call{}
	for _, c := range calls {
		byFunction[c.Principal] = append(byFunction[c.Principal], c)
	}
	for name, role := range roleOf {
		short := strings.TrimPrefix(name, functionPrefix)
		made := byFunction[name]
		if len(made) == 0 {
			notRun = append(notRun, short)
			continue
		}
		seen := map[grantUse]bool{}
		for _, st := range p.statements[role] {
			if st.Effect != "Allow" {
				continue
			}
			for _, a := range st.Actions {
				for _, res := range st.Resources {
					used := false
					for _, c := range made {
						if globMatch(strings.ToLower(a), strings.ToLower(c.Action)) && globMatch(res, c.Resource) {
							used = true
							break
						}
					}
					g := grantUse{Function: short, Action: a, Resource: shortARN(res)}
					if !used && !seen[g] {
						seen[g] = true
						unused = append(unused, g)
					}
				}
			}
		}
	}
	sort.Slice(unused, func(i, j int) bool { return unused[i].String() < unused[j].String() })
	sort.Strings(notRun)
	return unused, notRun
}

// unjustified returns the unused grants no entry of justified covers, and
// the functions that did not run without a reason in notRunReasons.
func unjustified(unused []grantUse, notRun []string, justified []justifiedGrant, notRunReasons map[string]string) []string {
	var out []string
	for _, g := range unused {
		covered := false
		for _, j := range justified {
			if j.covers(g) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, "granted, never used: "+g.String())
		}
	}
	for _, fn := range notRun {
		if notRunReasons[fn] == "" {
			out = append(out, "made no AWS call: "+fn)
		}
	}
	return out
}

// describeUnused is the report, one grant a line with the reason kept.
func describeUnused(unused []grantUse, justified []justifiedGrant) string {
	var b strings.Builder
	for _, g := range unused {
		reason := "NOT JUSTIFIED"
		for _, j := range justified {
			if j.covers(g) {
				reason = j.Reason
				break
			}
		}
		fmt.Fprintf(&b, "%s: %s\n", g, reason)
	}
	return b.String()
}

// Why a grant the lifecycle's recorded calls do not use stays in the
// template. A grant missing here fails TestLifecycleOnTheSynthesizedStack:
// remove it from the template (infra/grants.go) or say here why it stays.
const (
	reasonLambdaService = "used by the Lambda service on the function's behalf, not by its code: the lane captures the function's output and runs without X-Ray"
	// The table's item actions and indexes each function holds are what a
	// static call analysis finds its code can reach (infra/tableaccess_test.go
	// fails on any difference); these are the reached paths the lifecycle
	// does not take.
	reasonLockRelease = "a record write that changes or drops a locked value (a hostname, a BMC address, a run's node) or closes the run deletes the old lock row in the same transaction (shared/store deleteLock); the lifecycle's records keep their locked values on this function's writes"
	reasonTokenRevoke = "closing an onboarding whose node has not consumed its enrollment token revokes the token in the same transaction (shared/store revokeForClose), and a redeploy revokes the superseded token (deploy-machine); in the lifecycle every node consumes its token"
	reasonIndexFilter = "ListOnboardings picks the index from its filter at run time (shared/store indexFor: hostname gsi4, site gsi3, status gsi2, else gsi1); the call analysis cannot tell the filter, so the grant names every index, and the lifecycle uses one"
	reasonAPIFilters  = "the admin API's lists filter by status (gsi2), site (gsi3) and hostname or node (gsi4); the lifecycle lists without filters"
)

var justifiedGrants = []justifiedGrant{
	{"*", "logs:CreateLogStream", "logs:log-group:*", reasonLambdaService},
	{"*", "logs:PutLogEvents", "logs:log-group:*", reasonLambdaService},
	{"*", "xray:PutTraceSegments", "*", reasonLambdaService},
	{"*", "xray:PutTelemetryRecords", "*", reasonLambdaService},
	{"api", "dynamodb:Query", "dynamodb:table/maasflow-dev/index/gsi?", reasonAPIFilters},
	{"api", "secretsmanager:GetSecretValue", "secretsmanager:secret:dev/maasflow/allocation-service/token-??????",
		"a decommission's dry run lists the node's allocations from the allocation service; the lifecycle runs none"},
	{"api", "states:DescribeExecution", "states:execution:maasflow-dev-*:*",
		"resolving drift reads the lost run's execution status; the lifecycle resolves no drift"},
	{"api", "states:StopExecution", "states:execution:maasflow-dev-*:*",
		"the cancel and restart routes stop a running execution; the lifecycle stops none"},
	{"api", "states:SendTaskSuccess", "states:stateMachine:maasflow-dev-onboarding",
		"the enroll route completes the enrollment wait when a node enrolls while await-enrollment waits; the simulator's nodes enroll first, and await-enrollment completes it"},
	{"reconcile", "events:PutEvents", "events:event-bus/maasflow-dev", "puts drift events; the lifecycle's reconcile run finds no drift"},
	{"api", "states:StartExecution", "states:stateMachine:maasflow-dev-reconcile",
		"POST /reconciliation/run starts the reconcile state machine, unless a run is already under way, which it joins; in the lane the schedule's run may be the one under way when the lifecycle asks"},
	{"configure-machine", "sts:*", "iam:role/maasflow-dev-SiteSecretsRole*",
		"reads the site's MAAS key only for a host the site's design names; the lifecycle's site has no design"},
	{"*", "sqs:SendMessage", "sqs:maasflow-dev-connector-*",
		"a MAAS call to a connector site goes on its request queue (sqsrelay.Relay); the lifecycle's site is on the VPC path. The connector's side is TestConnectorRoleScopesASessionToItsSite"},
	{"*", "dynamodb:GetItem", "dynamodb:table/maasflow-dev-connector", "reads a connector site's reply (sqsrelay.Relay); the lifecycle's site is on the VPC path"},
	{"*", "dynamodb:DeleteItem", "dynamodb:table/maasflow-dev-connector", "deletes a connector site's reply once read; the lifecycle's site is on the VPC path"},
	{"api", "sqs:*", "sqs:maasflow-dev-connector-*",
		"a site created on, or switched to, the connector path gets its queues, a disabled one loses them; the lifecycle's site is on the VPC path (TestConnectorEnrollmentOnTheSynthesizedStack makes and deletes them)"},
	{"api", "kms:Sign", "kms:key/*", "the connector CA signs a connector's certificate at enrollment; the lifecycle enrolls no connector (GetPublicKey is used at every cold start; TestConnectorEnrollmentOnTheSynthesizedStack signs)"},
}

// The table grants the call analysis finds reachable and the lifecycle
// does not use, per function.
func init() {
	onboarding := []string{"await-enrollment", "check-completion-gates", "check-machine", "check-predeploy",
		"commission-machine", "configure-machine", "configure-storage", "deploy-machine", "discover-machine",
		"preflight-pxe", "validate-onboarding", "verify-hardware"}
	decommission := []string{"begin-decommission", "check-release", "delete-machine", "drain-allocations", "release-machine"}
	each := func(fns []string, action, resource, reason string) {
		for _, fn := range fns {
			justifiedGrants = append(justifiedGrants, justifiedGrant{fn, action, resource, reason})
		}
	}
	const table = "dynamodb:table/maasflow-dev"
	each(onboarding, "dynamodb:DeleteItem", table, reasonLockRelease)
	each(decommission, "dynamodb:DeleteItem", table, reasonLockRelease)
	each(append(onboarding, "finish-onboarding"), "dynamodb:UpdateItem", table, reasonTokenRevoke)
	each([]string{"finish-decommission", "reconcile"}, "dynamodb:Query", table+"/index/gsi?", reasonIndexFilter)
	each([]string{"api"}, "dynamodb:DeleteItem", table, "the admin API's record writes that release locks (shared/store deleteLock), "+
		"and deleting a RoCE assignment; the lifecycle takes neither through the API")
	each([]string{"take-site-slot"}, "dynamodb:DeleteItem", table, "granting a slot to an onboarding that waited for it "+
		"deletes its waiter row (shared/store grantSiteSlot); the lifecycle's onboardings never wait for a slot")
	// With the connector CA in the template, the api function makes the
	// DLQ alarm of each connector site it adds (sqsrelay.DLQAlarms).
	each([]string{"api"}, "cloudwatch:*Alarm*", "cloudwatch:alarm:maasflow-dev-connector-*",
		"the DLQ alarm of a connector site added through the API, made with its queues and deleted with them; the lifecycle adds no connector site")
}

// notRunReasons are the functions the lifecycle does not run, each with the
// path that runs it; their grants are checked only by infra's grant walker.
var notRunReasons = map[string]string{
	"adopt-machine":           "the adopt recovery of an onboarding",
	"apply-roce":              "sites with a RoCE profile; the lane's site has none",
	"check-reimage":           "a reimage decommission (the lifecycle's is full)",
	"start-reimage":           "a reimage decommission (the lifecycle's is full)",
	"classify-deploy-failure": "a failed deployment",
	"recover-deploy":          "a failed deployment",
	"fallback-release":        "a release that fails or hangs in erase",
	"power-cycle-machine":     "commissioning stuck with its scripts pending",
	"reset-machine":           "the restart-clean recovery of an onboarding",
	"stream":                  "an operator's open stream, through the function URL (functions/stream's tests run it behind lambdaurl); the lane has no function URL front",
}

// requireGrantsUsed fails on a grant no recorded call used without a
// reason in justifiedGrants, and on a function that made no call without
// one in notRunReasons.
func (l *lane) requireGrantsUsed() {
	l.t.Helper()
	calls, _ := l.aws.snapshot()
	unused, notRun := l.iam.unusedGrants(l.roleOf, calls)
	l.t.Logf("granted, never used in the lifecycle:\n%s", describeUnused(unused, justifiedGrants))
	if bad := unjustified(unused, notRun, justifiedGrants, notRunReasons); len(bad) > 0 {
		l.t.Fatalf("remove these grants from the template or justify them in justifiedGrants:\n%s", strings.Join(bad, "\n"))
	}
}

// TestUnusedGrantReport proves the report on the template itself, without
// running it: with a call for every grant of the synthesized template
// nothing is unused, and a grant added to a function's policy comes back
// as the one unjustified, unused grant.
func TestUnusedGrantReport(t *testing.T) {
	tpl := freshTemplate(t)
	p, roleOf := templatePolicies(t, tpl)
	var calls []call
	for name, role := range roleOf {
		for _, st := range p.statements[role] {
			for _, a := range st.Actions {
				for _, r := range st.Resources {
					calls = append(calls, call{Principal: name, Role: role, Action: wildcardsFilled(a), Resource: wildcardsFilled(r)})
				}
			}
		}
	}
	unused, notRun := p.unusedGrants(roleOf, calls)
	require.Empty(t, unused, "a call for every grant leaves none unused")
	require.Empty(t, notRun)

	broken := freshTemplate(t)
	api := functionID(t, broken, "api")
	apiRole := broken.Resources[api].Properties["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
	table := mainTable(t, broken)
	added := false
	for _, id := range broken.ofType("AWS::IAM::Policy") {
		props := broken.Resources[id].Properties
		for _, ro := range props["Roles"].([]any) {
			if ref, _ := ro.(map[string]any)["Ref"].(string); ref == apiRole && !added {
				doc := props["PolicyDocument"].(map[string]any)
				doc["Statement"] = append(doc["Statement"].([]any), map[string]any{
					"Effect": "Allow", "Action": "dynamodb:Scan",
					"Resource": map[string]any{"Fn::GetAtt": []any{table, "Arn"}},
				})
				added = true
			}
		}
	}
	require.True(t, added, "no policy of the api's role %s", apiRole)
	bp, bRoleOf := templatePolicies(t, broken)
	unused, notRun = bp.unusedGrants(bRoleOf, calls)
	require.Equal(t, []string{"granted, never used: api dynamodb:Scan dynamodb:table/maasflow-dev"},
		unjustified(unused, notRun, justifiedGrants, notRunReasons))

	// A function that made no call is reported unless a reason says why.
	unused, notRun = p.unusedGrants(roleOf, nil)
	require.Len(t, notRun, len(roleOf))
	bad := unjustified(unused, notRun, justifiedGrants, notRunReasons)
	require.Contains(t, bad, "made no AWS call: api")
	require.NotContains(t, bad, "made no AWS call: reset-machine")
}

// templatePolicies loads the template's role policies as the lane does,
// with each function's role.
func templatePolicies(t *testing.T, tpl *template) (*policies, map[string]string) {
	t.Helper()
	res := &resolver{t: tpl, apiEndpoint: "https://api.lane.test",
		params: map[string]any{"JwtIssuer": "https://issuer.lane.test", "JwtAudience": []any{"lane-cli"}, "BootstrapVersion": "21"}}
	p, err := loadPolicies(res)
	require.NoError(t, err)
	roleOf := map[string]string{}
	for _, id := range tpl.ofType("AWS::Lambda::Function") {
		ref, _ := tpl.Resources[id].Properties["Role"].(map[string]any)["Fn::GetAtt"].([]any)
		require.Len(t, ref, 2, "function %s's role", id)
		roleOf[res.named(id, "FunctionName")] = ref[0].(string)
	}
	return p, roleOf
}

// wildcardsFilled is a name a pattern with IAM wildcards matches.
func wildcardsFilled(pattern string) string {
	return strings.NewReplacer("*", "x", "?", "x").Replace(pattern)
}
