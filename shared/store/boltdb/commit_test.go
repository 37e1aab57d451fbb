package boltdb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// holdCommit starts a write that holds the transaction open until the
// returned release is called, so the writes made meanwhile queue behind
// it, as they do behind a commit's fsync.
func holdCommit(t *testing.T, db *DB) (release func()) {
	t.Helper()
	started, hold := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- db.write(func(*bolt.Tx) error {
			select {
			case <-started:
			default:
				close(started)
			}
			<-hold
			return nil
		})
	}()
	<-started
	return func() {
		close(hold)
		require.NoError(t, <-done)
	}
}

// queued waits until n writes are pending behind the held commit.
func queued(t *testing.T, db *DB, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		db.group.mu.Lock()
		defer db.group.mu.Unlock()
		return len(db.group.pending) == n
	}, 10*time.Second, time.Millisecond)
}

// TestWritesQueuedBehindACommitShareTheNextTransaction: the writes that
// arrive while a transaction commits are committed together, in one
// transaction, and each is acknowledged with its own outcome.
func TestWritesQueuedBehindACommitShareTheNextTransaction(t *testing.T) {
	db := newDB(t)
	release := holdCommit(t, db)
	const writers = 10
	txids := make([]int, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			errs[i] = db.write(func(tx *bolt.Tx) error {
				txids[i] = tx.ID()
				return nil
			})
		})
	}
	queued(t, db, writers)
	release()
	wg.Wait()
	for i := range writers {
		require.NoError(t, errs[i])
		assert.Equal(t, txids[0], txids[i], "write %d shares the first queued write's transaction", i)
	}
}

// TestAConditionThatFailsInASharedTransactionFailsOnlyItsWrite: of the
// conditional creates of one item queued together exactly one succeeds,
// every other is told ConditionalCheckFailed, and the unconditional writes
// beside them are all kept.
func TestAConditionThatFailsInASharedTransactionFailsOnlyItsWrite(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	release := holdCommit(t, db)
	const writers = 8
	createErrs := make([]error, writers)
	putErrs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			_, createErrs[i] = db.PutItem(ctx, &dynamodb.PutItemInput{
				TableName: aws.String(tbl), Item: map[string]types.AttributeValue{"pk": s("race"), "sk": s("x"), "by": n(fmt.Sprint(i))},
				ConditionExpression: aws.String("attribute_not_exists(pk)"),
			})
		})
		wg.Go(func() {
			_, putErrs[i] = db.PutItem(ctx, &dynamodb.PutItemInput{
				TableName: aws.String(tbl), Item: map[string]types.AttributeValue{"pk": s(fmt.Sprintf("own-%d", i)), "sk": s("x")},
			})
		})
	}
	queued(t, db, 2*writers)
	release()
	wg.Wait()
	won := 0
	for i := range writers {
		require.NoError(t, putErrs[i])
		if createErrs[i] == nil {
			won++
			continue
		}
		var ccf *types.ConditionalCheckFailedException
		require.ErrorAs(t, createErrs[i], &ccf)
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: map[string]types.AttributeValue{"pk": s(fmt.Sprintf("own-%d", i)), "sk": s("x")}})
		require.NoError(t, err)
		assert.NotNil(t, out.Item, "own-%d is kept", i)
	}
	assert.Equal(t, 1, won, "one conditional create of the same item succeeds")
}

// TestAFailingWriteInASharedTransactionLeavesTheOthersWhole: a write whose
// function fails after writing is rolled back, gets its own error, and the
// writes queued with it are kept.
func TestAFailingWriteInASharedTransactionLeavesTheOthersWhole(t *testing.T) {
	db := newDB(t)
	boom := errors.New("boom")
	bucket := []byte("scratch")
	require.NoError(t, db.bolt.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }))
	release := holdCommit(t, db)
	const writers = 6
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			errs[i] = db.write(func(tx *bolt.Tx) error {
				if err := tx.Bucket(bucket).Put(fmt.Appendf(nil, "k%d", i), []byte("v")); err != nil {
					return err
				}
				if i == 3 {
					return boom
				}
				return nil
			})
		})
	}
	queued(t, db, writers)
	release()
	wg.Wait()
	require.NoError(t, db.bolt.View(func(tx *bolt.Tx) error {
		for i := range writers {
			v := tx.Bucket(bucket).Get(fmt.Appendf(nil, "k%d", i))
			if i == 3 {
				require.ErrorIs(t, errs[i], boom)
				assert.Nil(t, v, "the failed write left nothing")
				continue
			}
			require.NoError(t, errs[i])
			assert.NotNil(t, v, "write %d is kept", i)
		}
		return nil
	}))
}
