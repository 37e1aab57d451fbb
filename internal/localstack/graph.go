package localstack

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/maasflow/maasflow/statemachines"
)

// GraphPath serves what the console draws a local execution's graph from:
// the state machine's definition and the execution's state events. Only
// the embedded runtime has them at hand, so only local mode serves it.
const GraphPath = "/_local/executions/graph"

// definitions are the state machines the stack creates, by name.
var definitions = map[string][]byte{
	"onboarding":       statemachines.Onboarding,
	"batch-onboarding": statemachines.BatchOnboarding,
	"decommission":     statemachines.Decommission,
	"reconcile":        statemachines.Reconcile,
	"machine-watch":    statemachines.MachineWatch,
}

// graphAnswer is GET GraphPath?execution=ARN.
type graphAnswer struct {
	StateMachine string          `json:"state_machine"`
	Definition   json.RawMessage `json:"definition"`
	Status       string          `json:"status"`
	StartDate    time.Time       `json:"start_date"`
	StopDate     time.Time       `json:"stop_date,omitzero"`
	Events       []graphEvent    `json:"events"`
}

// graphEvent is one state entered or exited, or the execution's end.
type graphEvent struct {
	Time  time.Time `json:"time"`
	Type  string    `json:"type"`
	State string    `json:"state,omitempty"`
	Error string    `json:"error,omitempty"`
}

// executionGraph answers GraphPath for the admin token's holder. The
// events carry names, types and times only: inputs and outputs stay in the
// engine (they may hold what no page needs).
func (s *Stack) executionGraph(w http.ResponseWriter, r *http.Request) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(s.AdminToken)) != 1 {
		http.Error(w, "the admin token is required", http.StatusUnauthorized)
		return
	}
	arn := r.URL.Query().Get("execution")
	x, err := s.Engine.DescribeExecution(arn)
	if err != nil {
		http.Error(w, "no such execution in this stack", http.StatusNotFound)
		return
	}
	ans := graphAnswer{Status: x.Status, StartDate: x.StartDate, StopDate: x.StopDate, Events: []graphEvent{}}
	for name, def := range definitions {
		if s.Engine.StateMachineARN(name) == x.StateMachineARN {
			ans.StateMachine, ans.Definition = name, def
		}
	}
	if ans.Definition == nil {
		http.Error(w, "the execution's state machine is not one this stack draws", http.StatusNotFound)
		return
	}
	hist, err := s.Engine.History(arn)
	if err != nil {
		http.Error(w, "no such execution in this stack", http.StatusNotFound)
		return
	}
	for _, ev := range hist {
		g := graphEvent{Time: ev.Timestamp, Type: ev.Type}
		switch {
		case strings.HasSuffix(ev.Type, "StateEntered"), strings.HasSuffix(ev.Type, "StateExited"):
			if ev.Details != nil {
				g.State = ev.Details.Name
			}
		case ev.Type == "ExecutionFailed", ev.Type == "ExecutionAborted", ev.Type == "ExecutionTimedOut":
			if ev.Details != nil {
				g.Error = ev.Details.Error
			}
		case ev.Type == "ExecutionSucceeded":
		default:
			continue
		}
		ans.Events = append(ans.Events, g)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(ans)
}
