package events

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
)

// EventBridgeAPI is the one EventBridge call the publisher makes;
// *eventbridge.Client satisfies it, and tests pass a fake.
type EventBridgeAPI interface {
	PutEvents(ctx context.Context, params *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// PutEventsFailedError is a PutEvents call that returned normally but did not
// ingest the event (FailedEntryCount > 0). PutEvents reports partial failure
// in the response, not as an error, so without this check a lost event would
// be silent. ErrorCode is EventBridge's (ThrottlingException and
// InternalFailure are worth a retry).
type PutEventsFailedError struct {
	Bus              string `json:"bus"`
	DetailType       string `json:"detail_type"`
	FailedEntryCount int32  `json:"failed_entry_count"`
	ErrorCode        string `json:"error_code"`
	ErrorMessage     string `json:"error_message"`
}

func (e *PutEventsFailedError) Error() string {
	return fmt.Sprintf("eventbridge %s: %s not ingested (%d failed): %s: %s",
		e.Bus, e.DetailType, e.FailedEntryCount, e.ErrorCode, e.ErrorMessage)
}

// EventBridge publishes events to an EventBridge bus, one PutEvents entry per
// event.
type EventBridge struct {
	client EventBridgeAPI
	bus    string
	source string
	opts   options
}

var _ interface {
	Publish(ctx context.Context, detailType string, detail any) error
} = (*EventBridge)(nil)

// NewEventBridge returns a publisher to busName with the given source
// (Source when empty).
func NewEventBridge(client EventBridgeAPI, busName, source string, opts ...Option) *EventBridge {
	if source == "" {
		source = Source
	}
	return &EventBridge{client: client, bus: busName, source: source, opts: buildOptions(opts)}
}

// Publish validates the detail against its schema (an invalid detail is an
// error and nothing is sent) and puts it on the bus. A client error is
// returned wrapped; a response with FailedEntryCount > 0 is a
// *PutEventsFailedError. Nothing is retried here. A repeated call puts a
// second event: consumers de-duplicate on onboarding_id, attempt and type.
func (e *EventBridge) Publish(ctx context.Context, detailType string, detail any) error {
	raw, err := EncodeDetail(detailType, detail)
	if err != nil {
		return err
	}
	out, err := e.client.PutEvents(ctx, &eventbridge.PutEventsInput{
		Entries: []ebtypes.PutEventsRequestEntry{{
			EventBusName: aws.String(e.bus),
			Source:       aws.String(e.source),
			DetailType:   aws.String(detailType),
			Detail:       aws.String(string(raw)),
			Time:         aws.Time(e.opts.clock.Now().UTC()),
		}},
	})
	if err != nil {
		return fmt.Errorf("eventbridge %s: put %s: %w", e.bus, detailType, err)
	}
	if out == nil {
		return &PutEventsFailedError{Bus: e.bus, DetailType: detailType, ErrorCode: "EmptyResponse", ErrorMessage: "no PutEvents output"}
	}
	if out.FailedEntryCount > 0 || (len(out.Entries) > 0 && out.Entries[0].ErrorCode != nil) {
		fe := &PutEventsFailedError{Bus: e.bus, DetailType: detailType, FailedEntryCount: out.FailedEntryCount}
		if fe.FailedEntryCount == 0 {
			fe.FailedEntryCount = 1
		}
		for _, entry := range out.Entries {
			if entry.ErrorCode != nil {
				fe.ErrorCode = aws.ToString(entry.ErrorCode)
				fe.ErrorMessage = aws.ToString(entry.ErrorMessage)
				break
			}
		}
		return fe
	}
	return nil
}
