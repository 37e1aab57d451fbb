package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Cost-allocation tags TestStack synthesises with.
var testTags = map[string]any{"cost-center": "gpu-fleet", "owner": "platform"}

// checkProduction: reserved concurrency on every background function,
// the cost tags on every taggable resource, the backup plan of the table,
// and table grants without batch calls or writes on the indexes.
func checkProduction(t *testing.T, cfn *cfnTemplate, fns []string) {
	t.Helper()
	t.Run("background functions have reserved concurrency", func(t *testing.T) {
		for _, fn := range fns {
			_, res := cfn.byID(t, "AWS::Lambda::Function", CamelCase(fn)+"Function")
			if fn == functionAPI {
				assert.NotContains(t, res.Properties, "ReservedConcurrentExecutions", "the API draws on the unreserved pool")
				continue
			}
			assert.InDelta(t, defaultReservedConcurrency, res.Properties["ReservedConcurrentExecutions"], 0, fn)
		}
	})
	t.Run("cost-allocation tags from the context", func(t *testing.T) {
		tagged := 0
		for _, typ := range []string{"AWS::Lambda::Function", "AWS::DynamoDB::Table", "AWS::StepFunctions::StateMachine", "AWS::SNS::Topic"} {
			for id, r := range cfn.Resources {
				if r.Type != typ {
					continue
				}
				b, err := json.Marshal(r.Properties["Tags"])
				require.NoError(t, err)
				for k, v := range testTags {
					assert.Contains(t, string(b), fmt.Sprintf(`{"Key":%q,"Value":%q}`, k, v), "%s %s", typ, id)
				}
				tagged++
			}
		}
		assert.Greater(t, tagged, len(fns))
	})
	t.Run("the table is in a backup plan", func(t *testing.T) {
		tableID, _ := cfn.byID(t, "AWS::DynamoDB::Table", "Table")
		_, plan := cfn.one(t, "AWS::Backup::BackupPlan")
		b, err := json.Marshal(plan.Properties["BackupPlan"])
		require.NoError(t, err)
		var p struct {
			BackupPlanName string `json:"BackupPlanName"`
			Rules          []struct {
				RuleName           string `json:"RuleName"`
				ScheduleExpression string `json:"ScheduleExpression"`
				Lifecycle          struct {
					DeleteAfterDays float64 `json:"DeleteAfterDays"`
				} `json:"Lifecycle"`
			} `json:"BackupPlanRule"`
		}
		require.NoError(t, json.Unmarshal(b, &p))
		assert.Equal(t, "maasflow-prod-table", p.BackupPlanName)
		days := map[string]float64{}
		for _, r := range p.Rules {
			days[r.RuleName] = r.Lifecycle.DeleteAfterDays
			assert.True(t, strings.HasPrefix(r.ScheduleExpression, "cron("), r.ScheduleExpression)
		}
		assert.Equal(t, map[string]float64{"Daily": dailyBackupDays, "Monthly": monthlyBackupDays}, days)
		_, vault := cfn.one(t, "AWS::Backup::BackupVault")
		assert.Equal(t, "maasflow-prod-backups", vault.Properties["BackupVaultName"])
		assert.Equal(t, "Retain", vault.DeletionPolicy)
		_, sel := cfn.one(t, "AWS::Backup::BackupSelection")
		s, err := json.Marshal(sel.Properties["BackupSelection"])
		require.NoError(t, err)
		assert.Contains(t, string(s), `"`+tableID+`"`, "the selection names the table")
		roleID, _ := getAtt(sel.Properties["BackupSelection"].(map[string]any)["IamRoleArn"])
		assert.Equal(t, "BackupPlanTableRole", functionIDPrefix(roleID), "the backup role checkGrants exempts")
	})
	t.Run("table grants are item calls on the table and queries on its indexes", func(t *testing.T) {
		for _, s := range cfn.statements(t) {
			for _, a := range s.actions {
				assert.NotContains(t, []string{"dynamodb:BatchWriteItem", "dynamodb:BatchGetItem", "dynamodb:Scan"}, a, "%s", s)
				if strings.HasPrefix(a, "dynamodb:") && a != "dynamodb:Query" {
					for _, r := range s.resources {
						assert.NotContains(t, r, "/index/", "%s on an index: %s", a, s)
					}
				}
			}
		}
	})
}

func TestProductionSettingsValidated(t *testing.T) {
	src, err := LoadSources("..")
	require.NoError(t, err)
	p := &MaasflowStackProps{Stage: devStage, Sources: src, AssetDir: fixtureAssets(t, src.Functions),
		ReservedConcurrency: -1, Tags: map[string]string{"aws:owner": "x", "maasflow:stage": "y"},
		CLICallbackURLs: []string{"http://example.com/callback", "https://ok.example.com/cb", "http://localhost:8400/callback"},
		APIDomainName:   "api.example.com"}
	err = p.Validate()
	require.Error(t, err)
	for _, want := range []string{ctxReservedConcurrency, `tag key "aws:owner"`, `tag key "maasflow:stage"`,
		ctxCLICallbackURLs + `: "http://example.com/callback"`, "a custom domain needs both"} {
		assert.Contains(t, err.Error(), want)
	}
	assert.NotContains(t, err.Error(), "ok.example.com")
	assert.NotContains(t, err.Error(), "localhost:8400")
}

func TestContextTagsAndInt(t *testing.T) {
	requireNode(t)
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{
		ctxTags: "cost-center=gpu, owner = platform", ctxReservedConcurrency: "4", "obj": map[string]any{"a": "b"},
		"bad": "novalue", "n": 2.5,
	}})
	tags, err := contextTags(app, ctxTags)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"cost-center": "gpu", "owner": "platform"}, tags)
	tags, err = contextTags(app, "obj")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "b"}, tags)
	_, err = contextTags(app, "bad")
	require.ErrorContains(t, err, "is not key=value")
	n, err := contextInt(app, ctxReservedConcurrency, 10)
	require.NoError(t, err)
	assert.Equal(t, 4, n)
	n, err = contextInt(app, "absent", 10)
	require.NoError(t, err)
	assert.Equal(t, 10, n)
	_, err = contextInt(app, "n", 10)
	require.ErrorContains(t, err, "whole number")
}
