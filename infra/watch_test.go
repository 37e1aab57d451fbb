package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/config"
)

// checkMachineWatch checks the machine-watch state machine, its schedule
// at the default period, and what the two watch functions may do: the
// onboarding invokes watch-machine, which only writes the table;
// watch-sites reaches MAAS like the other MAAS activities and completes
// the onboarding's task tokens.
func checkMachineWatch(t *testing.T, cfn *cfnTemplate, root string) {
	t.Helper()
	src, err := LoadSources(root)
	require.NoError(t, err)
	require.NotEmpty(t, src.MachineWatchASL, "the repository has %s", machineWatchASL)

	smID, sm := cfn.byID(t, "AWS::StepFunctions::StateMachine", "MachineWatch")
	p := sm.Properties
	assert.Equal(t, "maasflow-prod-machine-watch", p["StateMachineName"])
	assert.Equal(t, "STANDARD", p["StateMachineType"])
	assert.Equal(t, map[string]any{"Enabled": true}, p["TracingConfiguration"])
	logging, _ := p["LoggingConfiguration"].(map[string]any)
	assert.Equal(t, "ERROR", logging["Level"])
	assert.Equal(t, false, logging["IncludeExecutionData"])
	def, ok := p["DefinitionString"].(string)
	require.True(t, ok, "DefinitionString is inlined")
	assert.JSONEq(t, src.MachineWatchASL, def)
	assert.Contains(t, def, "${WatchSitesFunctionArn}", "CloudFormation substitutes the placeholder")

	subs, _ := p["DefinitionSubstitutions"].(map[string]any)
	assert.Len(t, subs, 1, "the one Lambda of the machine watch")
	target, attr := getAtt(subs["WatchSitesFunctionArn"])
	assert.Equal(t, "Arn", attr)
	assert.Equal(t, "WatchSitesFunction", functionIDPrefix(target))

	smRole, _ := getAtt(p["RoleArn"])
	require.NotEmpty(t, smRole)
	assert.Equal(t, []string{"WatchSitesFunction"}, invokedBy(t, cfn, smRole), "its role invokes only watch-sites")
	onboardingRole := cfn.smRole(t)
	assert.Contains(t, src.OnboardingASL, "${WatchMachineFunctionArn}", "the onboarding's machine waits park on watch-machine")
	assert.Contains(t, invokedBy(t, cfn, onboardingRole), "WatchMachineFunction", "the onboarding invokes watch-machine")
	assert.NotContains(t, invokedBy(t, cfn, onboardingRole), "WatchSitesFunction", "only the machine watch runs watch-sites")

	_, sched := cfn.byID(t, "AWS::Scheduler::Schedule", "MachineWatchSchedule")
	assert.Equal(t, "rate(1 minute)", sched.Properties["ScheduleExpression"], "the default period")
	assert.Equal(t, map[string]any{"Mode": "OFF"}, sched.Properties["FlexibleTimeWindow"])
	assert.Equal(t, "ENABLED", sched.Properties["State"])
	tgt, _ := sched.Properties["Target"].(map[string]any)
	assert.Equal(t, ref(smID), tgt["Arn"])
	input, _ := tgt["Input"].(string)
	assert.JSONEq(t, `{"round":0}`, input)
	schedRole, _ := getAtt(tgt["RoleArn"])
	assert.Equal(t, "MachineWatchScheduleRole", functionIDPrefix(schedRole))
	_, role := cfn.byID(t, "AWS::IAM::Role", "MachineWatchScheduleRole")
	assert.Contains(t, fmt.Sprint(role.Properties["AssumeRolePolicyDocument"]), "scheduler.amazonaws.com")

	// watch-sites: bounded by its task, on the MAAS path, completes tokens.
	_, sites := cfn.byID(t, "AWS::Lambda::Function", "WatchSitesFunction")
	assert.InDelta(t, pollSitesTimeout(t, src.MachineWatchASL), sites.Properties["Timeout"], 0,
		"the function ends when its PollSites task does")
	assert.Contains(t, sites.Properties, "VpcConfig")
	env := envVars(sites)
	assert.Contains(t, env, config.EnvSiteSecretsRole)
	assert.Contains(t, env, config.EnvConnectorTable)
	sitesRole, _ := cfn.byID(t, "AWS::IAM::Role", "WatchSitesRole")
	secretsRoleID, _ := cfn.byID(t, "AWS::IAM::Role", "SiteSecretsRole")
	tableID, _ := cfn.byID(t, "AWS::DynamoDB::Table", "Table")
	sitesGrants := roleGrants(t, cfn, sitesRole)
	for _, a := range []string{"dynamodb:Query", "dynamodb:DeleteItem", "dynamodb:PutItem"} {
		assert.True(t, sitesGrants.allows(a, refersTo(tableID)), "watch-sites may %s on the table", a)
	}
	assert.True(t, sitesGrants.allows("states:SendTaskSuccess", containsAll(":stateMachine:maasflow-prod-onboarding")),
		"watch-sites completes the onboarding's task tokens")
	assert.False(t, sitesGrants.allows("states:SendTaskSuccess", containsAll(":stateMachine:maasflow-prod-machine-watch")))
	assert.True(t, sitesGrants.allows("sts:AssumeRole", refersTo(secretsRoleID)), "watch-sites reads the site's MAAS key")
	assert.True(t, sitesGrants.allows("sqs:SendMessage", connectorQueues), "watch-sites relays through the site connector")

	// watch-machine: the table and nothing of MAAS.
	_, watch := cfn.byID(t, "AWS::Lambda::Function", "WatchMachineFunction")
	assert.NotContains(t, watch.Properties, "VpcConfig", "watch-machine never reaches a site")
	env = envVars(watch)
	for _, v := range []string{config.EnvSiteSecretsRole, config.EnvSecretPrefix, config.EnvConnectorTable, config.EnvRequireHTTPS} {
		assert.NotContains(t, env, v, "watch-machine never reaches a site")
	}
	watchRole, _ := cfn.byID(t, "AWS::IAM::Role", "WatchMachineRole")
	watchGrants := roleGrants(t, cfn, watchRole)
	assert.True(t, watchGrants.allows("dynamodb:PutItem", refersTo(tableID)), "watch-machine stores the watch item")
	for _, s := range watchGrants {
		for _, a := range s.actions {
			for _, service := range []string{"sts:", "secretsmanager:", "kms:", "sqs:", "ec2:", "states:", "events:"} {
				assert.False(t, strings.HasPrefix(a, service), "watch-machine may %s on %v", a, s.resources)
			}
		}
	}
	_, secretsRole := cfn.byID(t, "AWS::IAM::Role", "SiteSecretsRole")
	assert.NotContains(t, fmt.Sprint(secretsRole.Properties["AssumeRolePolicyDocument"]), watchRole,
		"watch-machine cannot open a site-secrets session")

	var alarmed bool
	for _, r := range cfn.Resources {
		if r.Type == "AWS::CloudWatch::Alarm" && r.Properties["AlarmName"] == "maasflow-prod-machine-watch-failed" {
			alarmed = true
			assert.Equal(t, "ExecutionsFailed", r.Properties["MetricName"])
			assert.Contains(t, fmt.Sprint(r.Properties["Dimensions"]), smID)
		}
	}
	assert.True(t, alarmed, "an alarm on failed machine-watch runs")
	_, dash := cfn.one(t, "AWS::CloudWatch::Dashboard")
	assert.Contains(t, fmt.Sprint(dash.Properties["DashboardBody"]), "Machine-watch runs")

	raw, err := json.Marshal(cfn.Outputs)
	require.NoError(t, err)
	assert.Contains(t, string(raw), outputMachineWatchArn)
}

