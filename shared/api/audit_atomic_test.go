package api

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/store"
)

// auditOutage is a DynamoDB that, once down is set, refuses every write of
// an audit row (alone or inside a transaction) and nothing else.
type auditOutage struct {
	store.DynamoDB
	down *atomic.Bool
}

var errAuditDown = errors.New("audit partition unavailable")

func isAuditItem(item map[string]types.AttributeValue) bool {
	pk, ok := item[store.AttrPK].(*types.AttributeValueMemberS)
	return ok && pk.Value == "AUDIT"
}

func (a auditOutage) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if a.down.Load() && isAuditItem(in.Item) {
		return nil, errAuditDown
	}
	return a.DynamoDB.PutItem(ctx, in, opts...)
}

func (a auditOutage) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, it := range in.TransactItems {
		if a.down.Load() && it.Put != nil && isAuditItem(it.Put.Item) {
			return nil, errAuditDown
		}
	}
	return a.DynamoDB.TransactWriteItems(ctx, in, opts...)
}

// TestAuditWriteFailureFailsTheMutation: when the audit entry cannot be
// written, each mutation answers 503 and its record is as it was.
func TestAuditWriteFailureFailsTheMutation(t *testing.T) {
	down := &atomic.Bool{}
	h := newHarness(t, func(db store.DynamoDB) store.DynamoDB { return auditOutage{DynamoDB: db, down: down} })
	fx := h.fixture()
	site := "/api/v1/admin/maas-sites/" + fx.site
	h.mustAdmin(http.StatusOK, "POST", site+"/roce-assignments", map[string]any{"items": []any{map[string]any{"hostname": "h1", "interface": "e1", "ipv4_cidr": "10.0.0.1/31"}}})
	rows := h.mustAdmin(http.StatusOK, "GET", site+"/roce-assignments", nil)["items"].([]any)
	running := h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", fx.onboarding("gpu-01"))
	auditBefore := len(h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/audit?limit=1000", nil)["items"].([]any))
	startsBefore := len(h.starter.calls)
	down.Store(true)

	for _, tc := range []struct {
		name, method, path string
		body               any
		unchanged          func(t *testing.T)
	}{
		{"site update", "PATCH", site, map[string]any{"description": "changed"}, func(t *testing.T) {
			t.Helper()
			assert.NotEqual(t, "changed", h.mustAdmin(http.StatusOK, "GET", site, nil)["description"])
		}},
		{"sku create", "POST", "/api/v1/admin/skus", map[string]any{"id": "b200", "gpu_model": "B200", "gpus_total": 8}, func(t *testing.T) {
			t.Helper()
			h.mustAdmin(http.StatusNotFound, "GET", "/api/v1/admin/skus/b200", nil)
		}},
		{"profile disable", "DELETE", site + "/profiles/" + fx.profile, nil, func(t *testing.T) {
			t.Helper()
			assert.Equal(t, "active", h.mustAdmin(http.StatusOK, "GET", site+"/profiles/"+fx.profile, nil)["status"])
		}},
		{"roce delete", "DELETE", site + "/roce-assignments/" + rows[0].(map[string]any)["id"].(string), nil, func(t *testing.T) {
			t.Helper()
			assert.Len(t, h.mustAdmin(http.StatusOK, "GET", site+"/roce-assignments", nil)["items"], 1)
		}},
		{"onboarding create", "POST", "/api/v1/admin/onboardings", fx.onboarding("gpu-02"), func(t *testing.T) {
			t.Helper()
			assert.Len(t, h.starter.calls, startsBefore, "no workflow started")
			list := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboardings?hostname=gpu-02", nil)
			assert.Empty(t, list["items"])
		}},
		{"onboarding cancel", "POST", "/api/v1/admin/onboardings/" + running["id"].(string) + "/cancel", nil, func(t *testing.T) {
			t.Helper()
			assert.Empty(t, h.stopper.calls, "the execution was not stopped")
			assert.Equal(t, "pending", h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboardings/"+running["id"].(string), nil)["status"])
		}},
		{"onboarding freeze", "POST", "/api/v1/admin/onboardings/" + running["id"].(string) + "/mark-manual-intervention", nil, func(t *testing.T) {
			t.Helper()
			assert.Empty(t, h.stopper.calls, "the execution was not stopped")
			assert.Equal(t, "pending", h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboardings/"+running["id"].(string), nil)["status"])
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Helper()
			r := h.admin(tc.method, tc.path, tc.body)
			require.Equal(t, http.StatusServiceUnavailable, r.status, "body: %s", r.body)
			code, msg := r.errorOf(t)
			assert.Equal(t, CodeUnavailable, code)
			assert.Contains(t, msg, "nothing was changed")
			tc.unchanged(t)
		})
	}
	down.Store(false)
	assert.Len(t, h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/audit?limit=1000", nil)["items"], auditBefore,
		"no entry of a change that did not happen")
}

// TestAuditEntryIsWrittenWithTheChange: a successful mutation's entry is
// written in the change's own transaction and keeps its content.
func TestAuditEntryIsWrittenWithTheChange(t *testing.T) {
	var txWithAudit atomic.Int32
	h := newHarness(t, func(db store.DynamoDB) store.DynamoDB { return &auditSpy{DynamoDB: db, carried: &txWithAudit} })
	fx := h.fixture()
	txWithAudit.Store(0)
	h.mustAdmin(http.StatusOK, "PATCH", "/api/v1/admin/skus/"+fx.sku, map[string]any{"description": "d"})
	assert.EqualValues(t, 1, txWithAudit.Load(), "the update and its entry in one transaction")
	entries := h.auditFor("sku.update")
	require.Len(t, entries, 1)
	assert.Equal(t, "alice", entries[0].Actor)
	assert.Equal(t, "sku:"+fx.sku, entries[0].Target)
	assert.Equal(t, "success", entries[0].Result)
	assert.NotEmpty(t, entries[0].CorrelationID)
}

// auditSpy counts transactions that write an audit row next to another item.
type auditSpy struct {
	store.DynamoDB
	carried *atomic.Int32
}

func (a *auditSpy) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	audit := 0
	for _, it := range in.TransactItems {
		if it.Put != nil && isAuditItem(it.Put.Item) {
			audit++
		}
	}
	if audit > 0 && len(in.TransactItems) > audit {
		a.carried.Add(1)
	}
	return a.DynamoDB.TransactWriteItems(ctx, in, opts...)
}
