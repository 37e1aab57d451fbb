package boltdb

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const tbl = "t"

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func newDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "test.db"), Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = db.CreateTable(context.Background(), &dynamodb.CreateTableInput{TableName: aws.String(tbl),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("gpk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("gsk"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String("g"),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String("gpk"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("gsk"), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
	})
	require.NoError(t, err)
	return db
}

func put(t *testing.T, db *DB, item map[string]types.AttributeValue) {
	t.Helper()
	_, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: item})
	require.NoError(t, err)
}

func isValidation(err error) bool {
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "ValidationException"
}

func TestConditions(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	put(t, db, map[string]types.AttributeValue{"pk": s("a"), "sk": s("1"), "version": n("3"), "owner": s("x")})
	names := map[string]string{"#pk": "pk", "#v": "version", "#o": "owner", "#m": "missing"}
	values := map[string]types.AttributeValue{":v": n("3"), ":w": n("10"), ":o": s("x"), ":p": s("x-"), ":other": s("y")}
	cases := []struct {
		expr string
		want bool
	}{
		{"attribute_exists(#pk)", true},
		{"attribute_not_exists(#pk)", false},
		{"#v = :v", true},
		{"#v = :w", false},
		{"#v < :w", true}, // numbers compare as numbers: 3 < 10
		{"#v >= :w", false},
		{"#v <> :w", true},
		{"#o = :v", false}, // a string never equals a number
		{"begins_with(#o, :o)", true},
		{"begins_with(#o, :p)", false},
		{"#m = :o", false},
		{"#m <> :o", true},
		{"attribute_not_exists(#pk) OR #o = :o", true},
		{"attribute_not_exists(#pk) OR #o = :other", false},
		{"#v = :v AND NOT (#o = :other)", true},
		{"NOT attribute_exists(#m) AND (#v = :w OR #o = :o)", true},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			_, err := db.PutItem(ctx, &dynamodb.PutItemInput{
				TableName: aws.String(tbl), ConditionExpression: aws.String(c.expr),
				ExpressionAttributeNames: names, ExpressionAttributeValues: values,
				Item: map[string]types.AttributeValue{"pk": s("a"), "sk": s("1"), "version": n("3"), "owner": s("x")},
			})
			if c.want {
				require.NoError(t, err)
				return
			}
			_, failed := errors.AsType[*types.ConditionalCheckFailedException](err)
			assert.True(t, failed, "%v", err)
		})
	}
	for _, bad := range []string{"#v =", "size(#o) > :v", "#v = :undefined", "#undefined = :v", "(#v = :v", "#v == :v"} {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(tbl), ConditionExpression: aws.String(bad),
			ExpressionAttributeNames: names, ExpressionAttributeValues: values,
			Item: map[string]types.AttributeValue{"pk": s("a"), "sk": s("1")},
		})
		assert.True(t, isValidation(err), "%q: %v", bad, err)
	}
}

func TestUpdateItem(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	key := map[string]types.AttributeValue{"pk": s("a"), "sk": s("1")}
	out, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(tbl), Key: key,
		UpdateExpression:          aws.String("SET #x = :x, gpk = :g"),
		ExpressionAttributeNames:  map[string]string{"#x": "x"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":x": s("1"), ":g": s("G")},
		ReturnValues:              types.ReturnValueAllNew,
	})
	require.NoError(t, err, "an update creates an absent item")
	assert.Equal(t, map[string]types.AttributeValue{"pk": s("a"), "sk": s("1"), "x": s("1"), "gpk": s("G")}, out.Attributes)

	_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(tbl), Key: key, UpdateExpression: aws.String("SET #x = :x"),
		ConditionExpression:       aws.String("attribute_not_exists(#x)"),
		ExpressionAttributeNames:  map[string]string{"#x": "x"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":x": s("2")},
	})
	_, failed := errors.AsType[*types.ConditionalCheckFailedException](err)
	assert.True(t, failed)

	for _, bad := range []string{"REMOVE #x", "SET pk = :x", "SET #x = :x +"} {
		_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(tbl), Key: key, UpdateExpression: aws.String(bad),
			ExpressionAttributeNames:  map[string]string{"#x": "x"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":x": s("2")},
		})
		assert.True(t, isValidation(err), "%q: %v", bad, err)
	}
}

func TestTransactionIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	put(t, db, map[string]types.AttributeValue{"pk": s("taken"), "sk": s("1")})
	absent := func(pk string) types.TransactWriteItem {
		return types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(tbl), Item: map[string]types.AttributeValue{"pk": s(pk), "sk": s("1")},
			ConditionExpression: aws.String("attribute_not_exists(pk)"),
		}}
	}
	_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		absent("new"), absent("taken"),
		{Delete: &types.Delete{TableName: aws.String(tbl), Key: map[string]types.AttributeValue{"pk": s("taken"), "sk": s("2")}}},
	}})
	tc, ok := errors.AsType[*types.TransactionCanceledException](err)
	require.True(t, ok, "%v", err)
	var codes []string
	for _, r := range tc.CancellationReasons {
		codes = append(codes, aws.ToString(r.Code))
	}
	assert.Equal(t, []string{"None", "ConditionalCheckFailed", "None"}, codes)
	got, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: map[string]types.AttributeValue{"pk": s("new"), "sk": s("1")}})
	require.NoError(t, err)
	assert.Empty(t, got.Item, "nothing of a cancelled transaction is written")

	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{absent("x"), absent("x")}})
	assert.True(t, isValidation(err), "two operations on one item: %v", err)

	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		absent("new"),
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(tbl), Key: map[string]types.AttributeValue{"pk": s("taken"), "sk": s("1")},
			ConditionExpression: aws.String("attribute_exists(pk)")}},
	}})
	require.NoError(t, err)
	got, err = db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: map[string]types.AttributeValue{"pk": s("new"), "sk": s("1")}})
	require.NoError(t, err)
	assert.NotEmpty(t, got.Item)
}

// TestQueryPages walks an index partition both ways in pages and checks
// that moving or dropping an item's index key moves it in the index.
func TestQueryPages(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	for i := range 25 {
		put(t, db, map[string]types.AttributeValue{"pk": s(fmt.Sprintf("i%02d", i)), "sk": s("x"), "gpk": s("P"), "gsk": s(fmt.Sprintf("%02d", i))})
	}
	put(t, db, map[string]types.AttributeValue{"pk": s("other"), "sk": s("x"), "gpk": s("Q"), "gsk": s("00")})
	put(t, db, map[string]types.AttributeValue{"pk": s("sparse"), "sk": s("x")}) // not in the index

	walk := func(forward bool, limit int32) []string {
		var got []string
		var start map[string]types.AttributeValue
		for {
			out, err := db.Query(ctx, &dynamodb.QueryInput{
				TableName: aws.String(tbl), IndexName: aws.String("g"),
				KeyConditionExpression:    aws.String("#p = :p"),
				ExpressionAttributeNames:  map[string]string{"#p": "gpk"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("P")},
				ScanIndexForward:          aws.Bool(forward), Limit: aws.Int32(limit), ExclusiveStartKey: start,
			})
			require.NoError(t, err)
			for _, it := range out.Items {
				got = append(got, it["gsk"].(*types.AttributeValueMemberS).Value)
			}
			if len(out.LastEvaluatedKey) == 0 {
				return got
			}
			start = out.LastEvaluatedKey
		}
	}
	fwd := walk(true, 7)
	require.Len(t, fwd, 25)
	assert.Equal(t, "00", fwd[0])
	assert.Equal(t, "24", fwd[24])
	back := walk(false, 10)
	require.Len(t, back, 25)
	assert.Equal(t, "24", back[0])
	assert.Equal(t, "00", back[24])

	put(t, db, map[string]types.AttributeValue{"pk": s("i05"), "sk": s("x"), "gpk": s("P"), "gsk": s("99")})
	put(t, db, map[string]types.AttributeValue{"pk": s("i06"), "sk": s("x")})
	_, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tbl), Key: map[string]types.AttributeValue{"pk": s("i07"), "sk": s("x")}})
	require.NoError(t, err)
	key := func(pk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": s(pk), "sk": s("x")}
	}
	setGSK := func(v string) (*string, map[string]types.AttributeValue) {
		return aws.String("SET gsk = :g"), map[string]types.AttributeValue{":g": s(v)}
	}
	expr, vals := setGSK("98")
	_, err = db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: key("i08"),
		UpdateExpression: expr, ExpressionAttributeValues: vals})
	require.NoError(t, err)
	expr, vals = setGSK("97")
	_, err = db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{TableName: aws.String(tbl), Key: key("i09"), UpdateExpression: expr, ExpressionAttributeValues: vals}},
		{Delete: &types.Delete{TableName: aws.String(tbl), Key: key("i10")}},
		{Put: &types.Put{TableName: aws.String(tbl), Item: map[string]types.AttributeValue{"pk": s("i11"), "sk": s("x"), "gpk": s("P"), "gsk": s("96")}}},
	}})
	require.NoError(t, err)
	got := walk(false, 100)
	require.Len(t, got, 22)
	assert.Equal(t, []string{"99", "98", "97", "96"}, got[:4], "a changed index key moves the row, whatever the write")
	for _, gone := range []string{"06", "07", "08", "09", "10", "11"} {
		assert.NotContains(t, got, gone, "an item whose index key changed, was dropped or was deleted leaves its old place")
	}

	out, err := db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(tbl),
		KeyConditionExpression:    aws.String("pk = :p AND begins_with(sk, :x)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("i01"), ":x": s("x")},
	})
	require.NoError(t, err)
	assert.Len(t, out.Items, 1, "a base-table query with a sort-key condition")

	_, err = db.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(tbl), KeyConditionExpression: aws.String("sk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("x")},
	})
	assert.True(t, isValidation(err), "a key condition must name the partition key: %v", err)
	_, err = db.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(tbl), KeyConditionExpression: aws.String("pk = :p"), FilterExpression: aws.String("x = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("x")},
	})
	assert.True(t, isValidation(err), "filters are refused, not ignored: %v", err)
}

