package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/jsii-runtime-go"

	"github.com/maasflow/maasflow/shared/connector/sqsrelay"
	"github.com/maasflow/maasflow/shared/metrics"
)

// Function error-rate alarms. A function error is often part of the
// workflow: the ASL retries MAASTransportError, MAASUnavailableError and
// the like with backoff, and catches the errors it routes to recovery. One
// execution's retry sequence makes at most MaxAttempts+1 invocations
// (infra/alarms_test.go checks every function-error retrier of the ASLs
// against errorRateMinInvocations × errorRatePeriods), so it cannot hold
// the rate over the whole window on its own; an execution that exhausts
// its retries ends Failed, which the execution alarms report at once. What
// pages here is a function failing most of its calls for a quarter of an
// hour across executions: an outage the retries do not absorb.
const (
	errorRatePeriodMinutes  = 5
	errorRatePeriods        = 3
	errorRatePercent        = 50
	errorRateMinInvocations = 5
)

// machineAlarm is one state machine the alarms and the dashboard watch.
type machineAlarm struct {
	id   string // CamelCase prefix of the alarm IDs ("" keeps the onboarding's historic names)
	what string // for descriptions and titles
	sm   awsstepfunctions.StateMachine
}

// machines lists the stack's state machines in a fixed order.
func (b *builder) machines() []machineAlarm {
	all := []machineAlarm{
		{"", "onboarding", b.machine},
		{"BatchOnboarding", "batch-onboarding", b.batch},
		{"Decommission", "decommission", b.decom},
		{"Reconcile", "reconcile", b.recon},
		{"MachineWatch", "machine-watch", b.watch},
	}
	var out []machineAlarm
	for _, m := range all {
		if m.sm != nil {
			out = append(out, m)
		}
	}
	return out
}

// alarms notify the alarm topic of executions that ended badly (failed,
// timed out or aborted) on every state machine, of functions failing at a
// sustained rate, of throttles, of requests stuck in a connector DLQ and of
// API 5xx answers; the dashboard shows the business view.
func (b *builder) alarms() {
	topic := awssns.NewTopic(b.stack, jsii.String("AlarmTopic"), &awssns.TopicProps{
		TopicName:   jsii.String(b.name("alarms")),
		DisplayName: jsii.String("maasflow " + b.props.Stage + " alarms"),
		EnforceSSL:  jsii.Bool(true),
	})
	if b.props.AlarmEmail != "" {
		topic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(b.props.AlarmEmail), nil))
	}
	b.connectorDLQAlarms(topic)
	action := awscloudwatchactions.NewSnsAction(topic)
	five := awscdk.Duration_Minutes(jsii.Number(errorRatePeriodMinutes))
	alarm := func(id, desc string, m awscloudwatch.IMetric, threshold float64, periods int) awscloudwatch.Alarm {
		a := awscloudwatch.NewAlarm(b.stack, jsii.String("Alarm"+id), &awscloudwatch.AlarmProps{
			AlarmName:          jsii.String(b.name(kebab(id))),
			AlarmDescription:   jsii.String(desc),
			Metric:             m,
			Threshold:          jsii.Number(threshold),
			EvaluationPeriods:  jsii.Number(periods),
			DatapointsToAlarm:  jsii.Number(periods),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		a.AddAlarmAction(action)
		return a
	}
	sum := &awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}

	for _, m := range b.machines() {
		failedID := m.id + "ExecutionsFailed"
		if m.sm == b.watch {
			failedID = "MachineWatchFailed" // the name operators already route on
		}
		alarm(failedID, m.what+" executions failed", m.sm.MetricFailed(sum), 1, 1)
		alarm(m.id+"ExecutionsTimedOut", m.what+" executions timed out", m.sm.MetricTimedOut(sum), 1, 1)
		// An operator's cancel aborts too: the alarm asks whoever
		// receives it to confirm the stop was meant.
		alarm(m.id+"ExecutionsAborted", m.what+" executions aborted (an operator's stop or a stopped parent): confirm it was intended",
			m.sm.MetricAborted(sum), 1, 1)
	}

	var errs, throttles []awscloudwatch.IMetric
	for _, name := range slices.Sorted(maps.Keys(b.fns)) {
		fn := b.fns[name]
		rate := errorRate(fn.MetricErrors(sum), fn.MetricInvocations(sum), name, five)
		errs = append(errs, fn.MetricErrors(sum))
		throttles = append(throttles, fn.MetricThrottles(sum))
		alarm(CamelCase(name)+"ErrorRate",
			"function "+name+" failed at least "+strconv.Itoa(errorRatePercent)+"% of its calls for "+
				strconv.Itoa(errorRatePeriods*errorRatePeriodMinutes)+" minutes: more than the workflow's retries absorb",
			rate, errorRatePercent, errorRatePeriods)
		alarm(CamelCase(name)+"Throttles", "function "+name+" was throttled", fn.MetricThrottles(sum), 1, 1)
	}
	for _, site := range b.props.ConnectorSites {
		dlq := b.connector.dlqs[site]
		// The alarm the api function makes for the DLQs it makes
		// (sqsrelay.DLQAlarm).
		alarm("Connector"+CamelCase(site)+"Dlq", "requests for the connector of site "+site+" failed repeatedly",
			dlq.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
				Period:    awscdk.Duration_Seconds(jsii.Number(sqsrelay.DLQAlarmPeriod.Seconds())),
				Statistic: jsii.String("Maximum"),
			}), sqsrelay.DLQAlarmThreshold, 1)
	}
	api5xx := awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:  jsii.String("AWS/ApiGateway"),
		MetricName: jsii.String("5xx"),
		DimensionsMap: &map[string]*string{
			"ApiId": b.api.ApiId(), "Stage": jsii.String("$default"),
		},
		Period: five, Statistic: jsii.String("Sum"),
	})
	alarm("Api5xx", "the API answered 5xx", api5xx, 1, 1)
	b.dashboard(sum, api5xx, errs, throttles)
}