// machineWatchGrants are the machine-watch state machine's grants and its
// schedule role's.
func machineWatchGrants(t *testing.T, cfn *cfnTemplate) []grant {
	t.Helper()
	smID, sm := cfn.byID(t, "AWS::StepFunctions::StateMachine", "MachineWatch")
	smRole, _ := getAtt(sm.Properties["RoleArn"])
	fnID, _ := cfn.byID(t, "AWS::Lambda::Function", CamelCase(functionWatchSites)+"Function")
	out := []grant{
		{principal: smRole, action: "lambda:InvokeFunction", what: "the watch-sites function", match: refersTo(fnID)},
	}
	for _, a := range []string{"xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules", "xray:GetSamplingTargets"} {
		out = append(out, grant{principal: smRole, action: a, what: "X-Ray", match: literal("*")})
	}
	for a, reason := range wildcardResourceActions {
		if reason == reasonLogDelivery {
			out = append(out, grant{principal: smRole, action: a, what: "log delivery", match: literal("*")})
		}
	}
	if roleID, ok := cfn.find("AWS::IAM::Role", "MachineWatchScheduleRole"); ok {
		out = append(out, grant{principal: roleID, action: "states:StartExecution", what: "the machine-watch state machine", match: refersTo(smID)})
	}
	return out
}

// pollSitesTimeout is the PollSites task's TimeoutSeconds in the ASL.
func pollSitesTimeout(t *testing.T, asl string) float64 {
	t.Helper()
	var def struct {
		States map[string]struct {
			TimeoutSeconds float64 `json:"TimeoutSeconds"`
		} `json:"States"`
	}
	require.NoError(t, json.Unmarshal([]byte(asl), &def))
	secs := def.States["PollSites"].TimeoutSeconds
	require.Positive(t, secs, "PollSites has a TimeoutSeconds")
	return secs
}

