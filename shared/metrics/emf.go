package metrics

import (
	"io"
	"sort"
	"sync"
	"time"

	"github.com/maasflow/maasflow/shared/domain"
)

// Namespace is the CloudWatch namespace of maasflow's metrics.
const Namespace = "maasflow"

// EMF writes reconcile results as CloudWatch embedded metric format lines
// (one JSON object per line); in Lambda, stdout is that log stream.
type EMF struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
}

// NewEMF returns an EMF writing to w, stamping lines with now (time.Now
// when nil).
func NewEMF(w io.Writer, now func() time.Time) *EMF {
	if now == nil {
		now = time.Now
	}
	return &EMF{w: w, now: now}
}

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type emfDirective struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []emfMetric `json:"Metrics"`
}

type emfMeta struct {
	Timestamp         int64          `json:"Timestamp"`
	CloudWatchMetrics []emfDirective `json:"CloudWatchMetrics"`
}

// RecordSite writes one line per site with the site totals (dimension
// SiteId) and one per drift kind (dimensions SiteId, Kind), so alarms can
// watch either.
func (e *EMF) RecordSite(info domain.SiteRunInfo) {
	ts := e.now().UnixMilli()
	lines := []map[string]any{{
		"_aws": emfMeta{Timestamp: ts, CloudWatchMetrics: []emfDirective{{
			Namespace: Namespace, Dimensions: [][]string{{"SiteId"}},
			Metrics: []emfMetric{
				{Name: "NodesChecked", Unit: "Count"}, {Name: "DriftOpen", Unit: "Count"},
				{Name: "DriftNew", Unit: "Count"}, {Name: "DriftClosed", Unit: "Count"},
				{Name: "MAASCalls", Unit: "Count"}, {Name: "PowerQueries", Unit: "Count"},
				{Name: "SiteErrors", Unit: "Count"},
			},
		}}},
		"SiteId": info.SiteID, "NodesChecked": info.NodesChecked, "DriftOpen": total(info.DriftByKind),
		"DriftNew": info.New, "DriftClosed": info.Closed, "MAASCalls": info.MAASCalls,
		"PowerQueries": info.PowerQueries, "SiteErrors": boolCount(info.Error != ""),
	}}
	kinds := make([]string, 0, len(info.DriftByKind))
	for k := range info.DriftByKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		lines = append(lines, map[string]any{
			"_aws": emfMeta{Timestamp: ts, CloudWatchMetrics: []emfDirective{{
				Namespace: Namespace, Dimensions: [][]string{{"SiteId", "Kind"}},
				Metrics: []emfMetric{{Name: "DriftOpen", Unit: "Count"}},
			}}},
			"SiteId": info.SiteID, "Kind": k, "DriftOpen": info.DriftByKind[k],
		})
	}
	e.write(lines)
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func boolCount(b bool) int {
	if b {
		return 1
	}
	return 0
}
