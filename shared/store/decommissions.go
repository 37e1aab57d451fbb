package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/maasflow/maasflow/shared/domain"
)

// Keys of the decommission records (docs/data-model.md "Decommissions").
// They reuse the table's four indexes with their own partition values.
const (
	kindDecommission = "decommission"

	pkDecommission    = "DECOM#"
	pkDecomOpenLock   = "DECOMOPEN#"
	gsiAllDecoms      = "DECOM"
	gsiDecomStatus    = "DECOMSTATUS#"
	gsiDecomSite      = "DECOMSITE#"
	gsiDecomNode      = "DECOMNODE#"
	decomOwnerAttr    = "decommission_id"
	decomLockEntity   = "open_decommission"
	decomRecordSK     = "DECOM"
	decomOpenLockSort = "OPEN"
)

func decommissionKey(id string) key { return key{pkDecommission + id, decomRecordSK} }

// decomLockKey is the item that holds "the open decommission of this node".
func decomLockKey(nodeID string) key { return key{pkDecomOpenLock + nodeID, decomOpenLockSort} }

type decomLock struct {
	DecommissionID string    `dynamodbav:"decommission_id"`
	NodeID         string    `dynamodbav:"node_id"`
	Since          time.Time `dynamodbav:"since"`
}

// OpenWorkflowExistsError: the node already has an open onboarding or
// decommission (one open workflow per node).
type OpenWorkflowExistsError struct {
	NodeID   string `json:"node_id"`
	Workflow string `json:"workflow"` // onboarding or decommission
	ID       string `json:"id"`
}

func (e *OpenWorkflowExistsError) Error() string {
	if e.ID == "" {
		return fmt.Sprintf("node %s already has an open %s", e.NodeID, e.Workflow)
	}
	return fmt.Sprintf("node %s already has open %s %s", e.NodeID, e.Workflow, e.ID)
}