// invokedBy lists the construct IDs of the functions role may invoke.
func invokedBy(t *testing.T, cfn *cfnTemplate, role string) []string {
	t.Helper()
	var out []string
	for _, s := range roleGrants(t, cfn, role) {
		if !slices.Contains(s.actions, "lambda:InvokeFunction") {
			continue
		}
		ids := map[string]bool{}
		collectRefs(s.rawResources, ids)
		for id := range ids {
			if cfn.Resources[id].Type == "AWS::Lambda::Function" {
				out = append(out, functionIDPrefix(id))
			}
		}
	}
	return dedupe(out)
}

// statements of one role.
type roleStatements []statement

func roleGrants(t *testing.T, cfn *cfnTemplate, role string) roleStatements {
	t.Helper()
	var out roleStatements
	for _, s := range cfn.statements(t) {
		if slices.Contains(s.roles, role) {
			out = append(out, s)
		}
	}
	require.NotEmpty(t, out, "statements of %s", role)
	return out
}

// allows reports whether a statement grants action on a resource match
// accepts.
func (ss roleStatements) allows(action string, match func(string) bool) bool {
	for _, s := range ss {
		if !slices.Contains(s.actions, action) {
			continue
		}
		if slices.ContainsFunc(s.resources, match) {
			return true
		}
	}
	return false
}

// TestMachineWatchScheduleOff: with the period 0 the state machine is
// still built (it can be started by hand) but nothing starts it.
func TestMachineWatchScheduleOff(t *testing.T) {
	requireNode(t)
	cfn, _, _, fns := synth(t, cdkContext(t, map[string]any{ctxStage: devStage, ctxMachineWatchInterval: "0"}))
	cfn.byID(t, "AWS::StepFunctions::StateMachine", "MachineWatch")
	_, ok := cfn.find("AWS::Scheduler::Schedule", "MachineWatchSchedule")
	assert.False(t, ok, "no machine-watch schedule")
	_, ok = cfn.find("AWS::IAM::Role", "MachineWatchScheduleRole")
	assert.False(t, ok, "no schedule role")
	cfn.byID(t, "AWS::Scheduler::Schedule", "ReconcileSchedule")
	checkGrants(t, cfn, expectedGrants(t, cfn, fns, false))
}

func TestContextMinutes(t *testing.T) {
	requireNode(t)
	tests := []struct {
		value   any
		want    int
		wantErr bool
	}{
		{value: nil, want: defaultMachineWatchIntervalMinutes},
		{value: float64(5), want: 5},
		{value: "2", want: 2},
		{value: "0", want: 0},
		{value: float64(1.5), wantErr: true},
		{value: "-1", wantErr: true},
		{value: "1m", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.value), func(t *testing.T) {
			ctx := map[string]any{}
			if tt.value != nil {
				ctx[ctxMachineWatchInterval] = tt.value
			}
			app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
			b := &builder{stack: awscdk.NewStack(app, jsii.String("S"), nil)}
			got, err := b.contextMinutes(ctxMachineWatchInterval, defaultMachineWatchIntervalMinutes)
			if tt.wantErr {
				require.ErrorContains(t, err, ctxMachineWatchInterval)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestLoadMachineWatch: the ASL's placeholders must name functions of the
// tree; a tree without the file builds no machine watch.
func TestLoadMachineWatch(t *testing.T) {
	root := t.TempDir()
	src := Sources{Functions: []string{"api", functionWatchSites}}
	require.NoError(t, loadMachineWatch(root, &src))
	assert.Empty(t, src.MachineWatchASL, "no file, no machine watch")

	path := filepath.Join(root, machineWatchASL)
	writeFile(t, path, `{"StartAt":"P","States":{
		"P":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"${WatchSitesFunctionArn}"},"TimeoutSeconds":40,"Next":"Q"},
		"Q":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"${WatchSitesFunctionArn}"},"TimeoutSeconds":20,"Next":"W"},
		"W":{"Type":"Wait","Seconds":30,"End":true}}}`)
	require.NoError(t, loadMachineWatch(root, &src))
	assert.Equal(t, map[string]string{"WatchSitesFunctionArn": functionWatchSites}, src.MachineWatchPlaceholders)
	assert.Equal(t, 20, src.MachineWatchTaskTimeout, "the shortest task bounds the function")

	writeFile(t, path, `{"StartAt":"P","States":{
		"P":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"${WatchSitesFunctionArn}"},"End":true}}}`)
	require.ErrorContains(t, loadMachineWatch(root, &src), "state P invokes watch-sites without TimeoutSeconds")

	err := loadMachineWatch(root, &Sources{Functions: []string{"api"}})
	var unresolved *UnresolvedPlaceholderError
	require.ErrorAs(t, err, &unresolved)
	assert.Equal(t, []string{"WatchSitesFunctionArn"}, unresolved.Names)

	require.NoError(t, os.WriteFile(path, []byte(`{"StartAt":"P","States":{"P":{"Type":"Task","Resource":"${TableName}","End":true}}}`), 0o600))
	require.ErrorContains(t, loadMachineWatch(root, &src), "functions only")
}
