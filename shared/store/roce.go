package store

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/maasflow/maasflow/shared/domain"
)

const kindRoCE = "roce_assignment"

// RoCERowsPerTransaction is the most rows UpsertRoCEAssignments writes in
// one transaction, all or none: DynamoDB's 100 items less one for the
// site check, one for the design check and one for a request's audit
// entry. The RoCE API takes no more in one request.
const RoCERowsPerTransaction = maxTxItems - 3

// RoCEAssignmentID is the id of the site's row for (hostname, interface):
// "<hostname>:<interface>", the hostname in lower case. Neither part can
// hold ':' (RFC 1123 host names; Linux interface names), so the id is
// unambiguous and a repeated upsert of the same row updates it.
func RoCEAssignmentID(hostname, iface string) string { return hostKey(hostname) + ":" + iface }

func roceKey(siteID, id string) key { return key{pkSitePrefix + siteID, skRoCE + id} }

func checkRoCEName(field, v string) error {
	switch {
	case v == "":
		return &InvalidRecordError{Kind: kindRoCE, Field: field, Reason: "is required"}
	case strings.ContainsAny(v, ":#/ \t\r\n\x00"):
		return &InvalidRecordError{Kind: kindRoCE, Field: field, Reason: "must not contain ':', '#', '/' or spaces"}
	}
	return nil
}

func checkRoCE(i int, a domain.RoCEAssignment) error {
	if err := checkRoCEName(fmt.Sprintf("items[%d].hostname", i), a.Hostname); err != nil {
		return err
	}
	if err := checkRoCEName(fmt.Sprintf("items[%d].interface", i), a.Interface); err != nil {
		return err
	}
	if p, err := netip.ParsePrefix(a.IPv4CIDR); err != nil || !p.Addr().Is4() {
		return &InvalidRecordError{Kind: kindRoCE, Field: fmt.Sprintf("items[%d].ipv4_cidr", i), Reason: "is not an IPv4 CIDR"}
	}
	return nil
}

// UpsertRoCEAssignments writes the site's rows and returns them as stored
// (id, site, UpdatedAt and Source set). It is all-or-nothing: every row is
// validated first (InvalidRecordError names the first bad one, duplicates
// included), and the site's existence is checked in the same transaction
// (ItemNotFoundError). A row of a host the site's design names is refused
// (RoCEOwnedByDesignError): the design owns that host's rows. The design
// read is checked in each transaction too, so a design applied meanwhile
// is seen (the upsert starts again). Up to 97 rows go in one transaction; a
// larger batch is written in several and, when one fails, the earlier ones
// are rolled back to the rows they replaced; the request's audit entry
// rides the last, so only a batch written whole is audited as written.
func (s *Store) UpsertRoCEAssignments(ctx context.Context, siteID string, items []domain.RoCEAssignment) ([]domain.RoCEAssignment, error) {
	if err := checkID(kindRoCE, "site_id", siteID); err != nil {
		return nil, err
	}
	now := s.now()
	rows := make([]domain.RoCEAssignment, len(items))
	seen := map[string]int{}
	for i, a := range items {
		if err := checkRoCE(i, a); err != nil {
			return nil, err
		}
		a.ID = RoCEAssignmentID(a.Hostname, a.Interface)
		if j, dup := seen[a.ID]; dup {
			return nil, &InvalidRecordError{Kind: kindRoCE, Field: fmt.Sprintf("items[%d]", i), Reason: fmt.Sprintf("repeats items[%d] (%s)", j, a.ID)}
		}
		seen[a.ID] = i
		a.SiteID, a.UpdatedAt, a.Source = siteID, now, domain.RoCESourceDirect
		rows[i] = a
	}
	if len(rows) == 0 {
		return rows, nil
	}
	for attempt := 0; ; attempt++ {
		err := s.upsertRoCE(ctx, siteID, rows)
		if errors.Is(err, errDesignMoved) && attempt < updateAttempts {
			continue
		}
		if errors.Is(err, errDesignMoved) {
			return nil, &ItemConflictError{Kind: kindRoCE, ID: siteID, Reason: "the site's design kept changing while the rows were written"}
		}
		if err != nil {
			return nil, err
		}
		return rows, nil
	}
}

