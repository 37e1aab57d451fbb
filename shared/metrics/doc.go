// Package metrics turns what maasflow does into numbers: drift counts from
// reconcile runs and onboarding and decommission counters from the event
// bus. Prometheus serves them in text format on local mode's GET /metrics;
// EMF writes them as CloudWatch embedded metric format lines, which the
// Lambda runtime's log stream turns into CloudWatch metrics.
package metrics
