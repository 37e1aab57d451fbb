package metrics

import (
	"net/http"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/events"
)

// Prometheus holds local mode's metrics in its own registry (no process or
// Go runtime collectors: the numbers are about the fleet, not the process).
type Prometheus struct {
	reg         *prometheus.Registry
	onboardings *prometheus.CounterVec
	decomms     *prometheus.CounterVec
	driftOpen   *prometheus.GaugeVec
	driftNew    *prometheus.CounterVec
	runs        *prometheus.CounterVec
	nodes       *prometheus.GaugeVec
	maasCalls   *prometheus.CounterVec

	mu sync.Mutex
	// kinds remembers the kinds each site reported, so a kind that went to
	// zero is set to zero rather than left at its last value.
	kinds map[string]map[string]bool
}

// NewPrometheus registers every metric.
func NewPrometheus() *Prometheus {
	p := &Prometheus{
		reg: prometheus.NewRegistry(),
		onboardings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "maasflow_onboarding_events_total",
			Help: "Onboarding milestones published on the bus, by event (started, completed, failed, manual_intervention_required).",
		}, []string{"event"}),
		decomms: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "maasflow_decommission_events_total",
			Help: "Decommission milestones published on the bus, by event.",
		}, []string{"event"}),
		driftOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "maasflow_drift_open",
			Help: "Open drift items after the last reconcile run of the site, by kind (acknowledged ones included).",
		}, []string{"site_id", "kind"}),
		driftNew: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "maasflow_drift_detected_total",
			Help: "Drift items opened by reconcile runs.",
		}, []string{"site_id"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "maasflow_reconcile_site_runs_total",
			Help: "Reconcile site checks, by result (ok, error).",
		}, []string{"site_id", "result"}),
		nodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "maasflow_reconcile_nodes_checked",
			Help: "Active nodes the last reconcile run of the site compared with MAAS.",
		}, []string{"site_id"}),
		maasCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "maasflow_reconcile_maas_calls_total",
			Help: "MAAS API calls made by reconcile runs, by kind (list, power).",
		}, []string{"site_id", "call"}),
		kinds: map[string]map[string]bool{},
	}
	p.reg.MustRegister(p.onboardings, p.decomms, p.driftOpen, p.driftNew, p.runs, p.nodes, p.maasCalls)
	return p
}

// ObserveEvent counts an onboarding or decommission event; others are
// ignored. Hand it to the bus's Subscribe.
func (p *Prometheus) ObserveEvent(env events.Envelope) {
	switch {
	case strings.HasPrefix(env.DetailType, "node.onboarding."):
		p.onboardings.WithLabelValues(strings.TrimPrefix(env.DetailType, "node.onboarding.")).Inc()
	case strings.HasPrefix(env.DetailType, "node.decommission."):
		p.decomms.WithLabelValues(strings.TrimPrefix(env.DetailType, "node.decommission.")).Inc()
	}
}

// RecordSite takes one site's result of a reconcile run.
func (p *Prometheus) RecordSite(info domain.SiteRunInfo) {
	if info.Error != "" {
		p.runs.WithLabelValues(info.SiteID, "error").Inc()
		return
	}
	p.runs.WithLabelValues(info.SiteID, "ok").Inc()
	p.nodes.WithLabelValues(info.SiteID).Set(float64(info.NodesChecked))
	p.driftNew.WithLabelValues(info.SiteID).Add(float64(info.New))
	p.maasCalls.WithLabelValues(info.SiteID, "list").Add(float64(info.MAASCalls))
	p.maasCalls.WithLabelValues(info.SiteID, "power").Add(float64(info.PowerQueries))

	p.mu.Lock()
	defer p.mu.Unlock()
	seen := p.kinds[info.SiteID]
	if seen == nil {
		seen = map[string]bool{}
		p.kinds[info.SiteID] = seen
	}
	for kind := range seen {
		if _, now := info.DriftByKind[kind]; !now {
			p.driftOpen.WithLabelValues(info.SiteID, kind).Set(0)
		}
	}
	for kind, n := range info.DriftByKind {
		seen[kind] = true
		p.driftOpen.WithLabelValues(info.SiteID, kind).Set(float64(n))
	}
}

// Register adds collectors other parts of local mode own (the API's refusal
// counts) to the registry.
func (p *Prometheus) Register(cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := p.reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Handler serves the registry in Prometheus text format.
func (p *Prometheus) Handler() http.Handler {
	return promhttp.HandlerFor(p.reg, promhttp.HandlerOpts{})
}
