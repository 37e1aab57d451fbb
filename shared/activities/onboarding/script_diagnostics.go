package onboarding

import (
	"context"
	"fmt"
	"strings"

	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// maxScriptTail is how much of a failed script's output a timeline row
// keeps: its end, where the error is.
const maxScriptTail = 4 << 10

// failedScriptStatuses are MAAS's script result statuses that mean the
// script itself failed (maas-behaviour §12). Aborted and skipped results
// are a consequence of another failure, not a cause, and are left out.
var failedScriptStatuses = map[string]bool{
	"failed": true, "timed out": true, "failed installing": true, "failed applying": true,
}

// scriptFailureDiagnostics reads the machine's current commissioning or
// testing set after it ended in Failed commissioning or Failed testing
// (requirements readiness §8.3) and returns one diagnostic row per failed script (name,
// exit status, output tail) and the scripts' names. Any other status has no
// script evidence to read. A set MAAS no longer has is no evidence, not an
// error.
func scriptFailureDiagnostics(ctx context.Context, client activities.MAAS, m maas.Machine) ([]domain.TimelineEntry, []string, error) {
	var t maas.ScriptType
	switch m.Status {
	case maas.StatusFailedCommissioning:
		t = maas.ScriptsCommissioning
	case maas.StatusFailedTesting:
		t = maas.ScriptsTesting
	default:
		return nil, nil, nil
	}
	set, err := client.ScriptResults(ctx, m.SystemID, t)
	if err != nil {
		if isNotFound(err) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	var rows []domain.TimelineEntry
	var names []string
	for _, r := range set.Results {
		failed := failedScriptStatuses[strings.ToLower(r.StatusName)] || (r.ExitStatus != nil && *r.ExitStatus != 0)
		if !failed {
			continue
		}
		exit := "none"
		if r.ExitStatus != nil {
			exit = fmt.Sprint(*r.ExitStatus)
		}
		detail := fmt.Sprintf("%s script %s: %s, exit status %s", t, r.Name, r.StatusName, exit)
		if r.Output != "" && !r.Binary {
			detail += "\n" + activities.Tail(r.Output, maxScriptTail)
		}
		rows = append(rows, domain.TimelineEntry{Kind: domain.TimelineDiagnostic, Source: string(t) + "_scripts", Detail: detail})
		names = append(names, r.Name)
	}
	return rows, names, nil
}
