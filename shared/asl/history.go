package asl

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// HistoryEvent is one entry of an execution's history, shaped like AWS's
// GetExecutionHistory: sequential ids from 1, the id of the event that led
// to it, a timestamp, an AWS event type name and the type's details.
type HistoryEvent struct {
	ID              int64         `json:"id"`
	PreviousEventID int64         `json:"previousEventId"`
	Timestamp       time.Time     `json:"timestamp"`
	Type            string        `json:"type"`
	Details         *EventDetails `json:"-"`
}

// EventDetails holds the details of an event; which fields are set depends
// on the type, as in AWS's *EventDetails structures.
type EventDetails struct {
	Name               string `json:"name,omitempty"`
	Index              *int   `json:"index,omitempty"`
	Length             *int   `json:"length,omitempty"`
	Input              string `json:"input,omitempty"`
	Output             string `json:"output,omitempty"`
	Error              string `json:"error,omitempty"`
	Cause              string `json:"cause,omitempty"`
	Resource           string `json:"resource,omitempty"`
	ResourceType       string `json:"resourceType,omitempty"`
	Region             string `json:"region,omitempty"`
	Parameters         string `json:"parameters,omitempty"`
	TimeoutInSeconds   int64  `json:"timeoutInSeconds,omitempty"`
	HeartbeatInSeconds int64  `json:"heartbeatInSeconds,omitempty"`
	RoleARN            string `json:"roleArn,omitempty"`
	MapRunARN          string `json:"mapRunArn,omitempty"`
	// State and Location name the state and field of an EvaluationFailed
	// event (a JSONata expression that failed).
	State    string `json:"state,omitempty"`
	Location string `json:"location,omitempty"`
	// AssignedVariables maps each variable a state assigned to its value
	// as JSON text (*StateExited events of states with Assign).
	AssignedVariables        map[string]string         `json:"assignedVariables,omitempty"`
	AssignedVariablesDetails *AssignedVariablesDetails `json:"assignedVariablesDetails,omitempty"`
}

// AssignedVariablesDetails says whether assignedVariables was truncated;
// the embedded runtime never truncates it.
type AssignedVariablesDetails struct {
	Truncated bool `json:"truncated"`
}

// DetailsKey returns the JSON field AWS uses for the event's details
// ("stateEnteredEventDetails", "taskFailedEventDetails", …), or "" when the
// type has none.
func (h HistoryEvent) DetailsKey() string {
	t := h.Type
	switch {
	case strings.HasSuffix(t, "StateEntered"):
		return "stateEnteredEventDetails"
	case strings.HasSuffix(t, "StateExited"):
		return "stateExitedEventDetails"
	case t == "MapStateStarted":
		return "mapStateStartedEventDetails"
	case t == "EvaluationFailed":
		return "evaluationFailedEventDetails"
	case t == "MapRunStarted", t == "MapRunFailed":
		return "map" + t[3:] + "EventDetails"
	case strings.HasPrefix(t, "MapIteration"), strings.HasPrefix(t, "Execution"),
		strings.HasPrefix(t, "Task"), strings.HasPrefix(t, "LambdaFunction"):
		return strings.ToLower(t[:1]) + t[1:] + "EventDetails"
	}
	return ""
}

// MarshalJSON renders the event as GetExecutionHistory does, with the
// details under their type-specific key.
func (h HistoryEvent) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteString(`{"id":`)
	b.WriteString(strconv.FormatInt(h.ID, 10))
	b.WriteString(`,"previousEventId":`)
	b.WriteString(strconv.FormatInt(h.PreviousEventID, 10))
	b.WriteString(`,"timestamp":"`)
	b.WriteString(h.Timestamp.UTC().Format(timeLayout))
	b.WriteString(`","type":"`)
	b.WriteString(h.Type)
	b.WriteString(`"`)
	if key := h.DetailsKey(); key != "" && h.Details != nil {
		d, err := json.Marshal(h.Details)
		if err != nil {
			return nil, err
		}
		b.WriteString(`,"` + key + `":`)
		b.Write(d)
	}
	b.WriteString("}")
	return []byte(b.String()), nil
}

