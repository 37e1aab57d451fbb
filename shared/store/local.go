package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/truora/minidyn/aws-v2/client"
	"github.com/truora/minidyn/interpreter"
	mtypes "github.com/truora/minidyn/types"
)

// NewLocalDB returns the in-memory DynamoDB that local mode and tests run
// the store against: minidyn with table (DefaultTable when empty) created.
//
// minidyn evaluates a Query's key condition on every item of the index,
// parsing the expression and converting the whole item each time, which
// makes a page out of 10,000 onboardings cost a good part of a second. The
// store's key conditions are few and fixed, so they are registered here as
// Go matchers (minidyn's native interpreter); conditions and expressions
// without a matcher still go through minidyn's own evaluator, except
// update expressions, which must all be registered. So the client is for
// the store's table only.
func NewLocalDB(ctx context.Context, table string) (*client.Client, error) {
	if table == "" {
		table = DefaultTable
	}
	db := client.NewClient()
	if err := CreateTable(ctx, db, table); err != nil {
		return nil, err
	}
	native := db.GetNativeInterpreter()
	native.AddMatcher(table, interpreter.ExpressionTypeKey, exprPartition, attrEquals(AttrPK, ":pk"))
	native.AddMatcher(table, interpreter.ExpressionTypeKey, exprPrefix, func(item, values map[string]*mtypes.Item) bool {
		sk, prefix := sValue(item[AttrSK]), sValue(values[":prefix"])
		return attrEquals(AttrPK, ":pk")(item, values) && sk != nil && prefix != nil && strings.HasPrefix(*sk, *prefix)
	})
	for _, ix := range Indexes() {
		native.AddMatcher(table, interpreter.ExpressionTypeKey, exprIndexPartition(ix.PartitionKey), attrEquals(ix.PartitionKey, ":pk"))
	}
	native.AddUpdater(table, exprConsume, func(item, values map[string]*mtypes.Item) {
		item["consumed_at"] = values[":consumed"]
	})
	native.AddUpdater(table, exprRevoke, func(item, values map[string]*mtypes.Item) {
		item["revoked_at"] = values[":revoked"]
	})
	native.AddUpdater(table, exprRevokeClosed, func(item, values map[string]*mtypes.Item) {
		item["revoked_at"] = values[":revoked"]
		item[revokedReasonAttr] = values[":reason"]
	})
	native.AddUpdater(table, exprRefused, func(item, values map[string]*mtypes.Item) {
		item["refused_at"] = values[":refused"]
	})
	db.ActivateNativeInterpreter()
	return db, nil
}

// OpenLocal is local mode's database: NewLocalDB with the journal in dir
// replayed into it, so state survives a restart. Hand the Journal to New
// and Close it on shutdown.
func OpenLocal(ctx context.Context, dir, table string) (*Journal, error) {
	db, err := NewLocalDB(ctx, table)
	if err != nil {
		return nil, err
	}
	j, err := OpenJournal(ctx, db, dir)
	if err != nil {
		return nil, fmt.Errorf("open local database in %s: %w", dir, err)
	}
	return j, nil
}

// attrEquals matches items whose string attribute attr equals the
// expression value named value.
func attrEquals(attr, value string) interpreter.MatcherFunc {
	return func(item, values map[string]*mtypes.Item) bool {
		got, want := sValue(item[attr]), sValue(values[value])
		return got != nil && want != nil && *got == *want
	}
}

func sValue(v *mtypes.Item) *string {
	if v == nil {
		return nil
	}
	return v.S
}
