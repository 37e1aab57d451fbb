package api

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/store"
)

// TestWrongInputsAreRefusedNamingTheField: inputs the API once accepted
// though they were wrong, each a 4xx naming its field, with nothing
// written.
func TestWrongInputsAreRefusedNamingTheField(t *testing.T) {
	h := newHarness(t)
	f := h.fixture()
	withReconciler(h, fakeSiteMAAS{})
	pending := h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", f.onboarding("gpu-held"))
	sites := "/api/v1/admin/maas-sites"
	onboarding := func(host, ip string) string {
		return fmt.Sprintf(`{"site_id":%q,"profile_id":%q,"sku_id":%q,"hostname":%q,"ipmi_ip":%q}`, f.site, f.profile, f.sku, host, ip)
	}
	tests := []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
		field, message           string
	}{
		{name: "port out of range", method: "POST", path: sites, body: `{"name":"p1","maas_url":"http://maas.example:99999/MAAS"}`,
			field: "maas_url", message: "port between 1 and 65535"},
		{name: "port out of range in a patch", method: "PATCH", path: sites + "/" + f.site, body: `{"maas_url":"https://maas.example:0/MAAS"}`,
			field: "maas_url", message: "port"},
		{name: "loopback BMC", method: "POST", path: "/api/v1/admin/onboardings", body: onboarding("gpu-a1", "127.0.0.1"),
			field: "ipmi_ip", message: "loopback"},
		{name: "link-local BMC", method: "POST", path: "/api/v1/admin/onboardings", body: onboarding("gpu-a2", "169.254.1.1"),
			field: "ipmi_ip", message: "link-local"},
		{name: "unspecified BMC", method: "POST", path: "/api/v1/admin/onboardings", body: onboarding("gpu-a3", "0.1.2.3"),
			field: "ipmi_ip", message: "unspecified"},
		{name: "multicast BMC", method: "POST", path: "/api/v1/admin/onboardings", body: onboarding("gpu-a4", "239.1.1.1"),
			field: "ipmi_ip", message: "multicast"},
		{name: "broadcast BMC", method: "POST", path: "/api/v1/admin/onboardings", body: onboarding("gpu-a5", "255.255.255.255"),
			field: "ipmi_ip", message: "broadcast"},
		{name: "BMC row of a batch", method: "POST", path: "/api/v1/admin/onboardings/batch",
			body:  fmt.Sprintf(`{"site_id":%q,"profile_id":%q,"sku_id":%q,"nodes":[{"hostname":"gpu-b1","ipmi_ip":"127.0.0.2"}]}`, f.site, f.profile, f.sku),
			field: "nodes[0].ipmi_ip", message: "loopback"},
		{name: "an address as host name", method: "POST", path: "/api/v1/admin/onboardings", body: onboarding("10.0.0.1", "10.0.0.1"),
			field: "hostname", message: "not an IP address"},
		{name: "numeric top-level label", method: "POST", path: "/api/v1/admin/onboardings", body: onboarding("gpu.42", "10.0.0.42"),
			field: "hostname", message: "not an IP address"},
		{name: "trailing dot", method: "POST", path: "/api/v1/admin/onboardings", body: onboarding("abc.", "10.0.0.43"),
			field: "hostname", message: "must not end with a dot"},
		{name: "null on a SKU patch", method: "PATCH", path: "/api/v1/admin/skus/" + f.sku, body: `{"active":null}`,
			field: "active", message: "must not be null"},
		{name: "null name on a site patch", method: "PATCH", path: sites + "/" + f.site, body: `{"name":null}`,
			field: "name", message: "must not be null"},
		{name: "null architecture on a profile patch", method: "PATCH", path: sites + "/" + f.site + "/profiles/" + f.profile, body: `{"architecture":null}`,
			field: "architecture", message: "must not be null"},
		{name: "empty site_id of a reconcile run", method: "POST", path: reconPath + "/run", body: `{"site_id":""}`,
			field: "site_id", message: "omit it to reconcile every site"},
		{name: "null site_id of a reconcile run", method: "POST", path: reconPath + "/run", body: `{"site_id":null}`,
			field: "site_id", message: "omit it"},
		{name: "NEL in a reason", method: "POST", path: "/api/v1/admin/onboardings/" + pending["id"].(string) + "/cancel", body: "{\"reason\":\"ops\u0085injected\"}",
			field: "reason", message: "U+0085"},
		{name: "bidirectional override in a reason", method: "POST", path: "/api/v1/admin/onboardings/" + pending["id"].(string) + "/cancel", body: "{\"reason\":\"ok\u202egnp.exe\"}",
			field: "reason", message: "U+202E"},
		{name: "zero-width space in a description", method: "PATCH", path: "/api/v1/admin/skus/" + f.sku, body: "{\"description\":\"a\u200bb\"}",
			field: "description", message: "format characters"},
		{name: "line separator in a description", method: "PATCH", path: sites + "/" + f.site, body: "{\"description\":\"a\u2028b\"}",
			field: "description", message: "U+2028"},
		{name: "invalid UTF-8", method: "POST", path: "/api/v1/admin/skus", body: "{\"id\":\"x1\",\"gpu_model\":\"H\xff100\",\"gpus_total\":8}",
			field: "request body", message: "not valid UTF-8"},
		{name: "text/plain body", method: "POST", path: "/api/v1/admin/skus", body: `{"id":"x2","gpu_model":"H100","gpus_total":8}`,
			header: map[string]string{"Content-Type": "text/plain"}, status: http.StatusUnsupportedMediaType,
			field: "Content-Type", message: "application/json"},
		{name: "JSON in another charset", method: "POST", path: "/api/v1/admin/skus", body: `{"id":"x3","gpu_model":"H100","gpus_total":8}`,
			header: map[string]string{"Content-Type": "application/json; charset=latin1"}, status: http.StatusUnsupportedMediaType,
			field: "Content-Type", message: "UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := h.do(call{method: tc.method, path: tc.path, body: tc.body, token: adminToken, header: tc.header})
			want := tc.status
			if want == 0 {
				want = http.StatusBadRequest
			}
			require.Equal(t, want, r.status, "%s", r.body)
			_, msg := r.errorOf(t)
			assert.Equal(t, tc.field, r.json(t)["error"].(map[string]any)["field"])
			assert.Contains(t, msg, tc.message)
		})
	}

	// Nothing was written: the one onboarding and the one site remain,
	// the SKU and the site are as they were, no reconcile run started.
	list := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboardings", nil)
	assert.Len(t, list["items"], 1)
	assert.Len(t, h.mustAdmin(http.StatusOK, "GET", sites, nil)["items"], 1)
	assert.Equal(t, true, h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/skus/"+f.sku, nil)["active"])
	for _, a := range h.auditFor("reconciliation.run") {
		assert.Equal(t, "failure:invalid_request", a.Result, "no reconcile run started")
	}
	assert.Equal(t, "pending", h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboardings/"+pending["id"].(string), nil)["status"])

	// What stays accepted: a body without a Content-Type, a +json type,
	// an explicit port, printable text beyond ASCII, and a run over every
	// site when site_id is omitted.
	r := h.do(call{method: "POST", path: "/api/v1/admin/skus", body: `{"id":"ok1","gpu_model":"H100","gpus_total":8}`, token: adminToken,
		header: map[string]string{"Content-Type": "application/merge-patch+json; charset=UTF-8"}})
	assert.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	h.mustAdmin(http.StatusCreated, "POST", sites, `{"name":"p2","maas_url":"http://maas.example:5240/MAAS","description":"Zürich – hall 2"}`)
	h.mustAdmin(http.StatusAccepted, "POST", reconPath+"/run", `{}`)
}

// TestOnboardingExistsRowsNameTheirField: a batch row refused because its
// host or its BMC is held by an open onboarding names which.
func TestOnboardingExistsRowsNameTheirField(t *testing.T) {
	h := newHarness(t)
	f := h.fixture()
	h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", f.onboarding("gpu-h1"))
	b := h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings/batch", map[string]any{
		"site_id": f.site, "profile_id": f.profile, "sku_id": f.sku,
		"nodes": []map[string]any{{"hostname": "gpu-h1", "ipmi_ip": "10.77.0.1"}, {"hostname": "gpu-h2", "ipmi_ip": bmcFor("gpu-h1")}},
	})
	items := b["items"].([]any)
	require.Len(t, items, 2)
	for i, field := range []string{"hostname", "ipmi_ip"} {
		e := items[i].(map[string]any)["error"].(map[string]any)
		assert.Equal(t, "onboarding_exists", e["code"], e)
		assert.Equal(t, field, e["field"], e)
	}
}

