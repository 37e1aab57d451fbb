package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// One fuzz target per request decoder. `go test` runs each target's seeds
// (the f.Add calls) every time; `make fuzz` (part of `make test`) also
// mutates them for a bounded time. Every body goes through the whole
// handler, so a panic, a 5xx, an answer that is not the envelope or that
// echoes a large input, or a leaked secret fails the target.

// fuzzSeeds are bodies every decoder is tried with: the shapes the strict
// decoder refuses, plus edge cases of the JSON grammar.
var fuzzSeeds = []string{
	``, ` `, `null`, `[]`, `{}`, `{`, `"x"`, `1`, `{"a":1}{"b":2}`,
	`{"name":"a","name":"b"}`, `{"NAME":"a"}`, `{"policy":{"deploy_retries":1,"deploy_retries":2}}`,
	`{"items":[{"hostname":"h","interface":"e","ipv4_cidr":"10.0.0.1/31"}]}`,
	`{"x":"` + strings.Repeat("\\u0000", 8) + `"}`, `{"a":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`,
	`{"name":"\ud800"}`, `{"token":"` + strings.Repeat("t", 600) + `"}`,
}

// fuzzRoute fuzzes the body of one route; seeds add to fuzzSeeds.
func fuzzRoute(f *testing.F, method string, path func(fixture) string, seeds ...string) {
	f.Helper()
	h := newHarness(f)
	fx := h.fixture()
	target := path(fx)
	for _, s := range append(fuzzSeeds, seeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequestWithContext(t.Context(), method, target, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+adminToken)
		rec := httptest.NewRecorder()
		h.handler.ServeHTTP(rec, req)
		checkFuzzAnswer(t, rec, body)
	})
}

func checkFuzzAnswer(t *testing.T, rec *httptest.ResponseRecorder, body []byte) {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body.Bytes())
	}
	out := rec.Body.Bytes()
	if rec.Code == http.StatusNoContent {
		return
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("answer is not a JSON object: %s", out)
	}
	if rec.Code >= 400 {
		e, ok := m["error"].(map[string]any)
		if !ok || e["code"] == "" || e["message"] == "" {
			t.Fatalf("no error envelope: %s", out)
		}
		if rec.Code == http.StatusBadRequest && e["field"] == nil {
			t.Fatalf("400 names no field: %s", out)
		}
		if len(out) > 2048 {
			t.Fatalf("error answer of %d bytes echoes the input", len(out))
		}
	}
	for _, secret := range []string{seedAPIKey, seedBMCPass, adminToken} {
		if bytes.Contains(out, []byte(secret)) {
			t.Fatalf("answer leaks a secret: %s", out)
		}
	}
}

const fuzzSites = "/api/v1/admin/maas-sites"

func FuzzCreateSite(f *testing.F) {
	fuzzRoute(f, "POST", func(fixture) string { return fuzzSites },
		`{"name":"s","maas_url":"http://maas.example/MAAS","policy":{"bootstrap":{"url":"http://x/","version":"1"}}}`)
}

func FuzzPatchSite(f *testing.F) {
	fuzzRoute(f, "PATCH", func(fx fixture) string { return fuzzSites + "/" + fx.site },
		`{"description":"d","policy":{"storage_layout":null,"deploy_retries":2}}`, `{"policy":null}`, `{"maas_url":"http://other/MAAS"}`)
}

func FuzzPutCredentials(f *testing.F) {
	fuzzRoute(f, "POST", func(fx fixture) string { return fuzzSites + "/" + fx.site + "/credentials" },
		`{"maas_api_key":"a:b:c","bmc_username":"u","bmc_password":"p"}`)
}

func FuzzCreateProfile(f *testing.F) {
	fuzzRoute(f, "POST", func(fx fixture) string { return fuzzSites + "/" + fx.site + "/profiles" },
		`{"name":"p","architecture":"amd64/generic","distro_series":"jammy","policy":{"roce_phase2":true}}`)
}

func FuzzPatchProfile(f *testing.F) {
	fuzzRoute(f, "PATCH", func(fx fixture) string { return fuzzSites + "/" + fx.site + "/profiles/" + fx.profile },
		`{"hwe_kernel":"ga-22.04","policy":{"enable_ssh":false}}`)
}

func FuzzUpsertRoCE(f *testing.F) {
	fuzzRoute(f, "POST", func(fx fixture) string { return fuzzSites + "/" + fx.site + "/roce-assignments" },
		`{"items":[{"hostname":"h","interface":"e","ipv4_cidr":"10.0.0.1/24"}]}`)
}

func FuzzCreateSKU(f *testing.F) {
	fuzzRoute(f, "POST", func(fixture) string { return "/api/v1/admin/skus" },
		`{"id":"h200","gpu_model":"H200","gpus_total":8,"active":false}`)
}

func FuzzPatchSKU(f *testing.F) {
	fuzzRoute(f, "PATCH", func(fx fixture) string { return "/api/v1/admin/skus/" + fx.sku },
		`{"active":false,"description":"d"}`)
}

func FuzzCreateOnboarding(f *testing.F) {
	fuzzRoute(f, "POST", func(fixture) string { return "/api/v1/admin/onboardings" },
		`{"site_id":"s","profile_id":"p","sku_id":"k","hostname":"gpu-01","ipmi_ip":"10.0.0.21"}`)
}

func FuzzCancelOnboarding(f *testing.F) {
	fuzzRoute(f, "POST", func(fixture) string { return "/api/v1/admin/onboardings/none/cancel" },
		`{"reason":"r"}`)
}

func FuzzEnroll(f *testing.F) {
	fuzzRoute(f, "POST", func(fixture) string { return "/api/v1/nodes/node-1/enroll" },
		`{"token":"abc"}`)
}

func FuzzCreateBatch(f *testing.F) {
	fuzzRoute(f, "POST", func(fixture) string { return "/api/v1/admin/onboardings/batch" },
		`{"site_id":"s","profile_id":"p","sku_id":"k","nodes":[{"hostname":"gpu-01","ipmi_ip":"10.0.0.21"},{"hostname":"gpu-02","ipmi_ip":"10.0.0.22"}]}`,
		`{"nodes":[{"hostname":"a","hostname":"b"}]}`)
}
