package client

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/url"
)

// Page is one page of a paged listing; NextCursor is empty on the last.
type Page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor,omitempty"`
}

func page[T any](ctx context.Context, c *Client, path string, q url.Values, cursor string, opts []CallOption) (Page[T], error) {
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	return call[Page[T]](ctx, c, http.MethodGet, path, q, nil, opts)
}

// all yields every item of every page that fetch reads, following
// next_cursor; a cursor the API repeats ends the walk with an error
// rather than looping. Breaking out of the loop stops the reads.
func all[T any](fetch func(cursor string) (Page[T], error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		seen := map[string]bool{}
		cursor := ""
		for {
			p, err := fetch(cursor)
			if err != nil {
				yield(zero, err)
				return
			}
			for _, it := range p.Items {
				if !yield(it, nil) {
					return
				}
			}
			if p.NextCursor == "" {
				return
			}
			if seen[p.NextCursor] {
				yield(zero, fmt.Errorf("the admin API returned cursor %q twice; stopping", p.NextCursor))
				return
			}
			seen[p.NextCursor] = true
			cursor = p.NextCursor
		}
	}
}

// Onboardings yields every onboarding the filter selects, page by page.
func (c *Client) Onboardings(ctx context.Context, f OnboardingFilter) iter.Seq2[Onboarding, error] {
	return all(func(cur string) (Page[Onboarding], error) { return c.ListOnboardings(ctx, f, cur) })
}

// Nodes yields every node the filter selects.
func (c *Client) Nodes(ctx context.Context, f NodeFilter) iter.Seq2[Node, error] {
	return all(func(cur string) (Page[Node], error) { return c.ListNodes(ctx, f, cur) })
}

// Decommissions yields every decommission the filter selects.
func (c *Client) Decommissions(ctx context.Context, f DecommissionFilter) iter.Seq2[Decommission, error] {
	return all(func(cur string) (Page[Decommission], error) { return c.ListDecommissions(ctx, f, cur) })
}

// Drift yields every drift item the filter selects.
func (c *Client) Drift(ctx context.Context, f DriftFilter) iter.Seq2[DriftItem, error] {
	return all(func(cur string) (Page[DriftItem], error) { return c.ListDrift(ctx, f, cur) })
}

// Audit yields the whole audit trail, newest first, pageSize entries a
// read (the API's default when 0).
func (c *Client) Audit(ctx context.Context, pageSize int) iter.Seq2[AuditEntry, error] {
	return all(func(cur string) (Page[AuditEntry], error) { return c.ListAudit(ctx, pageSize, cur) })
}