// TestSKUPatchesUnderContentionAllSucceed: patches set values whatever
// they were, so 16 at once all answer 200 and the SKU ends as one of them.
func TestSKUPatchesUnderContentionAllSucceed(t *testing.T) {
	h := newHarness(t)
	sku := h.sku("h100-busy")
	const n = 16
	statuses := make([]int, n)
	bodies := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := h.do(call{method: "PATCH", path: "/api/v1/admin/skus/" + sku, token: adminToken,
				body: fmt.Sprintf(`{"description":"patch %d"}`, i)})
			statuses[i], bodies[i] = r.status, string(r.body)
		})
	}
	wg.Wait()
	for i := range n {
		assert.Equal(t, http.StatusOK, statuses[i], "patch %d: %s", i, bodies[i])
	}
	got := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/skus/"+sku, nil)["description"].(string)
	assert.True(t, strings.HasPrefix(got, "patch "), got)
	assert.Len(t, h.auditFor("sku.update"), n)
}

// TestUncleanPathsAreNotRedirected: ServeMux would redirect a path with .
// or .. segments or doubled slashes to its cleaned form; the API answers
// 404 and redirects nowhere.
func TestUncleanPathsAreNotRedirected(t *testing.T) {
	h := newHarness(t)
	f := h.fixture()
	for _, p := range []string{
		"/api/v1/admin/maas-sites/../probe",
		"/api/v1/admin/maas-sites/" + f.site + "/../" + f.site + "/probe",
		"/api/v1/admin/maas-sites/./" + f.site + "/probe",
		"/api/v1//admin/skus",
		"/api/v1/admin/skus/%2e%2e/x",
	} {
		r := h.do(call{method: "POST", path: p, token: adminToken})
		assert.Equal(t, http.StatusNotFound, r.status, "%s: %s", p, r.body)
		assert.Empty(t, r.header.Get("Location"), p)
	}
	assert.Empty(t, h.auditFor("site.probe")[1:], "only the fixture's probe")
}