// upsertRoCE writes rows, conditional on the site's design being the one
// it checked them against: errDesignMoved when it changed meanwhile.
func (s *Store) upsertRoCE(ctx context.Context, siteID string, rows []domain.RoCEAssignment) error {
	sd, err := s.siteDesignIfAny(ctx, siteID)
	if err != nil {
		return err
	}
	hosts := sd.Design.Hosts()
	for i, a := range rows {
		if hosts[hostKey(a.Hostname)] {
			return &RoCEOwnedByDesignError{Field: fmt.Sprintf("items[%d].hostname", i), Hostname: hostKey(a.Hostname), SiteID: siteID}
		}
	}

	const perTx = RoCERowsPerTransaction
	var before map[string]domain.RoCEAssignment
	if len(rows) > perTx {
		old, err := s.listDirectRoCE(ctx, siteID, "")
		if err != nil {
			return err
		}
		before = make(map[string]domain.RoCEAssignment, len(old))
		for _, a := range old {
			before[a.ID] = a
		}
	}
	for start := 0; start < len(rows); start += perTx {
		chunk := rows[start:min(start+perTx, len(rows))]
		tx := []types.TransactWriteItem{s.exists(siteKey(siteID)), s.designUnchanged(siteID, sd.Version)}
		for _, a := range chunk {
			item, err := marshalItem(a, roceKey(siteID, a.ID), kindRoCE, nil)
			if err != nil {
				return err
			}
			tx = append(tx, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: item}})
		}
		// The request's audit entry rides the last chunk: the batch is
		// written whole only once that one commits, and a rolled-back
		// batch must leave no entry saying it was written.
		wctx := ctx
		if start+perTx < len(rows) {
			wctx = withoutPendingAudit(ctx)
		}
		err := s.write(wctx, tx...)
		if err == nil {
			continue
		}
		codes, ok := txCodes(err)
		switch {
		case ok && txFailed(codes, 0):
			err = &ItemNotFoundError{Kind: kindSite, ID: siteID}
		case ok && txFailed(codes, 1):
			err = errDesignMoved
		default:
			err = fmt.Errorf("upsert RoCE assignments of site %s: %w", siteID, err)
		}
		if start > 0 {
			if rerr := s.restoreRoCE(ctx, siteID, rows[:start], before); rerr != nil {
				if errors.Is(err, errDesignMoved) { // not worth another attempt now
					err = &ItemConflictError{Kind: kindRoCE, ID: siteID, Reason: "the site's design changed while the rows were written"}
				}
				return errors.Join(err, rerr)
			}
		}
		return err
	}
	return nil
}

// restoreRoCE undoes written rows: each gets back the row it replaced, or
// goes away if it was new.
func (s *Store) restoreRoCE(ctx context.Context, siteID string, written []domain.RoCEAssignment, before map[string]domain.RoCEAssignment) error {
	ctx = withoutPendingAudit(ctx) // undoing the change is not the change
	for start := 0; start < len(written); start += maxTxItems {
		var tx []types.TransactWriteItem
		for _, a := range written[start:min(start+maxTxItems, len(written))] {
			k := roceKey(siteID, a.ID)
			old, existed := before[a.ID]
			if !existed {
				tx = append(tx, types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: k.av()}})
				continue
			}
			item, err := marshalItem(old, k, kindRoCE, nil)
			if err != nil {
				return err
			}
			tx = append(tx, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: item}})
		}
		if _, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tx}); err != nil {
			return fmt.Errorf("roll back RoCE assignments of site %s: %w", siteID, err)
		}
	}
	return nil
}

// listDirectRoCE lists the rows stored under the site (hostname "" means
// every host), in id order, the designed hosts' hidden ones included.
func (s *Store) listDirectRoCE(ctx context.Context, siteID, hostname string) ([]domain.RoCEAssignment, error) {
	prefix := skRoCE
	if hostname != "" {
		prefix += hostKey(hostname) + ":"
	}
	return queryPrefix[domain.RoCEAssignment](ctx, s, kindRoCE, pkSitePrefix+siteID, prefix)
}

// DeleteRoCEAssignment removes one row: ItemNotFoundError when the site has no
// row with that id, so a repeated delete says so; RoCEOwnedByDesignError
// when the site's design names the row's host.
func (s *Store) DeleteRoCEAssignment(ctx context.Context, siteID, id string) error {
	if err := s.refuseDesignedRow(ctx, siteID, id); err != nil {
		return err
	}
	// No condition: minidyn evaluates a plain DeleteItem's condition against
	// the wrong item, and the old image tells absence just as well.
	out, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:    aws.String(s.table),
		Key:          roceKey(siteID, id).av(),
		ReturnValues: types.ReturnValueAllOld,
	})
	if err != nil {
		return fmt.Errorf("delete RoCE assignment %s of site %s: %w", id, siteID, err)
	}
	if len(out.Attributes) == 0 {
		return &ItemNotFoundError{Kind: kindRoCE, ID: id}
	}
	return nil
}