// timeLayout is how AWS writes times in the context object and history:
// milliseconds, UTC, Z.
const timeLayout = "2006-01-02T15:04:05.000Z"

// event is the compact internal form of a history entry. Input and output
// values are kept as values and rendered to JSON only when the history is
// read: they are immutable, so sharing them is safe and costs nothing per
// transition.
type event struct {
	id, prev int64
	at       time.Time
	typ      string
	name     string // state name, or resource
	value    any    // input/output; rendered when hasValue
	hasValue bool
	hasCause bool   // next to hasValue: one word for both
	text     string // pre-rendered output (task submissions, raw task outputs)
	err      string
	cause    string
	index    int
	res      *taskResource
	timeout  int64
	hb       int64
	vars     map[string]any // variables assigned (*StateExited)
}

func (ev *event) public(region, roleARN string) HistoryEvent {
	h := HistoryEvent{ID: ev.id, PreviousEventID: ev.prev, Timestamp: ev.at, Type: ev.typ}
	d := &EventDetails{}
	val := func() string {
		if ev.text != "" {
			return ev.text
		}
		if ev.hasValue {
			return toJSON(ev.value)
		}
		return ""
	}
	t := ev.typ
	switch {
	case t == "ExecutionStarted":
		d.Input, d.RoleARN = val(), roleARN
	case t == "ExecutionSucceeded":
		d.Output = val()
	case t == "ExecutionFailed", t == "ExecutionAborted", t == "ExecutionTimedOut":
		d.Error, d.Cause = ev.err, ev.cause
	case strings.HasSuffix(t, "StateAborted"):
		d = nil
	case strings.HasSuffix(t, "StateEntered"):
		d.Name, d.Input = ev.name, val()
	case strings.HasSuffix(t, "StateExited"):
		d.Name, d.Output = ev.name, val()
		if len(ev.vars) > 0 {
			d.AssignedVariables = make(map[string]string, len(ev.vars))
			for k, v := range ev.vars {
				d.AssignedVariables[k] = toJSON(v)
			}
			d.AssignedVariablesDetails = &AssignedVariablesDetails{}
		}
	case t == "MapStateStarted":
		n := ev.index
		d.Length = &n
	case t == "MapRunStarted":
		d.MapRunARN = ev.name
	case t == "MapRunFailed":
		d.Error, d.Cause = ev.err, ev.cause
	case t == "EvaluationFailed":
		d.State, d.Location, d.Error, d.Cause = ev.name, ev.text, ev.err, ev.cause
	case strings.HasPrefix(t, "MapIteration"):
		n := ev.index
		d.Name, d.Index = ev.name, &n
	case strings.HasPrefix(t, "LambdaFunction"):
		switch t {
		case "LambdaFunctionScheduled":
			d.Resource, d.Input, d.TimeoutInSeconds = ev.name, val(), ev.timeout
		case "LambdaFunctionSucceeded":
			d.Output = val()
		case "LambdaFunctionFailed", "LambdaFunctionTimedOut", "LambdaFunctionScheduleFailed", "LambdaFunctionStartFailed":
			d.Error, d.Cause = ev.err, ev.cause
		default:
			d = nil
		}
	case strings.HasPrefix(t, "Task"):
		if ev.res != nil {
			d.ResourceType, d.Resource = ev.res.resourceType, ev.res.resource
		}
		switch t {
		case "TaskScheduled":
			d.Region, d.Parameters, d.TimeoutInSeconds, d.HeartbeatInSeconds = region, val(), ev.timeout, ev.hb
		case "TaskSubmitted", "TaskSucceeded":
			d.Output = val()
		case "TaskFailed", "TaskTimedOut", "TaskStartFailed", "TaskSubmitFailed":
			d.Error, d.Cause = ev.err, ev.cause
		}
	default:
		d = nil
	}
	h.Details = d
	return h
}
