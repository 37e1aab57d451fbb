package store

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/maasflow/maasflow/shared/design"
)

const kindDesign = "design"

func designKey(siteID string) key { return key{pkSitePrefix + siteID, skDesign} }

// SiteDesign is a site's applied design: one record per site, so an apply
// replaces the whole design in one conditional write and a reader never
// sees half of one. The design travels gzip-compressed JSON, which keeps a
// site of several thousand nodes inside DynamoDB's 400 KB item limit.
type SiteDesign struct {
	SiteID    string        `json:"site_id"`
	Version   int64         `json:"version"`
	Hash      string        `json:"hash"`
	Design    design.Design `json:"design"`
	UpdatedBy string        `json:"updated_by"`
	UpdatedAt time.Time     `json:"updated_at"`
}

type siteDesignItem struct {
	SiteID    string    `dynamodbav:"site_id"`
	Version   int64     `dynamodbav:"version"`
	Hash      string    `dynamodbav:"hash"`
	DesignGz  []byte    `dynamodbav:"design_gz"`
	UpdatedBy string    `dynamodbav:"updated_by"`
	UpdatedAt time.Time `dynamodbav:"updated_at"`
}

// GetSiteDesign returns the site's applied design: ItemNotFoundError when
// none was applied.
func (s *Store) GetSiteDesign(ctx context.Context, siteID string) (SiteDesign, error) {
	var out SiteDesign
	err := s.getSiteDesignAs(ctx, siteID, &out, &out.Design)
	return out, err
}

// getSiteDesignAs reads the site's design record into head (all but the
// design) and decodes the design's JSON into design, which may be a type
// holding only the fields its caller reads (json skips the others).
func (s *Store) getSiteDesignAs(ctx context.Context, siteID string, head *SiteDesign, design any) error {
	var it siteDesignItem
	if err := s.get(ctx, kindDesign, siteID, designKey(siteID), &it); err != nil {
		return err
	}
	zr, err := gzip.NewReader(bytes.NewReader(it.DesignGz))
	if err != nil {
		return fmt.Errorf("decode design of site %s: %w", siteID, err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return fmt.Errorf("decode design of site %s: %w", siteID, err)
	}
	head.SiteID, head.Version, head.Hash, head.UpdatedBy, head.UpdatedAt = it.SiteID, it.Version, it.Hash, it.UpdatedBy, it.UpdatedAt
	if err := json.Unmarshal(raw, design); err != nil {
		return fmt.Errorf("decode design of site %s: %w", siteID, err)
	}
	return nil
}

// PutSiteDesign stores d as the site's design over the version prev (0:
// the site has none yet) and returns it with its new version and time.
// ItemNotFoundError when the site does not exist; ItemConflictError when
// another apply got there first (the caller's plan is stale).
//
// The design's nodes own their hosts' RoCE rows from this one write on
// (roce_view.go): the rows stored under the hosts the stored design names
// are removed before it, those under the hosts d names after it; both
// are hidden already, so neither removal changes what a reader sees.
func (s *Store) PutSiteDesign(ctx context.Context, d SiteDesign, prev int64) (SiteDesign, error) {
	if err := checkID(kindDesign, "site_id", d.SiteID); err != nil {
		return SiteDesign{}, err
	}
	if prev > 0 {
		cur, err := s.GetSiteDesign(ctx, d.SiteID)
		if err != nil && !errors.As(err, new(*ItemNotFoundError)) {
			return SiteDesign{}, err
		}
		if err == nil && cur.Version == prev {
			if err := s.sweepRoCE(ctx, d.SiteID, cur.Design.Hosts()); err != nil {
				return SiteDesign{}, err
			}
		}
	}
	raw, err := json.Marshal(d.Design)
	if err != nil {
		return SiteDesign{}, fmt.Errorf("encode design of site %s: %w", d.SiteID, err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return SiteDesign{}, err
	}
	if err := zw.Close(); err != nil {
		return SiteDesign{}, err
	}
	d.Version, d.UpdatedAt = prev+1, s.now().UTC()
	item, err := marshalItem(siteDesignItem{SiteID: d.SiteID, Version: d.Version, Hash: d.Hash, DesignGz: buf.Bytes(),
		UpdatedBy: d.UpdatedBy, UpdatedAt: d.UpdatedAt}, designKey(d.SiteID), kindDesign, nil)
	if err != nil {
		return SiteDesign{}, err
	}
	put := s.putIfAbsent(item)
	if prev > 0 {
		put = s.putIfVersion(item, prev)
	}
	err = s.write(ctx, s.exists(siteKey(d.SiteID)), put)
	if codes, ok := txCodes(err); ok {
		switch {
		case txFailed(codes, 0):
			return SiteDesign{}, &ItemNotFoundError{Kind: kindSite, ID: d.SiteID}
		case txFailed(codes, 1) || txContended(codes):
			return SiteDesign{}, &ItemConflictError{Kind: kindDesign, ID: d.SiteID, Reason: fmt.Sprintf("changed since version %d was read", prev)}
		}
	}
	if err != nil {
		return SiteDesign{}, fmt.Errorf("put design of site %s: %w", d.SiteID, err)
	}
	// The design is stored: a row this cannot remove stays hidden, and the
	// next design write removes it first, so its failure is not the apply's.
	_ = s.sweepRoCE(ctx, d.SiteID, d.Design.Hosts())
	return d, nil
}
