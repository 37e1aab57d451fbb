package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/maasflow/maasflow/shared/domain"
)

// Reconciliation records (docs/data-model.md): node_maas_state, drift items,
// runs and the run lock, plus the site index of nodes the runs walk.
const (
	kindDrift     = "drift_item"
	kindRun       = "reconcile_run"
	kindMAASState = "node_maas_state"

	runLockExpiry = "expires_ms"
)

// ListNodesBySite returns every node of the site, any status, with
// one Query of the node site index (nodeItem). A node
// written before the site index existed is listed once it is next updated.
func (s *Store) ListNodesBySite(ctx context.Context, siteID string) ([]domain.Node, error) {
	return queryIndex[domain.Node](ctx, s, kindNode, IndexGSI3, AttrGSI3PK, gsiNodeSite+siteID)
}

// --- node_maas_state

func maasStateKey(siteID, nodeID string) key {
	return key{pkMAASState + siteID, skMAASState + nodeID}
}

// PutNodeMAASState writes the last observed MAAS state of a node over the
// previous one (last writer wins: only a run writes it, one at a time).
func (s *Store) PutNodeMAASState(ctx context.Context, st domain.NodeMAASState) error {
	if err := checkID(kindMAASState, "node_id", st.NodeID); err != nil {
		return err
	}
	if err := checkID(kindMAASState, "site_id", st.SiteID); err != nil {
		return err
	}
	item, err := marshalItem(st, maasStateKey(st.SiteID, st.NodeID), kindMAASState, nil)
	if err != nil {
		return err
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item}); err != nil {
		return fmt.Errorf("put %s %s: %w", kindMAASState, st.NodeID, err)
	}
	return nil
}

// ListNodeMAASStates returns the last observed MAAS state of every node of
// the site that a run has seen, by node id.
func (s *Store) ListNodeMAASStates(ctx context.Context, siteID string) ([]domain.NodeMAASState, error) {
	return queryPrefix[domain.NodeMAASState](ctx, s, kindMAASState, pkMAASState+siteID, skMAASState)
}

// --- drift items

func driftKey(id string) key { return key{pkDrift + id, "DRIFT"} }

func driftIndexKeys(d domain.DriftItem) map[string]string {
	sk := timeKey(d.FirstSeen) + "#" + d.ID
	return map[string]string{
		AttrGSI1PK: gsiDrift + d.State, AttrGSI1SK: sk,
		AttrGSI2PK: gsiDriftKind + d.Kind + "#" + d.State, AttrGSI2SK: sk,
		AttrGSI3PK: gsiDriftSite + d.SiteID + "#" + d.State, AttrGSI3SK: sk,
		AttrGSI4PK: gsiDriftNode + d.NodeID, AttrGSI4SK: sk,
	}
}

func checkDrift(d domain.DriftItem) error {
	for field, v := range map[string]string{"id": d.ID, "site_id": d.SiteID, "node_id": d.NodeID, "kind": d.Kind} {
		if err := checkID(kindDrift, field, v); err != nil {
			return err
		}
	}
	if d.State != domain.DriftOpen && d.State != domain.DriftClosed {
		return &InvalidRecordError{Kind: kindDrift, Field: "state", Reason: "must be open or closed"}
	}
	return nil
}

// CreateDriftItem stores a new drift item with version 1. ConflictError when
// the id exists (a repeated run step: the caller treats it as done).
func (s *Store) CreateDriftItem(ctx context.Context, d domain.DriftItem) error {
	if err := checkDrift(d); err != nil {
		return err
	}
	d.Version = 1
	item, err := marshalItem(d, driftKey(d.ID), kindDrift, driftIndexKeys(d))
	if err != nil {
		return err
	}
	return s.createOne(ctx, kindDrift, d.ID, item)
}

// GetDriftItem reads one drift item: NotFoundError when there is none.
func (s *Store) GetDriftItem(ctx context.Context, id string) (domain.DriftItem, error) {
	var d domain.DriftItem
	err := s.get(ctx, kindDrift, id, driftKey(id), &d)
	return d, err
}

// UpdateDriftItem applies mutate under the item's version. The id, site,
// subject, kind and FirstSeen cannot change.
func (s *Store) UpdateDriftItem(ctx context.Context, id string, mutate Mutator[domain.DriftItem]) (domain.DriftItem, error) {
	return updateLoop(ctx, s, kindDrift, id, driftKey(id), mutate,
		func(prev, next *domain.DriftItem) {
			next.ID, next.SiteID, next.NodeID, next.Kind, next.FirstSeen = prev.ID, prev.SiteID, prev.NodeID, prev.Kind, prev.FirstSeen
			next.Version = prev.Version + 1
		},
		func(ctx context.Context, prev, next *domain.DriftItem) error {
			if err := checkDrift(*next); err != nil {
				return err
			}
			item, err := marshalItem(*next, driftKey(id), kindDrift, driftIndexKeys(*next))
			if err != nil {
				return err
			}
			return s.putVersioned(ctx, kindDrift, id, item, prev.Version)
		})
}

