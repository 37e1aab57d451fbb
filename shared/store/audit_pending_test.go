package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

// auditRefusingDB fails every TransactWriteItems that writes an audit
// entry, as a DynamoDB that cannot take the audit row would.
type auditRefusingDB struct{ DynamoDB }

func (f auditRefusingDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	for _, it := range in.TransactItems {
		if it.Put != nil {
			if pk, ok := it.Put.Item[AttrPK].(*types.AttributeValueMemberS); ok && pk.Value == pkAudit {
				return nil, errInjected
			}
		}
	}
	return f.DynamoDB.TransactWriteItems(ctx, in, opts...)
}

func (f auditRefusingDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if pk, ok := in.Item[AttrPK].(*types.AttributeValueMemberS); ok && pk.Value == pkAudit {
		return nil, errInjected
	}
	return f.DynamoDB.PutItem(ctx, in, opts...)
}

func pendingEntry(action, target string) *PendingAudit {
	return NewPendingAudit(domain.AuditEntry{Time: t0, Actor: "alice", Action: action, Target: target, Result: "success", CorrelationID: "c1"})
}

// The first write of a request carries its audit entry, whatever call the
// store makes for it; the writes after it do not.
func TestPendingAuditRidesTheFirstWrite(t *testing.T) {
	s, _, _ := newTestStore(t)
	ctx := context.Background()
	mustSite(t, s, "s1", "one")

	for _, tc := range []struct {
		name  string
		write func(ctx context.Context) error
	}{
		{"put (create)", func(ctx context.Context) error {
			return s.CreateSKU(ctx, domain.SKU{ID: "h100", GPUModel: "H100", GPUsTotal: 8, Active: true})
		}},
		{"versioned update", func(ctx context.Context) error {
			_, err := s.UpdateSite(ctx, "s1", func(site *domain.Site) error { site.Description = "changed"; return nil })
			return err
		}},
		{"transaction", func(ctx context.Context) error {
			_, err := s.UpsertRoCEAssignments(ctx, "s1", []domain.RoCEAssignment{roce("gpu-01", "ens1f0", "10.1.0.2/31")})
			return err
		}},
		{"delete", func(ctx context.Context) error {
			return s.DeleteRoCEAssignment(ctx, "s1", RoCEAssignmentID("gpu-01", "ens1f0"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pendingEntry("x."+tc.name, "t")
			ctx := WithPendingAudit(ctx, p)
			require.NoError(t, tc.write(ctx))
			assert.True(t, p.Written())
			require.Len(t, auditOf(t, s, "x."+tc.name), 1)
			// A second write of the same request goes without it.
			_, err := s.UpdateSite(ctx, "s1", func(site *domain.Site) error { site.Description = tc.name; return nil })
			require.NoError(t, err)
			assert.Len(t, auditOf(t, s, "x."+tc.name), 1)
		})
	}
}

// An UpdateItem carrying the entry keeps its condition: a second revoke of
// the same token is the no-op it always was, and leaves the entry pending.
func TestPendingAuditRidesAConditionalUpdate(t *testing.T) {
	s, clk, _ := newTestStore(t)
	ctx := context.Background()
	hash := strings.Repeat("ab", 32)
	require.NoError(t, s.PutEnrollmentToken(ctx, domain.EnrollmentToken{Hash: hash, NodeID: "n1", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}))

	p := pendingEntry("node.bootstrap_bundle.reissue", "node:n1")
	require.NoError(t, s.RevokeEnrollmentToken(WithPendingAudit(ctx, p), hash, clk.Now()))
	assert.True(t, p.Written())
	tok, err := s.GetEnrollmentToken(ctx, hash)
	require.NoError(t, err)
	assert.NotNil(t, tok.RevokedAt)

	again := pendingEntry("node.bootstrap_bundle.reissue", "node:n1")
	require.NoError(t, s.RevokeEnrollmentToken(WithPendingAudit(ctx, again), hash, clk.Now()))
	assert.False(t, again.Written(), "nothing changed, nothing carried")
	assert.Len(t, auditOf(t, s, "node.bootstrap_bundle.reissue"), 1)
}

// A write refused by its own condition is the caller's answer (conflict,
// not found) and leaves the entry pending for what the request does next.
func TestPendingAuditStaysPendingWhenTheChangeIsRefused(t *testing.T) {
	s, _, _ := newTestStore(t)
	ctx := context.Background()
	mustSite(t, s, "s1", "one")

	p := pendingEntry("site.create", "site")
	err := s.CreateSite(WithPendingAudit(ctx, p), domain.Site{ID: "s1", Name: "again", MAASURL: "http://maas.example/MAAS"})
	require.ErrorAs(t, err, new(*ItemConflictError))
	err = s.DeleteRoCEAssignment(WithPendingAudit(ctx, p), "s1", RoCEAssignmentID("gpu-09", "ens1f0"))
	require.ErrorAs(t, err, new(*ItemNotFoundError))
	assert.False(t, p.Written())
	assert.Empty(t, auditOf(t, s, "site.create"))
}

// When the audit entry cannot be written, the change is not written
// either, and the error says so.
func TestAuditWriteFailureLeavesNothingChanged(t *testing.T) {
	_, clk, db := newTestStore(t)
	s := New(auditRefusingDB{db}, "", clk.Now)
	ctx := context.Background()
	mustSite(t, s, "s1", "one")

	p := pendingEntry("site.update", "site:s1")
	_, err := s.UpdateSite(WithPendingAudit(ctx, p), "s1", func(site *domain.Site) error { site.Description = "changed"; return nil })
	var auditErr *AuditWriteError
	require.ErrorAs(t, err, &auditErr)
	assert.Equal(t, "site.update", auditErr.Action)
	assert.False(t, p.Written())
	got, err := s.GetSite(ctx, "s1")
	require.NoError(t, err)
	assert.Empty(t, got.Description, "the change went with its audit entry")

	err = s.CreateSKU(WithPendingAudit(ctx, pendingEntry("sku.create", "sku:a")), domain.SKU{ID: "a", GPUModel: "H100", GPUsTotal: 8})
	require.ErrorAs(t, err, &auditErr)
	_, err = s.GetSKU(ctx, "a")
	require.ErrorAs(t, err, new(*ItemNotFoundError))

	_, err = s.UpsertRoCEAssignments(WithPendingAudit(ctx, pendingEntry("roce.upsert", "site:s1")), "s1",
		[]domain.RoCEAssignment{roce("gpu-01", "ens1f0", "10.1.0.2/31")})
	require.ErrorAs(t, err, &auditErr)
	rows, err := s.ListRoCEAssignments(ctx, "s1", "")
	require.NoError(t, err)
	assert.Empty(t, rows)

	// Without a pending entry, writes are as before.
	_, err = s.UpdateSite(ctx, "s1", func(site *domain.Site) error { site.Description = "plain"; return nil })
	require.NoError(t, err)
}

func auditOf(t *testing.T, s *Store, action string) []domain.AuditEntry {
	t.Helper()
	all, err := s.ListAudit(context.Background(), MaxAuditLimit)
	require.NoError(t, err)
	var out []domain.AuditEntry
	for _, e := range all {
		if e.Action == action {
			out = append(out, e)
		}
	}
	return out
}