func checkDecommission(d domain.Decommission) error {
	for _, f := range []struct{ name, v string }{{"id", d.ID}, {"node_id", d.NodeID}, {"site_id", d.SiteID}, {"hostname", d.Hostname}} {
		if err := checkID(kindDecommission, f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

func decommissionItem(d domain.Decommission) (map[string]types.AttributeValue, error) {
	sk := timeKey(d.CreatedAt) + "#" + d.ID
	return marshalItem(d, decommissionKey(d.ID), kindDecommission, map[string]string{
		AttrGSI1PK: gsiAllDecoms, AttrGSI1SK: sk,
		AttrGSI2PK: gsiDecomStatus + string(d.Status), AttrGSI2SK: sk,
		AttrGSI3PK: gsiDecomSite + d.SiteID, AttrGSI3SK: sk,
		AttrGSI4PK: gsiDecomNode + d.NodeID, AttrGSI4SK: sk,
	})
}

func (s *Store) decomLockItem(d domain.Decommission) (map[string]types.AttributeValue, error) {
	return marshalItem(decomLock{DecommissionID: d.ID, NodeID: d.NodeID, Since: s.now()}, decomLockKey(d.NodeID), decomLockEntity, nil)
}

// absent is a transaction condition that the item under k does not exist.
func (s *Store) absent(k key) types.TransactWriteItem {
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                aws.String(s.table),
		Key:                      k.av(),
		ConditionExpression:      aws.String(condAbsent),
		ExpressionAttributeNames: map[string]string{"#pk": AttrPK},
	}}
}

// CreateDecommission writes the decommission and takes its node's lock in
// one transaction, on condition that the node's host has no open
// onboarding: OpenWorkflowExistsError names whichever holds the node.
// Version 1, CreatedAt/UpdatedAt when zero and status pending when empty.
// ConflictError when the id exists.
func (s *Store) CreateDecommission(ctx context.Context, d domain.Decommission) error {
	if err := checkDecommission(d); err != nil {
		return err
	}
	stamp(s.now(), &d.CreatedAt, &d.UpdatedAt, &d.Version)
	if d.Status == "" {
		d.Status = domain.DecommissionPending
	}
	if !domain.IsOpenStatus(d.Status) {
		return &InvalidRecordError{Kind: kindDecommission, Field: "status", Reason: "a new decommission must be open"}
	}
	item, err := decommissionItem(d)
	if err != nil {
		return err
	}
	lock, err := s.decomLockItem(d)
	if err != nil {
		return err
	}
	for range updateAttempts {
		err = s.write(ctx, s.putIfAbsent(item), s.putIfAbsent(lock), s.absent(openLockKey(d.SiteID, d.Hostname)))
		codes, _ := txCodes(err)
		switch {
		case txFailed(codes, 0):
			return &ItemConflictError{Kind: kindDecommission, ID: d.ID, Reason: "already exists"}
		case txFailed(codes, 1):
			holder, found, ferr := s.FindOpenDecommission(ctx, d.NodeID)
			if ferr != nil {
				return ferr
			}
			if !found {
				continue
			}
			return &OpenWorkflowExistsError{NodeID: d.NodeID, Workflow: "decommission", ID: holder}
		case txFailed(codes, 2):
			holder, found, ferr := s.FindOpenOnboarding(ctx, d.SiteID, d.Hostname)
			if ferr != nil {
				return ferr
			}
			if !found {
				continue
			}
			return &OpenWorkflowExistsError{NodeID: d.NodeID, Workflow: "onboarding", ID: holder}
		case txContended(codes):
			continue
		case err != nil:
			return fmt.Errorf("create decommission %s: %w", d.ID, err)
		}
		return nil
	}
	return &ItemConflictError{Kind: kindDecommission, ID: d.ID, Reason: "node lock contended, gave up"}
}

// FindOpenDecommission returns the id of the node's open decommission;
// found is false when there is none.
func (s *Store) FindOpenDecommission(ctx context.Context, nodeID string) (id string, found bool, err error) {
	var lock decomLock
	err = s.get(ctx, "open decommission", nodeID, decomLockKey(nodeID), &lock)
	if _, missing := errors.AsType[*ItemNotFoundError](err); missing {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return lock.DecommissionID, true, nil
}

// GetDecommission returns the decommission: NotFoundError when there is none.
func (s *Store) GetDecommission(ctx context.Context, id string) (domain.Decommission, error) {
	var d domain.Decommission
	err := s.get(ctx, kindDecommission, id, decommissionKey(id), &d)
	return d, err
}

// UpdateDecommission applies mutate under the record's version. Closing
// (open → completed, failed or cancelled) releases the node's lock in the
// same transaction; the id, node, site, hostname and CreatedAt cannot
// change, and a closed decommission cannot open again. NotFoundError,
// ConflictError after repeated concurrent updates.
func (s *Store) UpdateDecommission(ctx context.Context, id string, mutate Mutator[domain.Decommission]) (domain.Decommission, error) {
	return s.UpdateDecommissionWithTimeline(ctx, id, mutate, nil)
}

// UpdateDecommissionWithTimeline is UpdateDecommission that also appends
// the workflow rows rows returns for the change, in the same transaction:
// a stage change and its stage_entered row are stored together or not at
// all. rows sees the record before and after mutate; rows are stamped like
// AppendDecommissionEvents' (at most 90, MAAS events excluded: their
// at-most-once write is AppendDecommissionEvents').
func (s *Store) UpdateDecommissionWithTimeline(ctx context.Context, id string, mutate Mutator[domain.Decommission],
	rows func(prev, next domain.Decommission) []domain.DecommissionEvent,
) (domain.Decommission, error) {
	return updateLoop(ctx, s, kindDecommission, id, decommissionKey(id), mutate,
		func(prev, next *domain.Decommission) {
			next.ID, next.CreatedAt = prev.ID, prev.CreatedAt
			next.NodeID, next.SiteID, next.Hostname = prev.NodeID, prev.SiteID, prev.Hostname
			next.Version = prev.Version + 1
			next.UpdatedAt = s.now()
		},
		func(ctx context.Context, prev, next *domain.Decommission) error {
			if !domain.IsOpenStatus(prev.Status) && domain.IsOpenStatus(next.Status) {
				return &InvalidRecordError{Kind: kindDecommission, Field: "status", Reason: "a closed decommission cannot open again"}
			}
			item, err := decommissionItem(*next)
			if err != nil {
				return err
			}
			var add []domain.DecommissionEvent
			if rows != nil {
				add = rows(*prev, *next)
			}
			rowItems, err := s.decomRowItems(next.ID, add)
			if err != nil {
				return err
			}
			// Closing releases the node's lock.
			release := domain.IsOpenStatus(prev.Status) && !domain.IsOpenStatus(next.Status)
			if !release && len(rowItems) == 0 {
				return s.putVersioned(ctx, kindDecommission, id, item, prev.Version)
			}
			for {
				tx := []types.TransactWriteItem{s.putIfVersion(item, prev.Version)}
				lockAt := -1
				if release {
					lockAt = len(tx)
					tx = append(tx, s.deleteLock(decomLockKey(next.NodeID), decomOwnerAttr, next.ID))
				}
				rowsAt := len(tx)
				tx = append(tx, rowItems...)
				err := s.write(ctx, tx...)
				codes, _ := txCodes(err)
				switch {
				case txFailed(codes, 0) || txContended(codes) || (len(rowItems) > 0 && firstFailed(codes, rowsAt) >= rowsAt):
					// A row's sort key taken (new suffixes on the next
					// attempt) is retried like a lost version race.
					return errVersionConflict
				case release && txFailed(codes, lockAt):
					release = false // held by another decommission after a repair: keep it
					continue
				case err != nil:
					return fmt.Errorf("update decommission %s: %w", id, err)
				}
				return nil
			}
		})
}

// decomRowItems stamps workflow rows of the decommission id and builds
// their writes (each must not exist yet).
func (s *Store) decomRowItems(id string, rows []domain.DecommissionEvent) ([]types.TransactWriteItem, error) {
	if len(rows) > maxRowsWithRecord {
		return nil, &InvalidRecordError{Kind: kindDecomEvent, Field: "rows", Reason: fmt.Sprintf("at most %d rows go with a record", maxRowsWithRecord)}
	}
	tx := make([]types.TransactWriteItem, 0, len(rows))
	for i, ev := range rows {
		if ev.MAASEventID != 0 {
			return nil, &InvalidRecordError{Kind: kindDecomEvent, Field: fmt.Sprintf("rows[%d].maas_event_id", i), Reason: "MAAS events are appended on their own"}
		}
		ev.DecommissionID = id
		if ev.Time.IsZero() {
			ev.Time = s.now()
		}
		ev.Time = ev.Time.UTC()
		ev.Seq = s.decomEventSeq(ev)
		item, err := s.decomEventItem(ev)
		if err != nil {
			return nil, err
		}
		tx = append(tx, s.putIfAbsent(item))
	}
	return tx, nil
}

// DecommissionFilter selects decommissions for listing; at most one of
// NodeID, SiteID and Status picks the index, the others filter. Limit
// defaults to 50 (max 200); Cursor is the previous page's NextCursor.
type DecommissionFilter struct {
	Status string
	SiteID string
	NodeID string
	Limit  int
	Cursor string
}

// DecommissionPage is one page of decommissions, newest first.
type DecommissionPage struct {
	Items      []domain.Decommission `json:"items"`
	NextCursor string                `json:"next_cursor,omitempty"`
}

// ListDecommissions returns one page of decommissions, newest first, by
// Query on the most selective index the filter allows (never a Scan).
func (s *Store) ListDecommissions(ctx context.Context, f DecommissionFilter) (DecommissionPage, error) {
	var ix onboardingIndex
	switch {
	case f.NodeID != "":
		ix = onboardingIndex{IndexGSI4, AttrGSI4PK, AttrGSI4SK, gsiDecomNode + f.NodeID}
	case f.SiteID != "":
		ix = onboardingIndex{IndexGSI3, AttrGSI3PK, AttrGSI3SK, gsiDecomSite + f.SiteID}
	case f.Status != "":
		ix = onboardingIndex{IndexGSI2, AttrGSI2PK, AttrGSI2SK, gsiDecomStatus + f.Status}
	default:
		ix = onboardingIndex{IndexGSI1, AttrGSI1PK, AttrGSI1SK, gsiAllDecoms}
	}
	items, next, err := listIndexPage(ctx, s, kindDecommission, ix, f.Limit, f.Cursor, func(d domain.Decommission) bool {
		return (f.Status == "" || string(d.Status) == f.Status) && (f.SiteID == "" || d.SiteID == f.SiteID) &&
			(f.NodeID == "" || d.NodeID == f.NodeID)
	})
	return DecommissionPage{Items: items, NextCursor: next}, err
}
