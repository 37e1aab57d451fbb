package stack

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/asl"
)

// tryOnboarding runs one onboarding and reports what went wrong instead of
// failing the test: the broken templates must make it fail.
func (l *lane) tryOnboarding() error {
	l.t.Helper()
	steps := []struct {
		method, path string
		body         func(ids map[string]string) any
		want         int
		save         string
	}{
		{"POST", "/api/v1/admin/maas-sites", func(map[string]string) any {
			return map[string]any{"name": "lane-site", "maas_url": l.simURL, "policy": map[string]any{"bootstrap": map[string]any{
				"url": l.boot.URL, "version": l.boot.Version, "sha256": l.boot.SHA256, "ca_bundle_pem": l.boot.CABundle}}}
		}, http.StatusCreated, "site"},
		{"POST", "/api/v1/admin/maas-sites/{site}/credentials", func(map[string]string) any {
			return map[string]any{"maas_api_key": l.sim.APIKey(), "bmc_username": "maasflow", "bmc_password": "lane-bmc-password"}
		}, http.StatusOK, ""},
		{"POST", "/api/v1/admin/maas-sites/{site}/probe", func(map[string]string) any { return nil }, http.StatusOK, ""},
		{"POST", "/api/v1/admin/maas-sites/{site}/profiles", func(map[string]string) any {
			return map[string]any{"name": "gpu-jammy", "architecture": "amd64/generic", "distro_series": "jammy"}
		}, http.StatusCreated, "profile"},
		{"POST", "/api/v1/admin/skus", func(map[string]string) any {
			return map[string]any{"id": "h100-8x", "gpu_model": "H100", "gpus_total": 8}
		}, http.StatusCreated, ""},
		{"POST", "/api/v1/admin/onboardings", func(ids map[string]string) any {
			return map[string]any{"site_id": ids["site"], "profile_id": ids["profile"], "sku_id": "h100-8x", "hostname": "gpu-b1", "ipmi_ip": "10.10.0.21"}
		}, http.StatusAccepted, "onboarding"},
	}
	l.hardware("gpu-b1", "10.10.0.21", "52:54:00:00:02:01")
	ids := map[string]string{}
	for _, s := range steps {
		path := s.path
		for k, v := range ids {
			path = strings.ReplaceAll(path, "{"+k+"}", v)
		}
		status, out := l.do(s.method, path, s.body(ids), true)
		if status != s.want {
			return fmt.Errorf("%s %s: status %d: %v; problems: %v", s.method, path, status, out, l.problems())
		}
		if s.save != "" {
			ids[s.save], _ = out["id"].(string)
		}
	}
	deadline := time.Now().Add(terminalWait)
	for time.Now().Before(deadline) {
		if p := l.problems(); len(p) > 0 {
			return errors.New(strings.Join(p, "; "))
		}
		for _, arn := range l.machines {
			for _, status := range []string{asl.StatusFailed, asl.StatusTimedOut, asl.StatusAborted} {
				for _, x := range l.engine.ListExecutions(arn, status) {
					return fmt.Errorf("execution %s %s: %s: %s", x.Name, x.Status, x.Error, x.Cause)
				}
			}
		}
		_, o := l.do("GET", "/api/v1/admin/onboardings/"+ids["onboarding"], nil, true)
		switch o["status"] {
		case "completed":
			// Done once the completion event is on the bus and a scheduled
			// reconcile run (which reads the table's indexes) has ended.
			if l.published("node.onboarding.completed") && l.called("maasflow-dev-reconcile", "dynamodb:Query", "/index/") && l.succeeded("maasflow-dev-reconcile") {
				if p := l.problems(); len(p) > 0 {
					return errors.New(strings.Join(p, "; "))
				}
				return nil
			}
		case "failed", "canceled", "manual_intervention":
			return fmt.Errorf("onboarding %v: %v", o["status"], o["error"])
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("the onboarding did not end")
}

// functionID finds a function's logical ID by its FunctionName suffix.
func functionID(t *testing.T, tpl *template, fn string) string {
	t.Helper()
	for _, id := range tpl.ofType("AWS::Lambda::Function") {
		if tpl.Resources[id].Properties["FunctionName"] == "maasflow-dev-"+fn {
			return id
		}
	}
	t.Fatalf("no function %s in the template", fn)
	return ""
}

// runBroken breaks a copy of the template and requires the lane to fail
// with a message holding want.
func runBroken(t *testing.T, breakIt func(*template), want string) {
	t.Helper()
	tpl := freshTemplate(t)
	breakIt(tpl)
	l, err := startLane(t, tpl)
	if err == nil {
		err = l.tryOnboarding()
	}
	require.Error(t, err, "the broken template ran clean")
	require.Contains(t, err.Error(), want)
}

func TestBrokenTemplatesFailTheLane(t *testing.T) {
	t.Run("a function's environment names another table", func(t *testing.T) {
		runBroken(t, func(tpl *template) {
			id := functionID(t, tpl, "discover-machine")
			vars := tpl.Resources[id].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
			vars["MAASFLOW_TABLE"] = "maasflow-dev-old"
		}, "maasflow-dev-old")
	})
	t.Run("a function lacks a required variable", func(t *testing.T) {
		runBroken(t, func(tpl *template) {
			id := functionID(t, tpl, "validate-onboarding")
			vars := tpl.Resources[id].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
			delete(vars, "MAASFLOW_ONBOARDING_STATE_MACHINE_ARN")
		}, "MAASFLOW_ONBOARDING_STATE_MACHINE_ARN")
	})
	t.Run("the table declares an index under another name", func(t *testing.T) {
		runBroken(t, func(tpl *template) {
			id := mainTable(t, tpl)
			for _, ix := range tpl.Resources[id].Properties["GlobalSecondaryIndexes"].([]any) {
				m := ix.(map[string]any)
				m["IndexName"] = fmt.Sprint(m["IndexName"]) + "-renamed"
			}
		}, "index")
	})
	t.Run("a substitution names a function the template does not deploy", func(t *testing.T) {
		runBroken(t, func(tpl *template) {
			for _, id := range tpl.ofType("AWS::StepFunctions::StateMachine") {
				subs, _ := tpl.Resources[id].Properties["DefinitionSubstitutions"].(map[string]any)
				if _, ok := subs["DiscoverMachineFunctionArn"]; ok {
					subs["DiscoverMachineFunctionArn"] = functionARN("maasflow-dev-discover-machines")
				}
			}
		}, "does not deploy")
	})
	t.Run("a substitution swaps two functions", func(t *testing.T) {
		runBroken(t, func(tpl *template) {
			for _, id := range tpl.ofType("AWS::StepFunctions::StateMachine") {
				subs, _ := tpl.Resources[id].Properties["DefinitionSubstitutions"].(map[string]any)
				if _, ok := subs["DiscoverMachineFunctionArn"]; ok {
					subs["DiscoverMachineFunctionArn"], subs["CommissionMachineFunctionArn"] = subs["CommissionMachineFunctionArn"], subs["DiscoverMachineFunctionArn"]
				}
			}
		}, "CommissionMachine needs a MAAS machine")
	})
	t.Run("a function's role lacks its PutEvents grant", func(t *testing.T) {
		runBroken(t, func(tpl *template) {
			role := tpl.Resources[functionID(t, tpl, "finish-onboarding")].Properties["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0]
			for _, id := range tpl.ofType("AWS::IAM::Policy") {
				p := tpl.Resources[id].Properties
				if !strings.Contains(fmt.Sprint(p["Roles"]), fmt.Sprint(role)) {
					continue
				}
				doc := p["PolicyDocument"].(map[string]any)
				var keep []any
				for _, st := range doc["Statement"].([]any) {
					if !strings.Contains(fmt.Sprint(st.(map[string]any)["Action"]), "events:PutEvents") {
						keep = append(keep, st)
					}
				}
				doc["Statement"] = keep
			}
		}, "denied: maasflow-dev-finish-onboarding events:PutEvents")
	})
	t.Run("the state machine's role may not invoke a task", func(t *testing.T) {
		runBroken(t, func(tpl *template) {
			for _, id := range tpl.ofType("AWS::IAM::Policy") {
				doc := tpl.Resources[id].Properties["PolicyDocument"].(map[string]any)
				for _, st := range doc["Statement"].([]any) {
					m := st.(map[string]any)
					if fmt.Sprint(m["Action"]) == "lambda:InvokeFunction" && strings.Contains(fmt.Sprint(m["Resource"]), "DeployMachineFunction") {
						m["Action"] = "lambda:GetFunction"
					}
				}
			}
		}, "may not lambda:InvokeFunction")
	})
}

// published reports whether an event of this detail type reached the bus.
func (l *lane) published(detailType string) bool {
	for _, e := range l.aws.putEvents_() {
		if e.DetailType == detailType {
			return true
		}
	}
	return false
}

// called reports whether principal made a call of action on a resource
// holding part.
func (l *lane) called(principal, action, part string) bool {
	calls, _ := l.aws.snapshot()
	for _, c := range calls {
		if c.Principal == principal && c.Action == action && strings.Contains(c.Resource, part) {
			return true
		}
	}
	return false
}

// succeeded reports whether a state machine has a succeeded execution.
func (l *lane) succeeded(machine string) bool {
	return len(l.engine.ListExecutions(l.machines[machine], asl.StatusSucceeded)) > 0
}
