// Package events owns maasflow's typed events: the detail types, the detail
// payloads (OnboardingDetail), the envelope, and the two publishers that put
// them on a bus — EventBridge (PutEvents through aws-sdk-go-v2) on AWS and
// LocalBus (a bucket of local mode's bbolt database file plus in-process
// subscribers) in local mode. Callers declare their own one-method publisher port:
//
//	Publish(ctx context.Context, detailType string, detail any) error
//
// Both publishers validate every detail against its JSON Schema in events/
// before sending, so an event that breaks its contract is an error and is
// never emitted, and a field that is not in the schema (a token, say) cannot
// ride along. Neither publisher retries: a failure is returned and the
// calling state machine's Retry decides.
//
// eventstest holds a Recorder publisher for other packages' tests.
//
// It must not import activities, api, store or any MAAS package.
package events
