package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/maasflow/maasflow/shared/domain"
)

const kindOnboarding = "onboarding"

// Page sizes of ListOnboardings.
const (
	DefaultPageSize = 50
	MaxPageSize     = 200
)

// listRounds bounds the Queries behind one page when filters discard most
// rows: past it the page comes back short, with a cursor to go on.
const listRounds = 10

func onboardingKey(id string) key { return key{pkOnboarding + id, "ONB"} }

// openLockKey is the item that holds "the open onboarding of this host".
func openLockKey(siteID, hostname string) key {
	return key{pkOpenLock + siteID + "#" + hostKey(hostname), "OPEN"}
}

type openLock struct {
	OnboardingID string    `dynamodbav:"onboarding_id"`
	SiteID       string    `dynamodbav:"site_id"`
	Hostname     string    `dynamodbav:"hostname"`
	Since        time.Time `dynamodbav:"since"`
}

func checkOnboarding(o domain.Onboarding) error {
	if err := checkID(kindOnboarding, "id", o.ID); err != nil {
		return err
	}
	if err := checkID(kindOnboarding, "site_id", o.SiteID); err != nil {
		return err
	}
	return checkID(kindOnboarding, "hostname", o.Hostname)
}

func onboardingItem(o domain.Onboarding) (map[string]types.AttributeValue, error) {
	sk := timeKey(o.CreatedAt) + "#" + o.ID
	return marshalItem(o, onboardingKey(o.ID), kindOnboarding, map[string]string{
		AttrGSI1PK: gsiAllOnboardings, AttrGSI1SK: sk,
		AttrGSI2PK: gsiOnbStatus + string(o.Status), AttrGSI2SK: sk,
		AttrGSI3PK: gsiOnbSite + o.SiteID, AttrGSI3SK: sk,
		AttrGSI4PK: gsiOnbHost + hostKey(o.Hostname), AttrGSI4SK: sk,
	})
}

func (s *Store) openLockItem(o domain.Onboarding) (map[string]types.AttributeValue, error) {
	return marshalItem(openLock{OnboardingID: o.ID, SiteID: o.SiteID, Hostname: o.Hostname, Since: s.now()},
		openLockKey(o.SiteID, o.Hostname), "open_onboarding", nil)
}

// CreateOnboarding writes the onboarding and takes its host lock in one
// transaction: OpenOnboardingExistsError when (site, hostname) has an open one.
// The record gets version 1, CreatedAt and UpdatedAt when zero and Status
// pending when empty. ItemConflictError when the id exists.
func (s *Store) CreateOnboarding(ctx context.Context, o domain.Onboarding) error {
	if err := checkOnboarding(o); err != nil {
		return err
	}
	stamp(s.now(), &o.CreatedAt, &o.UpdatedAt, &o.Version)
	if o.Status == "" {
		o.Status = domain.OnboardingPending
	}
	item, err := onboardingItem(o)
	if err != nil {
		return err
	}
	if !domain.IsOpenStatus(o.Status) {
		return s.createOne(ctx, kindOnboarding, o.ID, item)
	}
	lock, err := s.openLockItem(o)
	if err != nil {
		return err
	}
	for range updateAttempts {
		err = s.write(ctx, s.putIfAbsent(item), s.putIfAbsent(lock))
		codes, _ := txCodes(err)
		switch {
		case txFailed(codes, 0):
			return &ItemConflictError{Kind: kindOnboarding, ID: o.ID, Reason: "already exists"}
		case txFailed(codes, 1):
			holder, found, ferr := s.FindOpenOnboarding(ctx, o.SiteID, o.Hostname)
			if ferr != nil {
				return ferr
			}
			if found {
				return &OpenOnboardingExistsError{SiteID: o.SiteID, Hostname: o.Hostname, OnboardingID: holder}
			}
			continue // released between the write and the read: try again
		case txContended(codes):
			continue
		case err != nil:
			return fmt.Errorf("create onboarding %s: %w", o.ID, err)
		}
		return nil
	}
	return &ItemConflictError{Kind: kindOnboarding, ID: o.ID, Reason: "host lock contended, gave up"}
}

