package store

import (
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file is the item codec: how records become keys and items.

// --- keys

// Partition and sort key prefixes. IDs may not contain '#', so a prefix plus
// an ID never reads as another record's key.
const (
	entityAttr = "entity"

	pkSites       = "SITES"
	skSitePrefix  = "SITE#"
	pkSiteName    = "SITENAME#"
	pkSitePrefix  = "SITE#"
	skProfile     = "PROFILE#"
	skRoCE        = "ROCE#"
	skDesign      = "DESIGN"
	pkSKUs        = "SKUS"
	skSKUPrefix   = "SKU#"
	pkNodePrefix  = "NODE#"
	pkNodeHost    = "NODEHOST#"
	pkOnboarding  = "ONB#"
	pkOpenLock    = "OPEN#"
	skEventPrefix = "EV#"
	pkToken       = "TOKEN#"
	pkAudit       = "AUDIT"

	gsiAllOnboardings = "ONB"
	gsiOnbStatus      = "ONBSTATUS#"
	gsiOnbSite        = "ONBSITE#"
	gsiOnbHost        = "ONBHOST#"

	// Reconciliation (reconcile.go).
	pkMAASState  = "MAASSTATE#"
	skMAASState  = "NODE#"
	pkDrift      = "DRIFT#"
	pkRun        = "RECONRUN#"
	pkRunLock    = "RECONCILE"
	skRunLock    = "LOCK"
	gsiDrift     = "DRIFT#"
	gsiDriftKind = "DRIFTKIND#"
	gsiDriftSite = "DRIFTSITE#"
	gsiDriftNode = "DRIFTNODE#"
	gsiAllRuns   = "RECONRUNS"
)

// sortTime is a fixed-width UTC layout: unlike RFC3339Nano it keeps trailing
// zeros, so byte order is time order.
const sortTime = "2006-01-02T15:04:05.000000000Z"

func timeKey(t time.Time) string { return t.UTC().Format(sortTime) }

type key struct{ pk, sk string }

func (k key) av() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrPK: str(k.pk), AttrSK: str(k.sk)}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: fmt.Sprint(n)}
}

// hostKey is the form of a hostname inside keys: DNS names are
// case-insensitive (RFC 4343), so Gpu01 and gpu01 are one host.
func hostKey(h string) string { return strings.ToLower(h) }

func checkID(kind, field, v string) error {
	switch {
	case v == "":
		return &InvalidRecordError{Kind: kind, Field: field, Reason: "is required"}
	case strings.ContainsAny(v, "#\x00"):
		return &InvalidRecordError{Kind: kind, Field: field, Reason: "must not contain '#'"}
	}
	return nil
}

// --- items

// marshalItem turns rec into an item under k, tagged with its entity name,
// plus extra attributes (index keys).
func marshalItem(rec any, k key, entity string, extra map[string]string) (map[string]types.AttributeValue, error) {
	item, err := attributevalue.MarshalMap(rec)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", entity, err)
	}
	pruneEmpty(item)
	item[AttrPK] = str(k.pk)
	item[AttrSK] = str(k.sk)
	item[entityAttr] = str(entity)
	for name, v := range extra {
		if v != "" { // index keys may not be empty; absent means "not indexed"
			item[name] = str(v)
		}
	}
	return item, nil
}

// pruneEmpty drops empty maps and lists (an all-inherit Policy, no
// capabilities): they decode to the same zero values when absent, and
// minidyn's expression evaluator rejects any item that holds one.
func pruneEmpty(m map[string]types.AttributeValue) {
	for name, v := range m {
		switch v := v.(type) {
		case *types.AttributeValueMemberM:
			pruneEmpty(v.Value)
			if len(v.Value) == 0 {
				delete(m, name)
			}
		case *types.AttributeValueMemberL:
			if len(v.Value) == 0 {
				delete(m, name)
			}
		}
	}
}