// ListOpenDrift returns every open drift item of the site (one index
// partition), oldest first.
func (s *Store) ListOpenDrift(ctx context.Context, siteID string) ([]domain.DriftItem, error) {
	return queryIndex[domain.DriftItem](ctx, s, kindDrift, IndexGSI3, AttrGSI3PK, gsiDriftSite+siteID+"#"+domain.DriftOpen)
}

// DriftFilter selects drift items. State is open (default) or closed; a
// NodeID filter lists both unless State is given.
type DriftFilter struct {
	SiteID string
	Kind   string
	NodeID string
	State  string
	Limit  int
	Cursor string
}

// DriftPage is one page of drift items, newest first.
type DriftPage struct {
	Items      []domain.DriftItem `json:"items"`
	NextCursor string             `json:"next_cursor,omitempty"`
}

// driftIndexFor picks the most selective index: a node's history is
// short, a site's open items fewer than a kind's across sites.
func driftIndexFor(f DriftFilter) onboardingIndex {
	state := f.State
	if state == "" {
		state = domain.DriftOpen
	}
	switch {
	case f.NodeID != "":
		return onboardingIndex{IndexGSI4, AttrGSI4PK, AttrGSI4SK, gsiDriftNode + f.NodeID}
	case f.SiteID != "":
		return onboardingIndex{IndexGSI3, AttrGSI3PK, AttrGSI3SK, gsiDriftSite + f.SiteID + "#" + state}
	case f.Kind != "":
		return onboardingIndex{IndexGSI2, AttrGSI2PK, AttrGSI2SK, gsiDriftKind + f.Kind + "#" + state}
	default:
		return onboardingIndex{IndexGSI1, AttrGSI1PK, AttrGSI1SK, gsiDrift + state}
	}
}

func (f DriftFilter) matches(d domain.DriftItem) bool {
	return (f.SiteID == "" || d.SiteID == f.SiteID) && (f.Kind == "" || d.Kind == f.Kind) &&
		(f.NodeID == "" || d.NodeID == f.NodeID) && (f.State == "" && f.NodeID != "" || d.State == stateOrOpen(f.State))
}

func stateOrOpen(s string) string {
	if s == "" {
		return domain.DriftOpen
	}
	return s
}

// ListDrift returns one page of drift items, newest first, with the same
// paging rules as ListOnboardings (docs/data-model.md).
func (s *Store) ListDrift(ctx context.Context, f DriftFilter) (DriftPage, error) {
	items, next, err := listIndexPage(ctx, s, "drift item", driftIndexFor(f), f.Limit, f.Cursor, f.matches)
	if err != nil {
		return DriftPage{}, err
	}
	return DriftPage{Items: items, NextCursor: next}, nil
}

// --- runs and the run lock

func runKey(id string) key { return key{pkRun + id, "RUN"} }

var runLockKey = key{pkRunLock, skRunLock}

type runLock struct {
	RunID     string `dynamodbav:"run_id"`
	ExpiresMS int64  `dynamodbav:"expires_ms"`
}

func runIndexKeys(r domain.ReconcileRun) map[string]string {
	return map[string]string{AttrGSI1PK: gsiAllRuns, AttrGSI1SK: timeKey(r.StartedAt) + "#" + r.ID}
}

// BeginReconcileRun stores run and takes the run lock in one transaction, so
// only one run is under way at a time. When another run holds the lock
// (and its lease has not expired) nothing is written and that run is
// returned with joined true. The lease frees the lock of a run that died
// without finishing.
func (s *Store) BeginReconcileRun(ctx context.Context, run domain.ReconcileRun, lease time.Duration) (domain.ReconcileRun, bool, error) {
	if err := checkID(kindRun, "id", run.ID); err != nil {
		return domain.ReconcileRun{}, false, err
	}
	run.Version = 1
	item, err := marshalItem(run, runKey(run.ID), kindRun, runIndexKeys(run))
	if err != nil {
		return domain.ReconcileRun{}, false, err
	}
	now := s.now()
	lock, err := marshalItem(runLock{RunID: run.ID, ExpiresMS: now.Add(lease).UnixMilli()}, runLockKey, "reconcile_lock", nil)
	if err != nil {
		return domain.ReconcileRun{}, false, err
	}
	for range updateAttempts {
		err = s.write(ctx, s.putIfAbsent(item), types.TransactWriteItem{Put: &types.Put{
			TableName:                 aws.String(s.table),
			Item:                      lock,
			ConditionExpression:       aws.String("attribute_not_exists(#pk) OR #exp < :now"),
			ExpressionAttributeNames:  map[string]string{"#pk": AttrPK, "#exp": runLockExpiry},
			ExpressionAttributeValues: map[string]types.AttributeValue{":now": num(now.UnixMilli())},
		}})
		codes, _ := txCodes(err)
		switch {
		case err == nil:
			return run, false, nil
		case txFailed(codes, 0):
			return domain.ReconcileRun{}, false, &ItemConflictError{Kind: kindRun, ID: run.ID, Reason: "already exists"}
		case txFailed(codes, 1):
			cur, found, err := s.CurrentReconcileRun(ctx)
			if err != nil {
				return domain.ReconcileRun{}, false, err
			}
			if found {
				return cur, true, nil
			}
			continue // finished meanwhile: try again
		case txContended(codes):
			continue
		default:
			return domain.ReconcileRun{}, false, fmt.Errorf("begin %s %s: %w", kindRun, run.ID, err)
		}
	}
	return domain.ReconcileRun{}, false, &ItemConflictError{Kind: kindRun, ID: run.ID, Reason: "the run lock kept changing"}
}

