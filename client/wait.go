package client

import (
	"context"
	"time"
)

// DefaultPollInterval is how often a waiter reads the resource.
const DefaultPollInterval = 2 * time.Second

// WaitOptions tune a waiter.
type WaitOptions struct {
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
	return waitFor(ctx, o, func() (OnboardingDetail, bool, error) {
		d, err := c.GetOnboarding(ctx, id)
		return d, Terminal(d.Status), err
	})
}

// WaitDecommission reads the decommission until its status is terminal.
func (c *Client) WaitDecommission(ctx context.Context, id string, o WaitOptions) (DecommissionDetail, error) {
	return waitFor(ctx, o, func() (DecommissionDetail, bool, error) {
		d, err := c.GetDecommission(ctx, id)
		return d, Terminal(d.Status), err
	})
}

// WaitBatch reads the batch until no row is pending or running (status
// other than running).
func (c *Client) WaitBatch(ctx context.Context, id string, o WaitOptions) (Batch, error) {
	return waitFor(ctx, o, func() (Batch, bool, error) {
		b, err := c.GetBatch(ctx, id)
		return b, b.Status != "" && b.Status != BatchRunning, err
	})
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
