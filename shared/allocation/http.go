package allocation

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/maasflow/maasflow/shared/domain"
)

// HTTPDoer sends requests (*http.Client).
type HTTPDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// HTTP is the allocation service adapter on AWS: the contract it speaks is
// openapi.yaml in this package. The bearer token is a secret: it is never
// logged or put in an error.
type HTTP struct {
	base  string
	token func(ctx context.Context) (string, error)
	doer  HTTPDoer
}

// NewHTTP returns an adapter for the service at baseURL (e.g.
// https://allocations.internal/api), authenticating with the bearer token
// token returns (read per call, so a rotated secret takes effect).
func NewHTTP(baseURL string, token func(ctx context.Context) (string, error), doer HTTPDoer) (*HTTP, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("allocation service URL %q: must be an absolute http(s) URL", baseURL)
	}
	if doer == nil {
		doer = http.DefaultClient
	}
	return &HTTP{base: strings.TrimRight(baseURL, "/"), token: token, doer: doer}, nil
}

type wireList struct {
	Items []domain.Allocation `json:"items"`
}

type wireForceRelease struct {
	Reason string `json:"reason"`
}

// List calls GET /v1/nodes/{node_id}/allocations.
func (h *HTTP) List(ctx context.Context, nodeID string) ([]domain.Allocation, error) {
	var out wireList
	if err := h.call(ctx, "list allocations", http.MethodGet, "/v1/nodes/"+url.PathEscape(nodeID)+"/allocations", nil, &out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// ForceRelease calls POST /v1/allocations/{allocation_id}/force-release.
func (h *HTTP) ForceRelease(ctx context.Context, allocationID, reason string) (domain.Allocation, error) {
	var out domain.Allocation
	err := h.call(ctx, "force-release allocation", http.MethodPost,
		"/v1/allocations/"+url.PathEscape(allocationID)+"/force-release", wireForceRelease{Reason: reason}, &out)
	return out, err
}

func (h *HTTP) call(ctx context.Context, op, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s: encode: %w", op, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.base+path, rd)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if h.token != nil {
		tok, err := h.token(ctx)
		if err != nil {
			return &AllocationServiceUnavailableError{Op: op, Message: "read the service credential: " + fmt.Sprintf("%T", err)}
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := h.doer.Do(req)
	if err != nil {
		// The transport error names the URL, never the header.
		return &AllocationServiceUnavailableError{Op: op, Message: err.Error()}
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return &AllocationServiceUnavailableError{Op: op, Message: fmt.Sprintf("HTTP %d", resp.StatusCode)}
	case resp.StatusCode >= 400:
		return &AllocationServiceRefusedError{Op: op, StatusCode: resp.StatusCode, Message: errorMessage(raw)}
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &AllocationServiceRefusedError{Op: op, StatusCode: resp.StatusCode, Message: "answer is not the documented JSON"}
	}
	return nil
}

// errorMessage reads {"error":{"message"}} or the first line of a text body,
// bounded.
func errorMessage(raw []byte) string {
	var env struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	msg := strings.TrimSpace(string(raw))
	if json.Unmarshal(raw, &env) == nil && env.Error.Message != "" {
		msg = env.Error.Message
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return msg
}
