package reconcile

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
)

// Plan is how a site's drift items change after a run.
type Plan struct {
	// New items to create: drift no open item describes.
	New []domain.DriftItem
	// Seen are open items the run saw again, unchanged; their LastSeen and
	// RunID are the run's.
	Seen []domain.DriftItem
	// Closed are open items the run no longer saw, or saw changed (a new
	// item then replaces them); ClosedAt and ClosedBy are the run's.
	Closed []domain.DriftItem
}

// PlanDrift compares a site's open drift items with the run's findings. It
// is pure. An item is the same drift when subject, kind, expected and
// observed agree; a changed expected or observed closes the old item (an
// acknowledgement with it) and opens a new one.
func PlanDrift(siteID, runID string, now time.Time, open []domain.DriftItem, findings []Finding) Plan {
	var p Plan
	byKey := map[string]domain.DriftItem{}
	for _, d := range open {
		byKey[d.NodeID+"|"+d.Kind] = d
	}
	seen := map[string]bool{}
	for _, f := range findings {
		k := f.key()
		if seen[k] {
			continue
		}
		seen[k] = true
		if d, ok := byKey[k]; ok && d.Expected == f.Expected && d.Observed == f.Observed {
			d.LastSeen, d.RunID = now, runID
			d.Hostname, d.MAASSystemID, d.OnboardingID = f.Hostname, f.MAASSystemID, f.OnboardingID
			p.Seen = append(p.Seen, d)
			continue
		}
		p.New = append(p.New, domain.DriftItem{
			ID: ItemID(runID, siteID, k), NodeID: f.NodeID, Hostname: f.Hostname, SiteID: siteID,
			MAASSystemID: f.MAASSystemID, OnboardingID: f.OnboardingID, Kind: f.Kind,
			Expected: f.Expected, Observed: f.Observed, State: domain.DriftOpen,
			FirstSeen: now, LastSeen: now, RunID: runID,
		})
	}
	for _, d := range open {
		k := d.NodeID + "|" + d.Kind
		if seen[k] {
			if n, ok := byKey[k]; ok && containsID(p.Seen, n.ID) {
				continue
			}
		}
		at := now
		d.State, d.ClosedAt, d.ClosedBy = domain.DriftClosed, &at, runID
		p.Closed = append(p.Closed, d)
	}
	return p
}

func containsID(items []domain.DriftItem, id string) bool {
	for _, d := range items {
		if d.ID == id {
			return true
		}
	}
	return false
}

// ItemID names the item a run opens for a subject and kind: derived from
// both, so a site step run twice (a retried Lambda) creates it once.
func ItemID(runID, siteID, key string) string {
	sum := sha256.Sum256([]byte(siteID + "|" + key))
	return runID + "-" + hex.EncodeToString(sum[:8])
}
