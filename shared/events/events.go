package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	schemas "github.com/maasflow/maasflow/events"
	"github.com/maasflow/maasflow/shared/clock"
)

// Source is the EventBridge source of every maasflow event.
const Source = "maasflow"

// Onboarding detail types (issue contract, blueprint §5). Each has a schema
// in events/<detail type>.schema.json.
const (
	OnboardingStarted                    = "node.onboarding.started"
	OnboardingCompleted                  = "node.onboarding.completed"
	OnboardingFailed                     = "node.onboarding.failed"
	OnboardingManualInterventionRequired = "node.onboarding.manual_intervention_required"
)

// Decommission detail types (DecommissionDetail), each with a schema in
// events/<detail type>.schema.json.
const (
	DecommissionStarted                    = "node.decommission.started"
	DecommissionCompleted                  = "node.decommission.completed"
	DecommissionFailed                     = "node.decommission.failed"
	DecommissionManualInterventionRequired = "node.decommission.manual_intervention_required"
)

// OnboardingDetail is the detail of every node.onboarding.* event. The first
// seven fields are required by every schema (node_id and maas_system_id may
// be empty before they exist, never on completed); Error is allowed only on
// failed and manual_intervention_required.
type OnboardingDetail struct {
	SiteID        string       `json:"site_id"`
	OnboardingID  string       `json:"onboarding_id"`
	BatchID       string       `json:"batch_id,omitempty"`
	NodeID        string       `json:"node_id"`
	MAASSystemID  string       `json:"maas_system_id"`
	Hostname      string       `json:"hostname"`
	CorrelationID string       `json:"correlation_id"`
	Attempt       int          `json:"attempt"`
	Status        string       `json:"status,omitempty"`
	Stage         string       `json:"stage,omitempty"`
	Error         *ErrorDetail `json:"error,omitempty"`
	// HardwareDiff (manual_intervention_required only) is the
	// designed-vs-built diff of a machine that failed its hardware
	// verification.
	HardwareDiff []HardwareMismatch `json:"hardware_diff,omitempty"`
	OccurredAt   time.Time          `json:"occurred_at"`
}

// HardwareMismatch is one line of a designed-vs-built diff: the SKU field,
// what it asks for and what the machine has.
type HardwareMismatch struct {
	Field string `json:"field"`
	Want  string `json:"want"`
	Got   string `json:"got"`
}

// ErrorDetail says why an onboarding stopped: the workflow error name and a
// secret-free message.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Envelope is one event as the local bus stores it and as subscribers see
// it. The keys follow EventBridge's own event shape so consumers read both
// the same way.
type Envelope struct {
	ID         string          `json:"id"`
	Source     string          `json:"source"`
	DetailType string          `json:"detail-type"`
	Time       time.Time       `json:"time"`
	Detail     json.RawMessage `json:"detail"`
}

// EncodeDetail marshals detail (a struct, a map, or ready JSON as
// json.RawMessage or []byte), validates it against the schema of
// detailType and returns it compacted to one line. The error wraps
// *schemas.UnknownDetailTypeError or *schemas.DetailSchemaError; neither
// quotes a value.
func EncodeDetail(detailType string, detail any) (json.RawMessage, error) {
	var raw []byte
	switch d := detail.(type) {
	case json.RawMessage:
		raw = d
	case []byte:
		raw = d
	default:
		var err error
		if raw, err = json.Marshal(detail); err != nil {
			return nil, fmt.Errorf("event %s: marshal detail: %w", detailType, err)
		}
	}
	if err := schemas.Validate(detailType, raw); err != nil {
		return nil, fmt.Errorf("event %s: %w", detailType, err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("event %s: compact detail: %w", detailType, err)
	}
	return buf.Bytes(), nil
}

// IsInvalidDetail reports whether err says the detail broke its contract (no
// schema, or a schema mismatch): a programming error that no retry fixes.
func IsInvalidDetail(err error) bool {
	var unknown *schemas.UnknownDetailTypeError
	var mismatch *schemas.DetailSchemaError
	return errors.As(err, &unknown) || errors.As(err, &mismatch)
}

// Option configures a publisher.
type Option func(*options)

type options struct {
	clock clock.Clock
	newID func() string
	log   *slog.Logger
}

// WithClock sets the clock that stamps event times (default: wall clock).
func WithClock(c clock.Clock) Option { return func(o *options) { o.clock = c } }

// WithIDs sets the event id source of LocalBus (default: random UUIDs).
// EventBridge assigns its own ids.
func WithIDs(newID func() string) Option { return func(o *options) { o.newID = newID } }

// WithLogger sets the publisher's logger (default: discarded).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

func buildOptions(opts []Option) options {
	o := options{clock: clock.Real(), newID: uuid.NewString, log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}
