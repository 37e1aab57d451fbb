package client

import (
	"context"
	"errors"
	"time"
)

// DefaultPollInterval is how often a waiter reads the resource.
const DefaultPollInterval = 2 * time.Second

// WaitOptions tune a waiter. A waiter follows the resource's stream (the
// server pushes each change) and reads it every Interval only where the
// server does not stream (ErrStreamsUnsupported) or Poll is set.
type WaitOptions struct {
	// Poll reads the resource every Interval even where it streams.
	Poll bool
	// Interval between reads (DefaultPollInterval when 0).
	Interval time.Duration
	// OnChange, when set, sees every read (a progress display).
	OnChange func(any)
	// After waits between reads; time.After when nil (tests pass a fake
	// clock's After).
	After func(time.Duration) <-chan time.Time
}

// WaitOnboarding reads the onboarding until its status is terminal
// (completed, failed, cancelled or manual_intervention) and returns that
// last read. It returns ctx's error when the context ends first: give it a
// deadline to bound the wait.
func (c *Client) WaitOnboarding(ctx context.Context, id string, o WaitOptions) (OnboardingDetail, error) {
	return waitStreamed(ctx, c, o, Path(OnboardingsPath, id)+StreamSuffix,
		func(d OnboardingDetail) bool { return Terminal(d.Status) },
		func() (OnboardingDetail, bool, error) {
			d, err := c.GetOnboarding(ctx, id)
			return d, Terminal(d.Status), err
		})
}

// WaitDecommission reads the decommission until its status is terminal.
func (c *Client) WaitDecommission(ctx context.Context, id string, o WaitOptions) (DecommissionDetail, error) {
	return waitStreamed(ctx, c, o, Path(DecommissionsPath, id)+StreamSuffix,
		func(d DecommissionDetail) bool { return Terminal(d.Status) },
		func() (DecommissionDetail, bool, error) {
			d, err := c.GetDecommission(ctx, id)
			return d, Terminal(d.Status), err
		})
}

// WaitBatch reads the batch until no row is pending or running (status
// other than running).
func (c *Client) WaitBatch(ctx context.Context, id string, o WaitOptions) (Batch, error) {
	ended := func(b Batch) bool { return b.Status != "" && b.Status != BatchRunning }
	return waitStreamed(ctx, c, o, Path(BatchesPath, id)+StreamSuffix, ended,
		func() (Batch, bool, error) {
			b, err := c.GetBatch(ctx, id)
			return b, ended(b), err
		})
}

// waitStreamed follows the stream at path until done says so, and polls
// with read where the server does not stream.
func waitStreamed[T any](ctx context.Context, c *Client, o WaitOptions, path string, done func(T) bool,
	read func() (T, bool, error)) (T, error) {
	if o.Poll {
		return waitFor(ctx, o, read)
	}
	var last T
	err := Follow(ctx, c, path, func(v T) (bool, error) {
		last = v
		if o.OnChange != nil {
			o.OnChange(v)
		}
		return done(v), nil
	})
	if errors.Is(err, ErrStreamsUnsupported) {
		return waitFor(ctx, o, read)
	}
	return last, err
}

// waitFor polls read until it reports done, an error, or ctx ends.
func waitFor[T any](ctx context.Context, o WaitOptions, read func() (T, bool, error)) (T, error) {
	iv := o.Interval
	if iv <= 0 {
		iv = DefaultPollInterval
	}
	after := o.After
	if after == nil {
		after = time.After
	}
	for {
		v, done, err := read()
		if err != nil {
			var zero T
			if ctx.Err() != nil {
				return zero, ctx.Err()
			}
			return zero, err
		}
		if o.OnChange != nil {
			o.OnChange(v)
		}
		if done {
			return v, nil
		}
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-after(iv):
		}
	}
}