func TestWritesAreCopied(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	inner := map[string]types.AttributeValue{"k": s("v")}
	item := map[string]types.AttributeValue{"pk": s("a"), "sk": s("1"), "m": &types.AttributeValueMemberM{Value: inner}}
	put(t, db, item)
	inner["k"] = s("changed")
	item["pk"] = s("b")
	got, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: map[string]types.AttributeValue{"pk": s("a"), "sk": s("1")}})
	require.NoError(t, err)
	assert.Equal(t, s("v"), got.Item["m"].(*types.AttributeValueMemberM).Value["k"])
}

func TestItemSizeLimit(t *testing.T) {
	db := newDB(t)
	_, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(tbl),
		Item: map[string]types.AttributeValue{"pk": s("a"), "sk": s("1"), "big": s(strings.Repeat("x", maxItemBytes))}})
	assert.True(t, isValidation(err), "%v", err)
}

func TestTablesAndScan(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(tbl),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}}})
	_, inUse := errors.AsType[*types.ResourceInUseException](err)
	assert.True(t, inUse)
	_, err = db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("nope"), Key: map[string]types.AttributeValue{"pk": s("a")}})
	_, missing := errors.AsType[*types.ResourceNotFoundException](err)
	assert.True(t, missing)

	for i := range 5 {
		put(t, db, map[string]types.AttributeValue{"pk": s(fmt.Sprint(i)), "sk": s("x")})
	}
	var seen int
	in := &dynamodb.ScanInput{TableName: aws.String(tbl), Limit: aws.Int32(2)}
	for {
		out, err := db.Scan(ctx, in)
		require.NoError(t, err)
		seen += len(out.Items)
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	assert.Equal(t, 5, seen)
	d, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tbl)})
	require.NoError(t, err)
	assert.Equal(t, int64(5), aws.ToInt64(d.Table.ItemCount))
}

// A begins_with query reads only its prefix's rows, whatever sorts before
// or after them in the partition, forward and back, page by page.
func TestQueryByPrefix(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	for i := range 30 {
		put(t, db, map[string]types.AttributeValue{"pk": s("P"), "sk": s(fmt.Sprintf("a#%02d", i))})
		put(t, db, map[string]types.AttributeValue{"pk": s("P"), "sk": s(fmt.Sprintf("w#%02d", i))})
		put(t, db, map[string]types.AttributeValue{"pk": s("P"), "sk": s(fmt.Sprintf("z#%02d", i))})
	}
	put(t, db, map[string]types.AttributeValue{"pk": s("Q"), "sk": s("w#00")})
	walk := func(forward bool, limit int32) (got []string, scanned int) {
		var start map[string]types.AttributeValue
		for {
			out, err := db.Query(ctx, &dynamodb.QueryInput{
				TableName:                 aws.String(tbl),
				KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :prefix)"),
				ExpressionAttributeNames:  map[string]string{"#pk": "pk", "#sk": "sk"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s("P"), ":prefix": s("w#")},
				ScanIndexForward:          aws.Bool(forward), Limit: aws.Int32(limit), ExclusiveStartKey: start,
			})
			require.NoError(t, err)
			scanned += int(out.ScannedCount)
			for _, it := range out.Items {
				got = append(got, it["sk"].(*types.AttributeValueMemberS).Value)
			}
			if len(out.LastEvaluatedKey) == 0 {
				return got, scanned
			}
			start = out.LastEvaluatedKey
		}
	}
	fwd, scanned := walk(true, 7)
	require.Len(t, fwd, 30)
	assert.Equal(t, "w#00", fwd[0])
	assert.Equal(t, "w#29", fwd[29])
	assert.Equal(t, 30, scanned, "only the prefix's rows are read")
	back, _ := walk(false, 4)
	require.Len(t, back, 30)
	assert.Equal(t, "w#29", back[0])
	assert.Equal(t, "w#00", back[29])
}
