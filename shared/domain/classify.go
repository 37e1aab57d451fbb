package domain

import (
	"regexp"
	"strings"
)

// Deploy failure classes (requirements readiness §4.4). Only datasource failures are
// retried: the installed OS could not reach MAAS's metadata service, which a
// release and redeploy often cures (a DHCP lease, a route, a race with the
// rack). Anything else (curtin, storage, power, unknown) needs an operator.
const (
	DeployFailureDatasource = "datasource"
	DeployFailureOther      = "other"
)

// DeployEvent is a MAAS event as the classifier reads it (maas-behaviour §11).
type DeployEvent struct {
	Type        string `json:"type"`
	Level       string `json:"level"`
	Description string `json:"description"`
}

// DeployFailureEvidence is what MAAS shows about a failed or stuck deploy:
// the machine's status, its events since the deploy began, and the tail of
// the installation output (curtin's /tmp/install.log, maas-behaviour §12).
type DeployFailureEvidence struct {
	StatusName         string        `json:"status_name"`
	Events             []DeployEvent `json:"events"`
	InstallationOutput string        `json:"installation_output"`
}

// DeployFailureClassification is the class and the evidence that decided it.
type DeployFailureClassification struct {
	Class  string `json:"class"`
	Reason string `json:"reason"`
}

var (
	// curtinOutputFailure matches curtin's own failure lines in the
	// installation log ("finish: cmd-install: FAIL: curtin command install",
	// "Installation failed with exception: …").
	curtinOutputFailure = regexp.MustCompile(`(?i)(finish: cmd-install[^\n]*: FAIL|installation failed|curtin command failed)`)
	// datasourceText matches what cloud-init and MAAS write when the
	// deployed OS cannot reach the metadata service (maas-behaviour §14.1).
	datasourceText = regexp.MustCompile(`(?i)(datasource|metadata[ _-]?(url|service|server|source)?[^\n]*(unreachable|not reachable|could not|couldn't|cannot|can not|failed|timed? ?out|refused)|failed (reading|fetching|to fetch|to read)[^\n]*metadata|url_helper|no active metadata service|cloud-?init[^\n]*(error|fail|timed? ?out))`)
	// deployTimeout matches MAAS's own deploy timeout texts: ≤3.5 "Node
	// operation 'Deploying' timed out after 30 minutes.", 3.6+ "time-out
	// during deployment" (maas-behaviour §4). MAAS times out a deploy when the
	// installed OS never fetches its user-data, the datasource symptom.
	deployTimeout = regexp.MustCompile(`(?i)(operation 'deploying' timed out|time-?out during deployment)`)
	// powerText matches BMC failures, which a redeploy will not cure.
	powerText = regexp.MustCompile(`(?i)(failed to power|failed to query node's bmc|unable to power control|power ?problem|no rack controllers can access the bmc)`)
)

// ClassifyDeployFailure decides from MAAS's events and installation output,
// never from the status alone (maas-behaviour §14.1: Deployed and Deploying both
// lie). Evidence is weighed in this order, the first that applies winning:
//  1. curtin failed (a 'curtin' event or curtin's failure lines in the
//     installation output): other — the disk was never installed;
//  2. the BMC failed: other;
//  3. cloud-init or MAAS reports the metadata datasource unreachable, a
//     'cloudinit' failure, or MAAS timed the deploy out: datasource;
//  4. anything else: other.
//
// Only WARNING, ERROR and CRITICAL events count (and events with no level):
// cloud-init posts INFO progress events that mention cloudinit on every
// healthy boot.
func ClassifyDeployFailure(ev DeployFailureEvidence) DeployFailureClassification {
	events := significantEvents(ev.Events)
	for _, e := range events {
		if isCurtinEvent(e) {
			return DeployFailureClassification{Class: DeployFailureOther, Reason: "curtin installation failed: " + eventText(e)}
		}
	}
	if line := matchingLine(curtinOutputFailure, ev.InstallationOutput); line != "" {
		return DeployFailureClassification{Class: DeployFailureOther, Reason: "installation output: " + line}
	}
	for _, e := range events {
		if powerText.MatchString(e.Type + " " + e.Description) {
			return DeployFailureClassification{Class: DeployFailureOther, Reason: "BMC power control failed: " + eventText(e)}
		}
	}
	for _, e := range events {
		if IsDatasourceFailureEvent(e) {
			return DeployFailureClassification{Class: DeployFailureDatasource, Reason: "datasource unreachable: " + eventText(e)}
		}
	}
	return DeployFailureClassification{Class: DeployFailureOther, Reason: "no datasource or cloud-init evidence (status " + statusOrUnknown(ev.StatusName) + ")"}
}

// IsDatasourceFailureEvent reports whether one MAAS event shows the
// datasource symptom: a 'cloudinit' failure, cloud-init or the metadata
// service unreachable, or MAAS's deploy timeout. A machine still Deploying
// with such an event is stuck until MAAS's own timeout (maas-behaviour §14.1), so
// the poll treats it as failed at once.
func IsDatasourceFailureEvent(e DeployEvent) bool {
	if !isSignificant(e) || isCurtinEvent(e) {
		return false
	}
	text := e.Type + " " + e.Description
	if powerText.MatchString(text) {
		return false
	}
	desc := strings.TrimSpace(e.Description)
	return strings.HasPrefix(desc, "'cloudinit'") ||
		deployTimeout.MatchString(text) ||
		datasourceText.MatchString(text)
}

func isCurtinEvent(e DeployEvent) bool {
	return strings.HasPrefix(strings.TrimSpace(e.Description), "'curtin'") ||
		strings.EqualFold(e.Type, "Node installation failure")
}

func isSignificant(e DeployEvent) bool {
	switch strings.ToUpper(e.Level) {
	case "WARNING", "ERROR", "CRITICAL", "":
		return true
	}
	return false
}

func significantEvents(in []DeployEvent) []DeployEvent {
	out := make([]DeployEvent, 0, len(in))
	for _, e := range in {
		if isSignificant(e) {
			out = append(out, e)
		}
	}
	return out
}

// maxReasonLen bounds a reason: it reaches the timeline, execution history
// and events.
const maxReasonLen = 240

func eventText(e DeployEvent) string {
	s := e.Type
	if e.Description != "" {
		s += " - " + e.Description
	}
	return truncate(s, maxReasonLen)
}

// matchingLine returns the first line of text the pattern matches, trimmed.
func matchingLine(re *regexp.Regexp, text string) string {
	for _, line := range strings.Split(text, "\n") {
		if re.MatchString(line) {
			return truncate(strings.TrimSpace(line), maxReasonLen)
		}
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && (s[cut]&0xC0) == 0x80 { // back up to a rune boundary
		cut--
	}
	return s[:cut] + "…"
}
