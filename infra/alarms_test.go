package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkAlarms: every state machine alarms on failed, timed-out and aborted
// executions; every function alarms on its error rate (not on one error);
// the dashboard leads with onboardings and decommissions by outcome.
func checkAlarms(t *testing.T, cfn *cfnTemplate, fns []string) {
	t.Helper()
	alarms := map[string]map[string]any{}
	for _, r := range cfn.Resources {
		if r.Type == "AWS::CloudWatch::Alarm" {
			alarms[fmt.Sprint(r.Properties["AlarmName"])] = r.Properties
		}
	}
	machines := map[string]string{ // construct ID → alarm name prefix
		"Onboarding": "maasflow-prod-", "BatchOnboarding": "maasflow-prod-batch-onboarding-",
		"Decommission": "maasflow-prod-decommission-", "ReconcileStateMachine": "maasflow-prod-reconcile-",
		"MachineWatch": "maasflow-prod-machine-watch-",
	}
	for id, prefix := range machines {
		smID, _ := cfn.byID(t, "AWS::StepFunctions::StateMachine", id)
		outcomes := map[string]string{"ExecutionsFailed": prefix + "executions-failed",
			"ExecutionsTimedOut": prefix + "executions-timed-out", "ExecutionsAborted": prefix + "executions-aborted"}
		if id == "MachineWatch" {
			outcomes["ExecutionsFailed"] = "maasflow-prod-machine-watch-failed"
		}
		for metric, name := range outcomes {
			a, ok := alarms[name]
			if !assert.True(t, ok, "%s: no alarm %s", id, name) {
				continue
			}
			assert.Equal(t, metric, a["MetricName"], name)
			assert.Equal(t, "AWS/States", a["Namespace"], name)
			assert.Contains(t, fmt.Sprint(a["Dimensions"]), smID, "%s watches its own state machine", name)
			assert.InDelta(t, 1, a["Threshold"], 0, name)
			assert.NotEmpty(t, a["AlarmActions"], name)
		}
	}
	for name, a := range alarms {
		assert.NotEqual(t, "Errors", a["MetricName"], "%s: a function alarms on its error rate, not on one error", name)
	}
	for _, fn := range fns {
		name := "maasflow-prod-" + kebab(CamelCase(fn)) + "-error-rate"
		a, ok := alarms[name]
		if !assert.True(t, ok, "no alarm %s", name) {
			continue
		}
		assert.InDelta(t, errorRatePercent, a["Threshold"], 0, name)
		assert.InDelta(t, errorRatePeriods, a["EvaluationPeriods"], 0, name)
		assert.InDelta(t, errorRatePeriods, a["DatapointsToAlarm"], 0, name)
		b, err := json.Marshal(a["Metrics"])
		require.NoError(t, err)
		metrics := string(b)
		assert.Contains(t, metrics, "100 * errors / invocations", name)
		assert.Contains(t, metrics, `"MetricName":"Errors"`, name)
		assert.Contains(t, metrics, `"MetricName":"Invocations"`, name)
		fnID, _ := cfn.byID(t, "AWS::Lambda::Function", CamelCase(fn)+"Function")
		assert.Contains(t, metrics, `"`+fnID+`"`, "%s divides the function's own metrics", name)
	}

	_, dash := cfn.one(t, "AWS::CloudWatch::Dashboard")
	b, err := json.Marshal(dash.Properties["DashboardBody"])
	require.NoError(t, err)
	body := string(b)
	onboard := strings.Index(body, "Onboardings by outcome")
	decom := strings.Index(body, "Decommissions by outcome")
	fnErrs := strings.Index(body, "Function errors")
	require.True(t, onboard >= 0 && decom >= 0 && fnErrs >= 0, "dashboard: %s", body)
	assert.Less(t, onboard, fnErrs, "the business view comes first")
	assert.Less(t, decom, fnErrs, "the business view comes first")
	for _, title := range []string{"batch-onboarding executions by outcome", "reconcile executions by outcome", "Machine-watch runs by outcome"} {
		assert.Contains(t, body, title)
	}
	for _, metric := range []string{"ExecutionsStarted", "ExecutionsSucceeded", "ExecutionsFailed", "ExecutionsTimedOut", "ExecutionsAborted"} {
		assert.Contains(t, body, metric)
	}
}

// TestRetriesCannotHoldTheErrorRate: one execution's retry sequence of a
// function error (a retrier not on Lambda.* or States.* errors) makes at
// most MaxAttempts+1 calls; fewer than the error-rate alarm needs over its
// window, so the retries the ASL makes on purpose never page on their own.
func TestRetriesCannotHoldTheErrorRate(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "statemachines", "*.asl.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	seen := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var doc any
		require.NoError(t, json.Unmarshal(raw, &doc))
		for _, r := range retriers(doc) {
			functionError := false
			for _, e := range r.ErrorEquals {
				if !strings.HasPrefix(e, "Lambda.") && !strings.HasPrefix(e, "States.") {
					functionError = true
				}
			}
			if !functionError {
				continue
			}
			seen++
			attempts := 3 // the ASL default
			if r.MaxAttempts != nil {
				attempts = *r.MaxAttempts
			}
			assert.Less(t, attempts+1, errorRateMinInvocations*errorRatePeriods,
				"%s: a retrier on %v makes %d calls, enough to hold the error-rate alarm alone", filepath.Base(f), r.ErrorEquals, attempts+1)
		}
	}
	assert.Positive(t, seen, "the ASLs retry function errors")
}

type retrier struct {
	ErrorEquals []string `json:"ErrorEquals"`
	MaxAttempts *int     `json:"MaxAttempts"`
}

// retriers collects every Retry entry anywhere in an ASL document.
func retriers(v any) []retrier {
	var out []retrier
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if k == "Retry" {
				b, _ := json.Marshal(c)
				var rs []retrier
				if json.Unmarshal(b, &rs) == nil {
					out = append(out, rs...)
				}
				continue
			}
			out = append(out, retriers(c)...)
		}
	case []any:
		for _, c := range x {
			out = append(out, retriers(c)...)
		}
	}
	return out
}
