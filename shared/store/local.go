package store

import (
	"context"
	"strings"

	"github.com/truora/minidyn/aws-v2/client"
	"github.com/truora/minidyn/interpreter"
	mtypes "github.com/truora/minidyn/types"

	"github.com/maasflow/maasflow/shared/store/boltdb"
)

// NewLocalDB returns local mode's database engine (package boltdb) on a
// throwaway file, with table (DefaultTable when empty) created: the store
// as local mode runs it, for tests and tools without a data directory.
func NewLocalDB(ctx context.Context, table string) (*boltdb.DB, error) {
	db, err := boltdb.NewTemp()
	if err != nil {
		return nil, err
	}
	if err := CreateTable(ctx, db, table); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

// OpenLocalDB opens local mode's database file at path (creating it, and
// table, when missing). Its errors are boltdb's: *boltdb.InUseError,
// *boltdb.DamagedError, *boltdb.NewerVersionError.
func OpenLocalDB(ctx context.Context, path, table string, check bool) (*boltdb.DB, error) {
	db, err := boltdb.Open(path, boltdb.Options{Check: check})
	if err != nil {
		return nil, err
	}
	if err := CreateTable(ctx, db, table); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

// NewMinidyn returns minidyn (github.com/truora/minidyn), an independent
// implementation of the DynamoDB API, with table (DefaultTable when empty)
// created. The store's tests run on it as well as on NewLocalDB, so the
// conditional writes are checked against DynamoDB's semantics by code the
// project did not write.
//
// minidyn evaluates a Query's key condition on every item of the index,
// parsing the expression and converting the whole item each time. The
// store's key conditions are few and fixed, so they are registered here as
// Go matchers (minidyn's native interpreter); conditions and expressions
// without a matcher still go through minidyn's own evaluator, except
// update expressions, which must all be registered. So the client is for
// the store's table only.
func NewMinidyn(ctx context.Context, table string) (*client.Client, error) {
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