// FindOpenOnboarding returns the id of the open onboarding that holds
// (site, hostname); found is false when the host is free.
func (s *Store) FindOpenOnboarding(ctx context.Context, siteID, hostname string) (id string, found bool, err error) {
	var lock openLock
	err = s.get(ctx, "open onboarding", hostname, openLockKey(siteID, hostname), &lock)
	if _, missing := errors.AsType[*ItemNotFoundError](err); missing {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return lock.OnboardingID, true, nil
}

// GetOnboarding returns the onboarding: ItemNotFoundError when there is none.
func (s *Store) GetOnboarding(ctx context.Context, id string) (domain.Onboarding, error) {
	var o domain.Onboarding
	err := s.get(ctx, kindOnboarding, id, onboardingKey(id), &o)
	return o, err
}

// UpdateOnboarding applies mutate under the record's version. When the
// status moves from open to closed the host lock is released in the same
// transaction; closed to open takes it again (OpenOnboardingExistsError if
// another onboarding took it meanwhile). The id and CreatedAt cannot
// change. ItemNotFoundError when there is no such onboarding; ItemConflictError
// after repeated concurrent updates.
func (s *Store) UpdateOnboarding(ctx context.Context, id string, mutate Mutator[domain.Onboarding]) (domain.Onboarding, error) {
	return updateLoop(ctx, s, kindOnboarding, id, onboardingKey(id), mutate,
		func(prev, next *domain.Onboarding) {
			next.ID, next.CreatedAt = prev.ID, prev.CreatedAt
			next.Version = prev.Version + 1
			next.UpdatedAt = s.now()
		},
		s.writeOnboarding)
}

func (s *Store) writeOnboarding(ctx context.Context, prev, next *domain.Onboarding) error {
	if err := checkOnboarding(*next); err != nil {
		return err
	}
	item, err := onboardingItem(*next)
	if err != nil {
		return err
	}
	var oldLock, newLock *key
	if domain.IsOpenStatus(prev.Status) {
		k := openLockKey(prev.SiteID, prev.Hostname)
		oldLock = &k
	}
	if domain.IsOpenStatus(next.Status) {
		k := openLockKey(next.SiteID, next.Hostname)
		newLock = &k
	}
	if oldLock == nil && newLock == nil || oldLock != nil && newLock != nil && *oldLock == *newLock {
		return s.putVersioned(ctx, kindOnboarding, next.ID, item, prev.Version)
	}

	// A release finds the lock held by this onboarding or by nobody; the
	// delete is dropped only if a repair left it with another onboarding,
	// which must keep it.
	release := oldLock != nil
	for {
		tx := []types.TransactWriteItem{s.putIfVersion(item, prev.Version)}
		if release {
			tx = append(tx, s.deleteLock(*oldLock, "onboarding_id", next.ID))
		}
		take := -1
		if newLock != nil {
			lock, err := s.openLockItem(*next)
			if err != nil {
				return err
			}
			take = len(tx)
			tx = append(tx, s.putLock(lock, "onboarding_id", next.ID))
		}
		err = s.write(ctx, tx...)
		codes, _ := txCodes(err)
		switch {
		case txFailed(codes, 0) || txContended(codes):
			return errVersionConflict
		case release && txFailed(codes, 1):
			release = false
			continue
		case take >= 0 && txFailed(codes, take):
			holder, found, ferr := s.FindOpenOnboarding(ctx, next.SiteID, next.Hostname)
			if ferr != nil {
				return ferr
			}
			if !found {
				return errVersionConflict // freed meanwhile: go round again
			}
			return &OpenOnboardingExistsError{SiteID: next.SiteID, Hostname: next.Hostname, OnboardingID: holder}
		case err != nil:
			return fmt.Errorf("update onboarding %s: %w", next.ID, err)
		}
		return nil
	}
}

// onboardingIndex is the index, and the partition in it, a filter reads.
type onboardingIndex struct {
	name, pkAttr, skAttr, pk string
}

// indexFor picks the most selective index the filter allows: a hostname has
// few onboardings, a site more, a status the most.
func indexFor(f OnboardingFilter) onboardingIndex {
	switch {
	case f.Hostname != "":
		return onboardingIndex{IndexGSI4, AttrGSI4PK, AttrGSI4SK, gsiOnbHost + hostKey(f.Hostname)}
	case f.SiteID != "":
		return onboardingIndex{IndexGSI3, AttrGSI3PK, AttrGSI3SK, gsiOnbSite + f.SiteID}
	case f.Status != "":
		return onboardingIndex{IndexGSI2, AttrGSI2PK, AttrGSI2SK, gsiOnbStatus + string(f.Status)}
	default:
		return onboardingIndex{IndexGSI1, AttrGSI1PK, AttrGSI1SK, gsiAllOnboardings}
	}
}

// matches applies the filters the index did not.
func (f OnboardingFilter) matches(o domain.Onboarding) bool {
	return (f.Status == "" || o.Status == f.Status) &&
		(f.SiteID == "" || o.SiteID == f.SiteID) &&
		(f.Hostname == "" || hostKey(o.Hostname) == hostKey(f.Hostname))
}

// filtered reports whether some filter is applied after the Query.
func (f OnboardingFilter) filtered() bool {
	n := 0
	for _, v := range []string{string(f.Status), f.SiteID, f.Hostname} {
		if v != "" {
			n++
		}
	}
	return n > 1
}

// ListOnboardings returns one page of onboardings, newest first. The
// remaining filters are applied to the rows the index returns, in the
// store rather than as a FilterExpression: DynamoDB charges the same reads
// either way, and Limit then counts exactly what the page needs. A page can
// be short (even empty) with a NextCursor when filters discard many rows;
// an empty NextCursor means the listing is complete. InvalidCursorError
// when Cursor is not a NextCursor of the same filter.
func (s *Store) ListOnboardings(ctx context.Context, f OnboardingFilter) (OnboardingPage, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultPageSize
	}
	limit = min(limit, MaxPageSize)
	ix := indexFor(f)
	var start map[string]types.AttributeValue
	if f.Cursor != "" {
		var err error
		if start, err = decodeCursor(f.Cursor, ix); err != nil {
			return OnboardingPage{}, err
		}
	}

	// One row beyond the page tells whether another page exists; with
	// filters, read ahead more so that most pages take one Query.
	pageSize := limit + 1
	if f.filtered() {
		pageSize = min(4*(limit+1), 1000)
	}
	page := OnboardingPage{Items: []domain.Onboarding{}}
	var lastIncluded map[string]types.AttributeValue
	for round := 1; ; round++ {
		out, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(s.table),
			IndexName:                 aws.String(ix.name),
			KeyConditionExpression:    aws.String(exprIndexPartition(ix.pkAttr)),
			ExpressionAttributeNames:  map[string]string{"#" + ix.pkAttr: ix.pkAttr},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(ix.pk)},
			ScanIndexForward:          aws.Bool(false),
			Limit:                     aws.Int32(int32(pageSize)),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return OnboardingPage{}, fmt.Errorf("list onboardings: %w", err)
		}
		for _, item := range out.Items {
			var o domain.Onboarding
			if err := attributevalue.UnmarshalMap(item, &o); err != nil {
				return OnboardingPage{}, fmt.Errorf("decode onboarding: %w", err)
			}
			if !f.matches(o) {
				continue
			}
			if len(page.Items) == limit { // a further row exists: the page is full
				page.NextCursor = encodeCursor(lastIncluded, ix)
				return page, nil
			}
			page.Items = append(page.Items, o)
			lastIncluded = item
		}
		if len(out.LastEvaluatedKey) == 0 {
			return page, nil
		}
		start = out.LastEvaluatedKey
		if round == listRounds {
			page.NextCursor = encodeCursor(start, ix)
			return page, nil
		}
	}
}

