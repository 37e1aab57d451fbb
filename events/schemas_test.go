package schemas

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

const (
	started   = "node.onboarding.started"
	completed = "node.onboarding.completed"
	failed    = "node.onboarding.failed"
	manual    = "node.onboarding.manual_intervention_required"
)

// seedSecret must never appear in a validation error.
const seedSecret = "SEEDSECRET-7d1f0c"

func detail(detailType string) map[string]any {
	d := map[string]any{
		"site_id":        "site-1",
		"onboarding_id":  "onb-01HZX",
		"node_id":        "node-9",
		"maas_system_id": "4y3h7n",
		"hostname":       "gpu-c07u31.dc1",
		"correlation_id": "corr-abc",
		"attempt":        1,
		"stage":          "wait_enrollment",
		"occurred_at":    "2025-01-02T03:04:05.678Z",
	}
	switch detailType {
	case started:
		d["status"] = "running"
	case completed:
		d["status"] = "completed"
	case failed:
		d["status"] = "failed"
		d["error"] = map[string]any{"code": "SiteProbeUnhealthyError", "message": "site probe is not healthy"}
	case manual:
		d["status"] = "manual_intervention"
		d["error"] = map[string]any{"code": "AmbiguousMachineMatchError", "message": "2 machines match hostname"}
	}
	return d
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestDetailTypes(t *testing.T) {
	assert.Equal(t, []string{decomCompleted, decomFailed, decomManual, decomStarted, drift, completed, failed, manual, started}, DetailTypes())
}

// onboardingDetailTypes are the detail types that share the onboarding
// detail shape.
func onboardingDetailTypes() []string {
	var out []string
	for _, dt := range DetailTypes() {
		if strings.HasPrefix(dt, "node.onboarding.") {
			out = append(out, dt)
		}
	}
	return out
}

func TestValidateAcceptsGoodDetails(t *testing.T) {
	for _, dt := range onboardingDetailTypes() {
		t.Run(dt, func(t *testing.T) {
			require.NoError(t, Validate(dt, mustJSON(t, detail(dt))))

			minimal := detail(dt)
			delete(minimal, "status")
			delete(minimal, "stage")
			delete(minimal, "error")
			assert.NoError(t, Validate(dt, mustJSON(t, minimal)), "status, stage and error are optional")
		})
	}
	t.Run("ids not known yet on started", func(t *testing.T) {
		d := detail(started)
		d["maas_system_id"] = ""
		d["node_id"] = ""
		assert.NoError(t, Validate(started, mustJSON(t, d)))
	})
}

func TestValidateRejects(t *testing.T) {
	required := []string{"site_id", "onboarding_id", "node_id", "maas_system_id", "hostname", "correlation_id", "attempt", "occurred_at"}
	type tc struct {
		name       string
		detailType string
		edit       func(map[string]any)
		want       string
	}
	var tests []tc
	for _, dt := range onboardingDetailTypes() {
		for _, f := range required {
			tests = append(tests, tc{
				name: dt + " without " + f, detailType: dt,
				edit: func(d map[string]any) { delete(d, f) },
				want: "/: missing properties " + f,
			})
		}
		tests = append(tests,
			tc{name: dt + " with a token field", detailType: dt,
				edit: func(d map[string]any) { d["enrollment_token"] = seedSecret },
				want: "/: unexpected properties enrollment_token"},
			tc{name: dt + " attempt as string", detailType: dt,
				edit: func(d map[string]any) { d["attempt"] = "1" }, want: "/attempt: got string, want integer"},
			tc{name: dt + " attempt zero", detailType: dt,
				edit: func(d map[string]any) { d["attempt"] = 0 }, want: "/attempt: minimum"},
			tc{name: dt + " occurred_at not RFC 3339", detailType: dt,
				edit: func(d map[string]any) { d["occurred_at"] = "yesterday " + seedSecret }, want: "/occurred_at: not a valid date-time"},
			tc{name: dt + " hostname not RFC 1123", detailType: dt,
				edit: func(d map[string]any) { d["hostname"] = "bad_host " + seedSecret }, want: "/hostname: pattern"},
			tc{name: dt + " empty site", detailType: dt,
				edit: func(d map[string]any) { d["site_id"] = "" }, want: "/site_id: minLength"},
			tc{name: dt + " unknown status", detailType: dt,
				edit: func(d map[string]any) { d["status"] = seedSecret }, want: "/status: enum"},
		)
	}
	tests = append(tests,
		tc{name: "error on started", detailType: started,
			edit: func(d map[string]any) { d["error"] = map[string]any{"code": "X", "message": "y"} },
			want: "/: unexpected properties error"},
		tc{name: "error on completed", detailType: completed,
			edit: func(d map[string]any) { d["error"] = map[string]any{"code": "X", "message": "y"} },
			want: "/: unexpected properties error"},
		tc{name: "completed without MAAS system id", detailType: completed,
			edit: func(d map[string]any) { d["maas_system_id"] = "" }, want: "/maas_system_id: minLength"},
		tc{name: "completed without node id", detailType: completed,
			edit: func(d map[string]any) { d["node_id"] = "" }, want: "/node_id: minLength"},
		tc{name: "completed with failed status", detailType: completed,
			edit: func(d map[string]any) { d["status"] = "failed" }, want: "/status: enum"},
		tc{name: "failed error without code", detailType: failed,
			edit: func(d map[string]any) { d["error"] = map[string]any{"message": "y"} }, want: "/error: missing properties code"},
		tc{name: "manual error with a secret field", detailType: manual,
			edit: func(d map[string]any) {
				d["error"] = map[string]any{"code": "X", "message": "y", "bmc_password": seedSecret}
			}, want: "/error: unexpected properties bmc_password"},
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := detail(tt.detailType)
			tt.edit(d)
			err := Validate(tt.detailType, mustJSON(t, d))
			var se *DetailSchemaError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tt.detailType, se.DetailType)
			assert.Contains(t, se.Problems, tt.want)
			assert.NotContains(t, err.Error(), seedSecret, "errors name fields, never values")
		})
	}
}