// CurrentReconcileRun returns the run holding the run lock; found is false
// when no run is under way (or the holder's lease expired).
func (s *Store) CurrentReconcileRun(ctx context.Context) (domain.ReconcileRun, bool, error) {
	var lock runLock
	err := s.get(ctx, "reconcile lock", skRunLock, runLockKey, &lock)
	if _, missing := errors.AsType[*ItemNotFoundError](err); missing {
		return domain.ReconcileRun{}, false, nil
	}
	if err != nil {
		return domain.ReconcileRun{}, false, err
	}
	if lock.ExpiresMS < s.now().UnixMilli() {
		return domain.ReconcileRun{}, false, nil
	}
	run, err := s.GetReconcileRun(ctx, lock.RunID)
	if _, missing := errors.AsType[*ItemNotFoundError](err); missing {
		return domain.ReconcileRun{}, false, nil
	}
	return run, err == nil, err
}

// GetReconcileRun reads one run: NotFoundError when there is none.
func (s *Store) GetReconcileRun(ctx context.Context, id string) (domain.ReconcileRun, error) {
	var r domain.ReconcileRun
	err := s.get(ctx, kindRun, id, runKey(id), &r)
	return r, err
}

// UpdateReconcileRun applies mutate under the run's version (each site step
// adds its result). When release is true the run lock, if this run still
// holds it, is deleted in the same transaction: the run is over.
func (s *Store) UpdateReconcileRun(ctx context.Context, id string, release bool, mutate Mutator[domain.ReconcileRun]) (domain.ReconcileRun, error) {
	return updateLoop(ctx, s, kindRun, id, runKey(id), mutate,
		func(prev, next *domain.ReconcileRun) {
			next.ID, next.StartedAt = prev.ID, prev.StartedAt
			next.Version = prev.Version + 1
		},
		func(ctx context.Context, prev, next *domain.ReconcileRun) error {
			item, err := marshalItem(*next, runKey(id), kindRun, runIndexKeys(*next))
			if err != nil {
				return err
			}
			if !release {
				return s.putVersioned(ctx, kindRun, id, item, prev.Version)
			}
			err = s.write(ctx, s.putIfVersion(item, prev.Version), s.deleteLock(runLockKey, "run_id", id))
			codes, _ := txCodes(err)
			switch {
			case txFailed(codes, 0) || txContended(codes):
				return errVersionConflict
			case txFailed(codes, 1):
				// Another run took over after this one's lease expired:
				// finish without touching its lock.
				return s.putVersioned(ctx, kindRun, id, item, prev.Version)
			case err != nil:
				return fmt.Errorf("finish %s %s: %w", kindRun, id, err)
			}
			return nil
		})
}

// ListReconcileRuns returns the newest runs first, at most limit (1…50).
func (s *Store) ListReconcileRuns(ctx context.Context, limit int) ([]domain.ReconcileRun, error) {
	limit = max(1, min(limit, 50))
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(IndexGSI1),
		KeyConditionExpression:    aws.String(exprIndexPartition(AttrGSI1PK)),
		ExpressionAttributeNames:  map[string]string{"#" + AttrGSI1PK: AttrGSI1PK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(gsiAllRuns)},
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(limit)),
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", kindRun, err)
	}
	runs := make([]domain.ReconcileRun, 0, len(out.Items))
	for _, item := range out.Items {
		var r domain.ReconcileRun
		if err := attributevalue.UnmarshalMap(item, &r); err != nil {
			return nil, fmt.Errorf("decode %s: %w", kindRun, err)
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// queryIndex lists every record of one index partition, in index order.
func queryIndex[T any](ctx context.Context, s *Store, kind, index, pkAttr, pk string) ([]T, error) {
	res := []T{}
	err := s.queryAll(ctx, &dynamodb.QueryInput{
		IndexName:                 aws.String(index),
		KeyConditionExpression:    aws.String(exprIndexPartition(pkAttr)),
		ExpressionAttributeNames:  map[string]string{"#" + pkAttr: pkAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk)},
	}, func(item map[string]types.AttributeValue) error {
		var v T
		if err := attributevalue.UnmarshalMap(item, &v); err != nil {
			return fmt.Errorf("decode %s: %w", kind, err)
		}
		res = append(res, v)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", kind, err)
	}
	return res, nil
}
