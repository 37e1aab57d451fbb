package store

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/maasflow/maasflow/shared/domain"
)

// Index partitions of node records (docs/data-model.md "Nodes"): every
// node, by status, by site and by hostname, newest first.
const (
	gsiAllNodes    = "NODES"
	gsiNodeStatus  = "NODESTATUS#"
	gsiNodeSite    = "NODESITE#"
	gsiNodeHost    = "NODEHOSTNAME#"
	skNodeTokenRef = "TOKREF#"
)

func nodeItem(n domain.Node) (map[string]types.AttributeValue, error) {
	sk := timeKey(n.CreatedAt) + "#" + n.ID
	return marshalItem(n, nodeKey(n.ID), kindNode, map[string]string{
		AttrGSI1PK: gsiAllNodes, AttrGSI1SK: sk,
		AttrGSI2PK: gsiNodeStatus + n.Status, AttrGSI2SK: sk,
		AttrGSI3PK: gsiNodeSite + n.SiteID, AttrGSI3SK: sk,
		AttrGSI4PK: gsiNodeHost + hostKey(n.Hostname), AttrGSI4SK: sk,
	})
}

// NodeFilter selects nodes for listing: Hostname, SiteID or Status picks
// the index (in that order), the rest (and SKUID) filter.
type NodeFilter struct {
	Status   string
	SiteID   string
	SKUID    string
	Hostname string
	Limit    int
	Cursor   string
}

// NodePage is one page of nodes, newest first.
type NodePage struct {
	Items      []domain.Node `json:"items"`
	NextCursor string        `json:"next_cursor,omitempty"`
}

// ListNodes returns one page of nodes by Query on an index (never a Scan).
func (s *Store) ListNodes(ctx context.Context, f NodeFilter) (NodePage, error) {
	var ix onboardingIndex
	switch {
	case f.Hostname != "":
		ix = onboardingIndex{IndexGSI4, AttrGSI4PK, AttrGSI4SK, gsiNodeHost + hostKey(f.Hostname)}
	case f.SiteID != "":
		ix = onboardingIndex{IndexGSI3, AttrGSI3PK, AttrGSI3SK, gsiNodeSite + f.SiteID}
	case f.Status != "":
		ix = onboardingIndex{IndexGSI2, AttrGSI2PK, AttrGSI2SK, gsiNodeStatus + f.Status}
	default:
		ix = onboardingIndex{IndexGSI1, AttrGSI1PK, AttrGSI1SK, gsiAllNodes}
	}
	items, next, err := listIndexPage(ctx, s, kindNode, ix, f.Limit, f.Cursor, func(n domain.Node) bool {
		return (f.Status == "" || n.Status == f.Status) && (f.SiteID == "" || n.SiteID == f.SiteID) &&
			(f.SKUID == "" || n.SKUID == f.SKUID) && (f.Hostname == "" || hostKey(n.Hostname) == hostKey(f.Hostname))
	})
	return NodePage{Items: items, NextCursor: next}, err
}

// nodeTokenRef records that a token was issued for a node outside an
// onboarding's deploy (a reissued bundle), so a later reissue or removal
// finds every token of the node by Query.
type nodeTokenRef struct {
	Hash      string    `dynamodbav:"hash"`
	NodeID    string    `dynamodbav:"node_id"`
	CreatedAt time.Time `dynamodbav:"created_at"`
}

// AddNodeTokenRef records hash as one of the node's tokens; a repeat is a
// no-op.
func (s *Store) AddNodeTokenRef(ctx context.Context, nodeID, hash string) error {
	if err := checkID("node token", "node_id", nodeID); err != nil {
		return err
	}
	if err := checkID("node token", "hash", hash); err != nil {
		return err
	}
	item, err := marshalItem(nodeTokenRef{Hash: hash, NodeID: nodeID, CreatedAt: s.now().UTC()},
		key{pkNodePrefix + nodeID, skNodeTokenRef + hash}, "node_token_ref", nil)
	if err != nil {
		return err
	}
	return s.write(ctx, types.TransactWriteItem{Put: &types.Put{TableName: &s.table, Item: item}})
}

// ListNodeTokenRefs returns the hashes AddNodeTokenRef recorded for the
// node.
func (s *Store) ListNodeTokenRefs(ctx context.Context, nodeID string) ([]string, error) {
	refs, err := queryPrefix[nodeTokenRef](ctx, s, "node tokens", pkNodePrefix+nodeID, skNodeTokenRef)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.Hash
	}
	return out, nil
}

// NodeTokenHashes lists every token hash the node may still use: those
// AddNodeTokenRef recorded (reissued bundles) and the current deploy token
// of each onboarding of the node (a deploy revokes the one it supersedes).
func (s *Store) NodeTokenHashes(ctx context.Context, node domain.Node) ([]string, error) {
	hashes, err := s.ListNodeTokenRefs(ctx, node.ID)
	if err != nil {
		return nil, err
	}
	f := OnboardingFilter{SiteID: node.SiteID, Hostname: node.Hostname, Limit: MaxPageSize}
	for {
		page, err := s.ListOnboardings(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Items {
			if o.NodeID == node.ID && o.EnrollmentTokenHash != "" {
				hashes = append(hashes, o.EnrollmentTokenHash)
			}
		}
		if page.NextCursor == "" {
			return hashes, nil
		}
		f.Cursor = page.NextCursor
	}
}