func TestValidateRejectsNonObjects(t *testing.T) {
	tests := []struct {
		name   string
		detail string
		want   string
	}{
		{name: "not JSON", detail: `{"site_id":`, want: "detail is not a single JSON value"},
		{name: "two values", detail: `{} {}`, want: "detail is not a single JSON value"},
		{name: "null", detail: `null`, want: "/: got null, want object"},
		{name: "array", detail: `[]`, want: "/: got array, want object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(started, []byte(tt.detail))
			var se *DetailSchemaError
			require.ErrorAs(t, err, &se)
			assert.Contains(t, se.Problems, tt.want)
		})
	}
}

func TestValidateUnknownType(t *testing.T) {
	for _, dt := range []string{"node.retirement.started", "", "../schemas"} {
		err := Validate(dt, []byte(`{}`))
		var ue *UnknownDetailTypeError
		require.ErrorAs(t, err, &ue, dt)
		assert.Equal(t, dt, ue.DetailType)
	}
	_, err := Schema("node.onboarding.nope")
	var ue *UnknownDetailTypeError
	assert.ErrorAs(t, err, &ue)
}

func TestSchemaFiles(t *testing.T) {
	for _, dt := range onboardingDetailTypes() {
		t.Run(dt, func(t *testing.T) {
			raw, err := Schema(dt)
			require.NoError(t, err)
			var doc struct {
				Schema               string         `json:"$schema"`
				ID                   string         `json:"$id"`
				Title                string         `json:"title"`
				Type                 string         `json:"type"`
				AdditionalProperties *bool          `json:"additionalProperties"`
				Required             []string       `json:"required"`
				Properties           map[string]any `json:"properties"`
			}
			require.NoError(t, json.Unmarshal(raw, &doc))
			assert.Equal(t, "https://json-schema.org/draft/2020-12/schema", doc.Schema)
			assert.True(t, strings.HasSuffix(doc.ID, "/"+dt+".schema.json"), doc.ID)
			assert.Equal(t, dt, doc.Title)
			assert.Equal(t, "object", doc.Type)
			require.NotNil(t, doc.AdditionalProperties)
			assert.False(t, *doc.AdditionalProperties)
			assert.Subset(t, doc.Required, []string{"site_id", "onboarding_id", "node_id", "maas_system_id", "hostname", "correlation_id", "attempt"})
			for _, f := range doc.Required {
				assert.Contains(t, doc.Properties, f)
			}
			_, hasError := doc.Properties["error"]
			assert.Equal(t, dt == failed || dt == manual, hasError, "error only on failed and manual intervention")
		})
	}
}

func TestAsyncAPIDescribesEverySchema(t *testing.T) {
	raw, err := os.ReadFile("asyncapi.yaml")
	require.NoError(t, err)
	var doc struct {
		AsyncAPI   string `yaml:"asyncapi"`
		Components struct {
			Messages map[string]struct {
				Name    string `yaml:"name"`
				Payload struct {
					Ref string `yaml:"$ref"`
				} `yaml:"payload"`
			} `yaml:"messages"`
		} `yaml:"components"`
		Channels map[string]struct {
			Messages map[string]struct {
				Ref string `yaml:"$ref"`
			} `yaml:"messages"`
		} `yaml:"channels"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &doc))
	assert.Equal(t, "3.0.0", doc.AsyncAPI)

	var names []string
	for key, m := range doc.Components.Messages {
		names = append(names, m.Name)
		assert.Equal(t, "./"+m.Name+".schema.json", m.Payload.Ref, key)
		_, err := os.Stat(strings.TrimPrefix(m.Payload.Ref, "./"))
		require.NoError(t, err, "payload file of %s exists", key)
		found := false
		for _, ch := range doc.Channels {
			for _, cm := range ch.Messages {
				found = found || cm.Ref == "#/components/messages/"+key
			}
		}
		assert.True(t, found, "message %s is on a channel", key)
	}
	assert.ElementsMatch(t, DetailTypes(), names)
}

func BenchmarkValidate(b *testing.B) {
	raw, err := json.Marshal(detail(failed))
	require.NoError(b, err)
	require.NoError(b, Validate(failed, raw), "compile the schemas outside the timed loop")
	b.ReportAllocs()
	for b.Loop() {
		if err := Validate(failed, raw); err != nil {
			b.Fatal(err)
		}
	}
}