// skuRival is a concurrent writer of SKU records: just before each of the
// next rivals conditional writes of a SKU, it writes the stored record at
// its next version, so the write loses as it would to another request.
type skuRival struct {
	store.DynamoDB
	rivals *atomic.Int32
}

func (r skuRival) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if err := r.race(ctx, in.TableName, in.Item, in.ConditionExpression); err != nil {
		return nil, err
	}
	return r.DynamoDB.PutItem(ctx, in, opts...)
}

func (r skuRival) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, it := range in.TransactItems {
		if it.Put != nil {
			if err := r.race(ctx, it.Put.TableName, it.Put.Item, it.Put.ConditionExpression); err != nil {
				return nil, err
			}
		}
	}
	return r.DynamoDB.TransactWriteItems(ctx, in, opts...)
}

// race writes the stored SKU that item would replace at its next version.
func (r skuRival) race(ctx context.Context, table *string, item map[string]types.AttributeValue, cond *string) error {
	sk, _ := item[store.AttrSK].(*types.AttributeValueMemberS)
	if cond == nil || sk == nil || !strings.HasPrefix(sk.Value, "SKU#") || r.rivals.Load() <= 0 {
		return nil
	}
	out, err := r.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, ConsistentRead: new(true),
		Key: map[string]types.AttributeValue{store.AttrPK: item[store.AttrPK], store.AttrSK: sk}})
	if err != nil || out.Item == nil {
		return err
	}
	v, _ := out.Item["version"].(*types.AttributeValueMemberN)
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		return err
	}
	r.rivals.Add(-1)
	stored := maps.Clone(out.Item)
	stored["version"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(n+1, 10)}
	_, err = r.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: stored})
	return err
}

// TestSKUPatchOutlastsARivalBeyondTheStoreRetries: a patch that loses its
// version race more often than the store retries is applied again, not
// answered with an undocumented 409.
func TestSKUPatchOutlastsARivalBeyondTheStoreRetries(t *testing.T) {
	rivals := &atomic.Int32{}
	h := newHarness(t, func(db store.DynamoDB) store.DynamoDB { return skuRival{DynamoDB: db, rivals: rivals} })
	sku := h.sku("h100-rival")
	h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/skus/"+sku, nil)
	rivals.Store(12)
	got := h.mustAdmin(http.StatusOK, "PATCH", "/api/v1/admin/skus/"+sku, map[string]any{"description": "after the rival"})
	assert.Equal(t, "after the rival", got["description"])
	assert.Zero(t, rivals.Load(), "the rival won each of its rounds")
}

// TestSKUPatchAgainstAnEndlessRivalIsADocumented409: a patch that loses
// every round gives up with 409 and Retry-After, having changed nothing.
func TestSKUPatchAgainstAnEndlessRivalIsADocumented409(t *testing.T) {
	rivals := &atomic.Int32{}
	h := newHarness(t, func(db store.DynamoDB) store.DynamoDB { return skuRival{DynamoDB: db, rivals: rivals} })
	sku := h.sku("h100-endless")
	rivals.Store(1 << 20)
	r := h.admin("PATCH", "/api/v1/admin/skus/"+sku, map[string]any{"description": "never"})
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	assert.Equal(t, "1", r.header.Get("Retry-After"))
	code, msg := r.errorOf(t)
	assert.Equal(t, CodeConflict, code)
	assert.Contains(t, msg, "retry")
	rivals.Store(0)
	assert.Empty(t, h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/skus/"+sku, nil)["description"])
}