// cursor is the JSON inside an opaque page cursor: the index it walks and
// the key of the last row handed out (a Query's ExclusiveStartKey).
type cursor struct {
	Index string            `json:"i"`
	Key   map[string]string `json:"k"`
}

func encodeCursor(item map[string]types.AttributeValue, ix onboardingIndex) string {
	c := cursor{Index: ix.name, Key: map[string]string{}}
	for _, name := range []string{AttrPK, AttrSK, ix.pkAttr, ix.skAttr} {
		if v, ok := item[name].(*types.AttributeValueMemberS); ok {
			c.Key[name] = v.Value
		}
	}
	b, _ := json.Marshal(c) // a struct of strings always encodes
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string, ix onboardingIndex) (map[string]types.AttributeValue, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, &InvalidCursorError{Reason: "not base64url"}
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, &InvalidCursorError{Reason: "malformed"}
	}
	if c.Index != ix.name || c.Key[ix.pkAttr] != ix.pk {
		return nil, &InvalidCursorError{Reason: "belongs to another filter"}
	}
	start := map[string]types.AttributeValue{}
	for _, name := range []string{AttrPK, AttrSK, ix.pkAttr, ix.skAttr} {
		v, ok := c.Key[name]
		if !ok || v == "" {
			return nil, &InvalidCursorError{Reason: "malformed"}
		}
		start[name] = str(v)
	}
	return start, nil
}
