package localstack

import "github.com/prometheus/client_golang/prometheus"

// refusalCollector serves the API's refusal counts on GET /metrics: the
// requests refused before the caller proved who it is (by error code) and
// the connections refused past the per-client bound. They are read when
// scraped, from the counters the API and the listener keep anyway.
type refusalCollector struct{ s *Stack }

var (
	refusedRequestsDesc = prometheus.NewDesc("maasflow_api_refused_requests_total",
		"API requests refused before the caller proved who it is (no or a bad credential, a rejected enrollment token, an unknown route, a malformed id), by error code; they are not audited one by one.",
		[]string{"code"}, nil)
	refusedConnsDesc = prometheus.NewDesc("maasflow_api_refused_connections_total",
		"Connections to the API answered 503 and closed because their client already held its bound of open connections.", nil, nil)
	openConnsDesc = prometheus.NewDesc("maasflow_api_open_connections",
		"Connections the API server holds open.", nil, nil)
)

func (c refusalCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- refusedRequestsDesc
	ch <- refusedConnsDesc
	ch <- openConnsDesc
}

func (c refusalCollector) Collect(ch chan<- prometheus.Metric) {
	for code, n := range c.s.refusals.Counts() {
		ch <- prometheus.MustNewConstMetric(refusedRequestsDesc, prometheus.CounterValue, float64(n), code)
	}
	if l := c.s.apiListener; l != nil {
		ch <- prometheus.MustNewConstMetric(refusedConnsDesc, prometheus.CounterValue, float64(l.Refused()))
		ch <- prometheus.MustNewConstMetric(openConnsDesc, prometheus.GaugeValue, float64(l.Open()))
	}
}
