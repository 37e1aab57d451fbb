package onboarding

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// Diagnostic row sources (requirements readiness §8.3).
const (
	sourceInstallationOutput = "installation_output"
	sourceFailingEvents      = "maas_events"
	sourceClassification     = "classification"
)

// installLogName is curtin's log, the installation set's text result
// (maas-behaviour §12).
const installLogName = "/tmp/install.log"

// Diagnostic sizes: enough of the log's end to see curtin's error, small
// enough for a timeline row.
const (
	maxInstallTail = 8 << 10
	maxEventLines  = 20
)

// ClassifyDeployFailureInput identifies the onboarding and the newest MAAS
// event id before the failed deploy (DeployMachine's events_after; 0 reads
// every event, as a run resumed at wait_deployed must).
type ClassifyDeployFailureInput struct {
	OnboardingRef
	DeployEventsAfter int64 `json:"deploy_events_after"`
}

// ClassifyDeployFailureOutput is the class, the counts the state machine's
// RetryDeploy Choice compares, and a secret-free summary the failure path
// records.
type ClassifyDeployFailureOutput struct {
	Class          string `json:"class"`
	Reason         string `json:"reason"`
	DeployAttempts int    `json:"deploy_attempts"`
	DeployRetries  int    `json:"deploy_retries"`
	Summary        string `json:"summary"`
}

// ClassifyDeployFailure classifies a failed or stuck deploy from MAAS's
// events since the deploy began (by event id) and the installation output
// (current-installation script results), never from the status alone
// (domain.ClassifyDeployFailure). It copies the diagnostics onto the
// timeline as diagnostic rows: the installation output's tail and the
// failing events. It reports the deploy count and the policy's
// deploy_retries; whether to retry is the state machine's decision (its
// RetryDeploy Choice: class datasource and deploy_attempts <=
// deploy_retries, one retry by default, requirements readiness §4.4). Read-only towards
// MAAS; a repeat writes the same diagnostics again.
//
// It works in stage wait_deployed, the deploy wait it explains.
func (a *Activities) ClassifyDeployFailure(ctx context.Context, in ClassifyDeployFailureInput) (out ClassifyDeployFailureOutput, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	c, err := a.begin(ctx, "ClassifyDeployFailure", domain.StageWaitDeployed, in.OnboardingRef)
	defer c.Finish(ctx, &err)
	if err != nil {
		return out, err
	}
	if err := c.requireRunning(); err != nil {
		return out, err
	}
	if in.DeployEventsAfter < 0 {
		return out, &activities.InvalidInputError{Field: "deploy_events_after", Reason: "must be a MAAS event id (0 or more)"}
	}
	pol, _, err := c.runPolicy(ctx)
	if err != nil {
		return out, err
	}
	client, m, err := c.maasMachine(ctx)
	if err != nil {
		return out, err
	}
	// The deploy's events by id, never by MAAS's created times: a region
	// clock minutes off the control plane's would drop or add evidence
	// (maas-behaviour §11).
	evs, err := client.Events(ctx, maas.EventQuery{SystemID: m.SystemID, Level: maas.EventLevelInfo, Limit: activities.MaxEventsPerPoll, After: in.DeployEventsAfter})
	if err != nil {
		return out, err
	}
	install, err := installationOutput(ctx, client, m.SystemID)
	if err != nil {
		return out, err
	}

	evidence := domain.DeployFailureEvidence{StatusName: activities.MachineStatusName(m), InstallationOutput: install}
	for _, e := range evs {
		evidence.Events = append(evidence.Events, deployEvent(e))
	}
	cls := domain.ClassifyDeployFailure(evidence)
	out = ClassifyDeployFailureOutput{
		Class: cls.Class, Reason: cls.Reason, DeployAttempts: c.Rec.DeployAttempts, DeployRetries: pol.DeployRetries,
	}
	// The summary says whether the class is one the state machine retries
	// and the counts it compares; the decision itself is RetryDeploy's.
	retryable := "not retried"
	if cls.Class == domain.DeployFailureDatasource {
		retryable = "retry while deploys <= deploy_retries"
	}
	out.Summary = activities.Truncate(fmt.Sprintf("deploy %d of machine %s failed (%s), class %s, %s (deploy %d, deploy_retries %d): %s",
		out.DeployAttempts, m.SystemID, activities.MachineStatusName(m), cls.Class, retryable, out.DeployAttempts, pol.DeployRetries, cls.Reason), 1024)
	c.Log.InfoContext(ctx, "deploy failure classified", slog.String("class", cls.Class),
		slog.Int("deploy_attempts", out.DeployAttempts), slog.Int("deploy_retries", out.DeployRetries))

	rows := []domain.TimelineEntry{{Kind: domain.TimelineNote, Source: sourceClassification, Detail: out.Summary}}
	if install != "" {
		rows = append(rows, domain.TimelineEntry{Kind: domain.TimelineDiagnostic, Source: sourceInstallationOutput, Detail: activities.Tail(install, maxInstallTail)})
	}
	if lines := failingEvents(evs); lines != "" {
		rows = append(rows, domain.TimelineEntry{Kind: domain.TimelineDiagnostic, Source: sourceFailingEvents, Detail: lines})
	}
	return out, c.Timeline(ctx, rows...)
}

// installationOutput reads curtin's install log from the current
// installation set; none yet (MAAS answers that there is no current set,
// which the client reports as MAASNotFoundError) is empty output.
func installationOutput(ctx context.Context, client activities.MAAS, systemID string) (string, error) {
	set, err := client.ScriptResults(ctx, systemID, maas.ScriptsInstallation)
	if err != nil {
		if isNotFound(err) {
			return "", nil
		}
		return "", err
	}
	var parts []string
	for _, r := range set.Results {
		if r.Binary || r.Output == "" {
			continue
		}
		if r.Name == installLogName {
			return r.Output, nil
		}
		parts = append(parts, r.Output)
	}
	return strings.Join(parts, "\n"), nil
}

// failingEvents renders the WARNING-and-above events, oldest first.
func failingEvents(evs []maas.Event) string {
	var lines []string
	for i := len(evs) - 1; i >= 0 && len(lines) < maxEventLines; i-- { // MAAS lists newest first
		e := evs[i]
		switch strings.ToUpper(e.Level) {
		case maas.EventLevelWarning, maas.EventLevelError, maas.EventLevelCritical:
		default:
			continue
		}
		line := fmt.Sprintf("%s %s %s", e.Created.UTC().Format(time.RFC3339), e.Level, e.Type)
		if e.Description != "" {
			line += " - " + e.Description
		}
		lines = append(lines, activities.Truncate(line, 512))
	}
	return strings.Join(lines, "\n")
}
