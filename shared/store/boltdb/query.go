package boltdb

import (
	"bytes"
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	bolt "go.etcd.io/bbolt"
)

// Query reads one partition of the table or of a global secondary index in
// sort-key order, from ExclusiveStartKey, up to Limit items: a cursor
// seeks to the partition (or to the rows a begins_with sort-key condition
// can match) and walks it. The key condition must start with the partition
// key's equality; the rest of it is evaluated on the rows walked. Like
// DynamoDB, it returns a LastEvaluatedKey whenever Limit stopped it.
func (db *DB) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	switch {
	case in.FilterExpression != nil || len(in.QueryFilter) > 0:
		return nil, validation("filter expressions are not supported")
	case in.ProjectionExpression != nil || len(in.AttributesToGet) > 0:
		return nil, validation("projections are not supported")
	case in.Select != "" && in.Select != types.SelectAllAttributes:
		return nil, validation("Select %s is not supported", in.Select)
	case len(in.KeyConditions) > 0:
		return nil, validation("KeyConditions is not supported; use KeyConditionExpression")
	}
	limit := int(aws.ToInt32(in.Limit))
	if in.Limit != nil && limit <= 0 {
		return nil, validation("Limit must be at least 1")
	}
	cond, err := compileCond(aws.ToString(in.KeyConditionExpression))
	if err != nil {
		return nil, err
	}
	b := &bindings{names: in.ExpressionAttributeNames, values: in.ExpressionAttributeValues}
	t, err := db.table(in.TableName)
	if err != nil {
		return nil, err
	}
	ix := t.primary
	if name := aws.ToString(in.IndexName); name != "" {
		if ix = t.gsis[name]; ix == nil {
			return nil, validation("the table does not have the specified index: %s", name)
		}
		if aws.ToBool(in.ConsistentRead) {
			return nil, validation("consistent reads are not supported on global secondary indexes")
		}
	}
	pk, err := partitionValue(aws.ToString(in.KeyConditionExpression), ix.hash, b)
	if err != nil {
		return nil, err
	}
	partition := appendKeyPart(nil, pk)
	var start []byte
	if len(in.ExclusiveStartKey) > 0 {
		if start, err = t.startRow(ix, in.ExclusiveStartKey); err != nil {
			return nil, err
		}
		if !bytes.HasPrefix(start, partition) {
			return nil, validation("the ExclusiveStartKey is outside the queried partition")
		}
	}
	// A begins_with sort-key condition bounds the walk to the rows it can
	// match, as DynamoDB reads only those.
	bound := partition
	if prefix := sortKeyPrefix(aws.ToString(in.KeyConditionExpression), ix.rng, b); prefix != "" {
		bound = appendEscaped(bytes.Clone(partition), prefix)
	}
	forward := in.ScanIndexForward == nil || *in.ScanIndexForward

	out := &dynamodb.QueryOutput{Items: []map[string]types.AttributeValue{}}
	err = db.bolt.View(func(tx *bolt.Tx) error {
		rows, items := tx.Bucket(ix.bucket), tx.Bucket(t.items)
		if rows == nil || items == nil {
			return notFound(t.name)
		}
		c := rows.Cursor()
		var k, v []byte
		switch {
		case forward && start != nil:
			if k, v = c.Seek(start); bytes.Equal(k, start) {
				k, v = c.Next()
			}
		case forward:
			k, v = c.Seek(bound)
		default:
			from := start
			if from == nil {
				from = prefixEnd(bound)
			}
			if from == nil {
				k, v = c.Last()
			} else if k, _ = c.Seek(from); k == nil {
				k, v = c.Last()
			} else {
				k, v = c.Prev()
			}
		}
		for ; k != nil && bytes.HasPrefix(k, bound); k, v = step(c, forward) {
			if ix != t.primary {
				v = items.Get(v)
			}
			item, err := decode(v)
			if err != nil {
				return err
			}
			if item == nil {
				return &DamagedError{Reason: "an index row names a missing item"}
			}
			ok, err := cond(item, b)
			if err != nil {
				return err
			}
			if ok {
				out.Items = append(out.Items, item)
			}
			out.ScannedCount++
			if limit > 0 && int(out.ScannedCount) == limit {
				out.LastEvaluatedKey = t.lastKey(ix, item)
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out.Count = int32(len(out.Items)) //nolint:gosec // G115: bounded by Limit or by the partition
	return out, nil
}

func step(c *bolt.Cursor, forward bool) ([]byte, []byte) {
	if forward {
		return c.Next()
	}
	return c.Prev()
}

// sortKeyPrefix returns the prefix of a key condition whose sort-key part
// is exactly "begins_with(<range key>, :value)" with a string value, and ""
// for any other condition (which the walk then evaluates row by row).
func sortKeyPrefix(expr, rng string, b *bindings) string {
	toks := tokenize(expr)
	if rng == "" || len(toks) != 10 || !strings.EqualFold(toks[3], "AND") || !strings.EqualFold(toks[4], "begins_with") ||
		toks[5] != "(" || toks[7] != "," || toks[9] != ")" {
		return ""
	}
	if name, err := b.name(toks[6]); err != nil || name != rng {
		return ""
	}
	v, err := b.value(toks[8])
	if err != nil {
		return ""
	}
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// partitionValue reads the partition key's value out of a key condition,
// which must begin "<hash key> = :value".
func partitionValue(expr, hash string, b *bindings) (string, error) {
	toks := tokenize(expr)
	if len(toks) < 3 || toks[1] != "=" || (len(toks) > 3 && !strings.EqualFold(toks[3], "AND")) {
		return "", validation("the key condition %q must begin with the partition key's equality", expr)
	}
	name, err := b.name(toks[0])
	if err != nil {
		return "", err
	}
	if name != hash {
		return "", validation("the key condition %q must begin with the partition key %s", expr, hash)
	}
	v, err := b.value(toks[2])
	if err != nil {
		return "", err
	}
	s, ok := v.(*types.AttributeValueMemberS)
	if !ok {
		return "", validation("the partition key value must be a string")
	}
	return s.Value, nil
}

// startRow turns an ExclusiveStartKey into the row key it names in ix.
func (t *table) startRow(ix *index, m map[string]types.AttributeValue) ([]byte, error) {
	k, err := t.keyOf(m, false)
	if err != nil {
		return nil, validation("the ExclusiveStartKey lacks the table key")
	}
	key := t.itemKey(k)
	if ix == t.primary {
		return key, nil
	}
	row, ok := ix.rowKey(key, m)
	if !ok {
		return nil, validation("the ExclusiveStartKey lacks the index key")
	}
	return row, nil
}

// lastKey is the LastEvaluatedKey of a page that stopped at item: the table
// key plus, on an index, the index key.
func (t *table) lastKey(ix *index, item map[string]types.AttributeValue) map[string]types.AttributeValue {
	lk := map[string]types.AttributeValue{}
	for _, name := range []string{t.primary.hash, t.primary.rng, ix.hash, ix.rng} {
		if name != "" {
			lk[name] = item[name]
		}
	}
	return lk
}

// Scan reads the whole table in key order, from ExclusiveStartKey, up to
// Limit items (all of them without one).
func (db *DB) Scan(_ context.Context, in *dynamodb.ScanInput, _ ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	if in.FilterExpression != nil || in.ProjectionExpression != nil || in.IndexName != nil || in.Segment != nil {
		return nil, validation("Scan supports only TableName, Limit and ExclusiveStartKey")
	}
	limit := int(aws.ToInt32(in.Limit))
	t, err := db.table(in.TableName)
	if err != nil {
		return nil, err
	}
	var start []byte
	if len(in.ExclusiveStartKey) > 0 {
		k, err := t.keyOf(in.ExclusiveStartKey, true)
		if err != nil {
			return nil, err
		}
		start = t.itemKey(k)
	}
	out := &dynamodb.ScanOutput{Items: []map[string]types.AttributeValue{}}
	err = db.bolt.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(t.items).Cursor()
		k, v := c.First()
		if start != nil {
			if k, v = c.Seek(start); bytes.Equal(k, start) {
				k, v = c.Next()
			}
		}
		for ; k != nil; k, v = c.Next() {
			item, err := decode(v)
			if err != nil {
				return err
			}
			out.Items = append(out.Items, item)
			if limit > 0 && len(out.Items) == limit {
				out.LastEvaluatedKey = t.lastKey(t.primary, item)
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out.Count = int32(len(out.Items)) //nolint:gosec // G115: bounded by the table
	out.ScannedCount = out.Count
	return out, nil
}
