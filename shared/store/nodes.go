package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/maasflow/maasflow/shared/domain"
)

const kindNode = "node"

func nodeKey(id string) key { return key{pkNodePrefix + id, "NODE"} }

// nodeHostKey is the item that makes (site, hostname) name one node.
func nodeHostKey(siteID, hostname string) key {
	return key{pkNodeHost + siteID + "#" + hostKey(hostname), "NODEHOST"}
}

type nodeHostLock struct {
	NodeID   string    `dynamodbav:"node_id"`
	SiteID   string    `dynamodbav:"site_id"`
	Hostname string    `dynamodbav:"hostname"`
	Since    time.Time `dynamodbav:"since"`
}

func checkNode(n domain.Node) error {
	if err := checkID(kindNode, "id", n.ID); err != nil {
		return err
	}
	if err := checkID(kindNode, "site_id", n.SiteID); err != nil {
		return err
	}
	return checkID(kindNode, "hostname", n.Hostname)
}

func (s *Store) nodeHostItem(n domain.Node) (map[string]types.AttributeValue, error) {
	return marshalItem(nodeHostLock{NodeID: n.ID, SiteID: n.SiteID, Hostname: n.Hostname, Since: s.now()},
		nodeHostKey(n.SiteID, n.Hostname), "node_host", nil)
}

// CreateNode stores a new node with version 1, stamping CreatedAt and
// UpdatedAt when zero, and claims its (site, hostname) in the same
// transaction. ItemConflictError when the id exists or the site already has a
// node with that hostname (whatever its status: a retired node keeps its
// name until it is renamed).
func (s *Store) CreateNode(ctx context.Context, n domain.Node) error {
	if err := checkNode(n); err != nil {
		return err
	}
	stamp(s.now(), &n.CreatedAt, &n.UpdatedAt, &n.Version)
	item, err := nodeItem(n)
	if err != nil {
		return err
	}
	host, err := s.nodeHostItem(n)
	if err != nil {
		return err
	}
	err = s.write(ctx, s.putIfAbsent(item), s.putIfAbsent(host))
	if codes, ok := txCodes(err); ok {
		switch {
		case txFailed(codes, 0):
			return &ItemConflictError{Kind: kindNode, ID: n.ID, Reason: "already exists"}
		case txFailed(codes, 1):
			return s.nodeHostTaken(ctx, n)
		}
	}
	if err != nil {
		return fmt.Errorf("create node %s: %w", n.ID, err)
	}
	// Its creator usually updates it next: no read back.
	s.recent.put(nodeKey(n.ID), item)
	return nil
}

func (s *Store) nodeHostTaken(ctx context.Context, n domain.Node) error {
	owner := "another node"
	var lock nodeHostLock
	if err := s.get(ctx, "node host", n.Hostname, nodeHostKey(n.SiteID, n.Hostname), &lock); err == nil {
		owner = "node " + lock.NodeID
	}
	return &ItemConflictError{Kind: kindNode, ID: n.ID,
		Reason: fmt.Sprintf("hostname %s on site %s belongs to %s", n.Hostname, n.SiteID, owner)}
}

// GetNode returns the node: ItemNotFoundError when there is none.
func (s *Store) GetNode(ctx context.Context, id string) (domain.Node, error) {
	var n domain.Node
	err := s.get(ctx, kindNode, id, nodeKey(id), &n)
	return n, err
}

// FindNodeByHost returns the site's node for hostname (compared
// case-insensitively); found is false when there is none.
func (s *Store) FindNodeByHost(ctx context.Context, siteID, hostname string) (n domain.Node, found bool, err error) {
	var lock nodeHostLock
	err = s.get(ctx, "node host", hostname, nodeHostKey(siteID, hostname), &lock)
	if _, missing := errors.AsType[*ItemNotFoundError](err); missing {
		return domain.Node{}, false, nil
	}
	if err != nil {
		return domain.Node{}, false, err
	}
	n, err = s.GetNode(ctx, lock.NodeID)
	if _, missing := errors.AsType[*ItemNotFoundError](err); missing {
		return domain.Node{}, false, nil
	}
	if err != nil {
		return domain.Node{}, false, err
	}
	return n, true, nil
}

// UpdateNode applies mutate under the node's version. The id and CreatedAt
// cannot change; a new site or hostname moves the (site, hostname) claim in
// the same transaction (ItemConflictError when the new one is taken).
// ItemNotFoundError when there is no such node; ItemConflictError after repeated
// concurrent updates.
func (s *Store) UpdateNode(ctx context.Context, id string, mutate Mutator[domain.Node]) (domain.Node, error) {
	return updateLoop(ctx, s, kindNode, id, nodeKey(id), mutate,
		func(prev, next *domain.Node) {
			next.ID, next.CreatedAt = prev.ID, prev.CreatedAt
			next.Version = prev.Version + 1
			next.UpdatedAt = s.now()
		},
		func(ctx context.Context, prev, next *domain.Node) error {
			if err := checkNode(*next); err != nil {
				return err
			}
			item, err := nodeItem(*next)
			if err != nil {
				return err
			}
			oldHost := nodeHostKey(prev.SiteID, prev.Hostname)
			if oldHost == nodeHostKey(next.SiteID, next.Hostname) {
				return s.putVersioned(ctx, kindNode, id, item, prev.Version)
			}
			host, err := s.nodeHostItem(*next)
			if err != nil {
				return err
			}
			err = s.write(ctx, s.putIfVersion(item, prev.Version),
				s.deleteLock(oldHost, "node_id", id), s.putLock(host, "node_id", id))
			codes, _ := txCodes(err)
			switch {
			case txFailed(codes, 0) || txContended(codes):
				return errVersionConflict
			case txFailed(codes, 2):
				return s.nodeHostTaken(ctx, *next)
			case err != nil:
				return fmt.Errorf("update node %s: %w", id, err)
			}
			return nil
		})
}
