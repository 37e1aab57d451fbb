package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/maasflow/maasflow/shared/design"
	"github.com/maasflow/maasflow/shared/domain"
)

// A site's RoCE rows are a view: the rows of a host its applied design
// names are that node's roce_rails, read from the design record; the rows
// of every other host are the ones written through the RoCE rows API. So
// an apply that changes a design's rails changes its rows in the one write
// that stores the design, however many rows that is (docs/decisions.md,
// "RoCE rows: the design's rails are read as rows").
//
// Rows stored under a host the design names are hidden, and removed around
// each design write (sweepRoCE): those of the hosts the stored design
// names before the write, those of the hosts the new one names after it.
// A crash between the two leaves rows that are hidden (their host is
// designed) until the next apply removes them before it changes which
// hosts are designed, so a host that leaves the design never shows rows
// from before it was designed.

// RoCEOwnedByDesignError: a RoCE row of a host the site's applied design
// names can be changed only through the design (its node's roce_rails).
// Field names the request's field (items[3].hostname, assignment_id).
type RoCEOwnedByDesignError struct {
	Field    string `json:"field"`
	Hostname string `json:"hostname"`
	SiteID   string `json:"site_id"`
}

func (e *RoCEOwnedByDesignError) Error() string {
	return fmt.Sprintf("the RoCE rows of host %s belong to site %s's design: change its node's roce_rails and apply the design", e.Hostname, e.SiteID)
}

// errDesignMoved: the site's design changed between the read a RoCE write
// was checked against and the write.
var errDesignMoved = errors.New("the site's design changed")

// siteDesignIfAny is the site's applied design as far as its RoCE rows
// go (its nodes only: the rest is not decoded), or the zero one (version
// 0, no hosts) when none was applied.
func (s *Store) siteDesignIfAny(ctx context.Context, siteID string) (SiteDesign, error) {
	var sd SiteDesign
	var nodes struct {
		Nodes []design.NodeAssignment `json:"nodes"`
	}
	err := s.getSiteDesignAs(ctx, siteID, &sd, &nodes)
	if errors.As(err, new(*ItemNotFoundError)) {
		return SiteDesign{SiteID: siteID}, nil
	}
	sd.Design.Nodes = nodes.Nodes
	return sd, err
}

// designUnchanged checks in a transaction that the site's design is still
// at version (0: still none).
func (s *Store) designUnchanged(siteID string, version int64) types.TransactWriteItem {
	cc := &types.ConditionCheck{TableName: aws.String(s.table), Key: designKey(siteID).av(),
		ConditionExpression: aws.String(condAbsent), ExpressionAttributeNames: map[string]string{"#pk": AttrPK}}
	if version > 0 {
		cc.ConditionExpression = aws.String(condVersion)
		cc.ExpressionAttributeNames = map[string]string{"#version": "version"}
		cc.ExpressionAttributeValues = map[string]types.AttributeValue{":version": num(version)}
	}
	return types.TransactWriteItem{ConditionCheck: cc}
}

// ListRoCEAssignments lists a site's rows; hostname "" means every host.
// The rows of a host the site's design names are its node's roce_rails
// (Source design, UpdatedAt the design's); the others are the rows written
// for the host (Source direct). Rows come ordered by id (hostname, then
// interface).
//
// The design and the direct rows are two reads: an apply between them that
// first names a host removes that host's direct rows after the design read
// said they were shown. So the design's version is read again after the
// rows, and the list made again when it moved.
func (s *Store) ListRoCEAssignments(ctx context.Context, siteID, hostname string) ([]domain.RoCEAssignment, error) {
	for attempt := 0; ; attempt++ {
		sd, err := s.siteDesignIfAny(ctx, siteID)
		if err != nil {
			return nil, err
		}
		out, err := s.listRoCE(ctx, siteID, sd, hostname)
		if err != nil {
			return nil, err
		}
		var head siteDesignItem
		err = s.get(ctx, kindDesign, siteID, designKey(siteID), &head)
		if errors.As(err, new(*ItemNotFoundError)) {
			head.Version, err = 0, nil
		}
		if err != nil {
			return nil, err
		}
		if head.Version == sd.Version {
			return out, nil
		}
		if attempt >= updateAttempts {
			return nil, &ItemConflictError{Kind: kindRoCE, ID: siteID, Reason: "the site's design kept changing while its rows were read"}
		}
	}
}

// listRoCE lists the site's rows as its design sd shows them.
func (s *Store) listRoCE(ctx context.Context, siteID string, sd SiteDesign, hostname string) ([]domain.RoCEAssignment, error) {
	hosts := sd.Design.Hosts()
	out := []domain.RoCEAssignment{}
	if hostname == "" || !hosts[hostKey(hostname)] {
		direct, err := s.listDirectRoCE(ctx, siteID, hostname)
		if err != nil {
			return nil, err
		}
		for _, r := range direct {
			if !hosts[hostKey(r.Hostname)] {
				r.Source = domain.RoCESourceDirect
				out = append(out, r)
			}
		}
	}
	for _, r := range design.RoCERows(sd.Design) {
		if hostname == "" || r.Hostname == hostKey(hostname) {
			r.SiteID, r.UpdatedAt = siteID, sd.UpdatedAt
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b domain.RoCEAssignment) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// refuseDesignedRow refuses a change to row id when the site's design
// names its host.
func (s *Store) refuseDesignedRow(ctx context.Context, siteID, id string) error {
	host, _, _ := strings.Cut(id, ":")
	sd, err := s.siteDesignIfAny(ctx, siteID)
	if err != nil {
		return err
	}
	if sd.Design.Hosts()[hostKey(host)] {
		return &RoCEOwnedByDesignError{Field: "assignment_id", Hostname: hostKey(host), SiteID: siteID}
	}
	return nil
}

// sweepRoCE removes the rows stored under the hosts a design names, which
// the view hides. It writes on its own, never with the request's audit
// entry: that rides the design write.
func (s *Store) sweepRoCE(ctx context.Context, siteID string, hosts map[string]bool) error {
	if len(hosts) == 0 {
		return nil
	}
	ctx = withoutPendingAudit(ctx)
	rows, err := s.listDirectRoCE(ctx, siteID, "")
	if err != nil {
		return err
	}
	var dels []types.TransactWriteItem
	for _, r := range rows {
		if hosts[hostKey(r.Hostname)] {
			dels = append(dels, types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: roceKey(siteID, r.ID).av()}})
		}
	}
	for start := 0; start < len(dels); start += maxTxItems {
		chunk := dels[start:min(start+maxTxItems, len(dels))]
		if _, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: chunk}); err != nil {
			return fmt.Errorf("remove the RoCE rows the design of site %s supersedes: %w", siteID, err)
		}
	}
	return nil
}