// errorRate is a function's errors per hundred invocations; below
// errorRateMinInvocations calls in a period it is 0, so one failed call
// of a quiet function is not a 100% rate.
func errorRate(errs, invocations awscloudwatch.IMetric, fn string, period awscdk.Duration) awscloudwatch.MathExpression {
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String("IF(invocations >= " + strconv.Itoa(errorRateMinInvocations) +
			", 100 * errors / invocations, 0)"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{"errors": errs, "invocations": invocations},
		Label:        jsii.String(fn + " error %"),
		Period:       period,
	})
}

// dashboard is the business view first (onboardings and decommissions by
// outcome, every state machine's executions by outcome), then the
// technical one (API, function errors and throttles; the errors as sums,
// since a graph holds at most 100 metrics and each rate takes three).
func (b *builder) dashboard(sum *awscloudwatch.MetricOptions, api5xx awscloudwatch.IMetric, errs, throttles []awscloudwatch.IMetric) {
	dash := awscloudwatch.NewDashboard(b.stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DashboardName: jsii.String(b.name("")),
	})
	graph := func(title string, stacked bool, left ...awscloudwatch.IMetric) awscloudwatch.IWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String(title), Left: &left, Width: jsii.Number(12), Stacked: jsii.Bool(stacked),
		})
	}
	outcomes := func(sm awsstepfunctions.StateMachine) []awscloudwatch.IMetric {
		label := func(m awscloudwatch.Metric, l string) awscloudwatch.IMetric {
			return m.With(&awscloudwatch.MetricOptions{Label: jsii.String(l)})
		}
		return []awscloudwatch.IMetric{
			label(sm.MetricStarted(sum), "started"), label(sm.MetricSucceeded(sum), "succeeded"),
			label(sm.MetricFailed(sum), "failed"), label(sm.MetricTimedOut(sum), "timed out"),
			label(sm.MetricAborted(sum), "aborted"),
		}
	}
	business := []awscloudwatch.IWidget{graph("Onboardings by outcome", false, outcomes(b.machine)...)}
	if b.decom != nil {
		business = append(business, graph("Decommissions by outcome", false, outcomes(b.decom)...))
	}
	dash.AddWidgets(awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{
		Markdown: jsii.String("# maasflow " + b.props.Stage + "\nOutcomes of the workflows; a failed, timed-out or aborted execution also alarms."),
		Width:    jsii.Number(24), Height: jsii.Number(2),
	}))
	dash.AddWidgets(business...)
	dash.AddWidgets(b.runMetricWidgets()...)
	var row []awscloudwatch.IWidget
	for _, m := range b.machines() {
		if m.sm == b.machine || m.sm == b.decom {
			continue
		}
		title := m.what + " executions by outcome"
		if m.sm == b.watch {
			title = "Machine-watch runs by outcome"
		}
		row = append(row, graph(title, false, outcomes(m.sm)...))
		if len(row) == 2 {
			dash.AddWidgets(row...)
			row = nil
		}
	}
	if len(row) > 0 {
		dash.AddWidgets(row...)
	}
	dash.AddWidgets(graph("API 5xx", false, api5xx), graph("Function errors", false, errs...))
	dash.AddWidgets(graph("Function throttles", false, throttles...))
}

// runMetricWidgets graph the run outcome metric the activities write as
// EMF (shared/metrics.Outcomes): runs by outcome per workflow, manual
// interventions by reason, and each stage's p90 duration. SEARCH finds
// every outcome, reason and stage as they appear, without a widget per value.
func (b *builder) runMetricWidgets() []awscloudwatch.IWidget {
	search := func(title, dims, filter, stat string) awscloudwatch.IWidget {
		expr := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String(fmt.Sprintf("SEARCH('{%s,%s} %s', '%s', 300)", metrics.Namespace, dims, filter, stat)),
			// The label is each series' dimension values.
			Label:        jsii.String(""),
			Period:       awscdk.Duration_Minutes(jsii.Number(5)),
			UsingMetrics: &map[string]awscloudwatch.IMetric{},
		})
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String(title), Left: &[]awscloudwatch.IMetric{expr}, Width: jsii.Number(12),
		})
	}
	return []awscloudwatch.IWidget{
		search("Onboarding runs by outcome", "Workflow,Outcome", `Workflow="onboarding" MetricName="Runs"`, "Sum"),
		search("Decommission runs by outcome", "Workflow,Outcome", `Workflow="decommission" MetricName="Runs"`, "Sum"),
		search("Manual interventions by reason", "Workflow,Reason", `MetricName="Runs"`, "Sum"),
		search("Stage duration p90 (ms)", "Workflow,Stage", `MetricName="StageDuration"`, "p90"),
	}
}
