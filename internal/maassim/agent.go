package maassim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Retry bounds of the node agent's enrollment, in wall time: the API's
// overload answers are wall-time facts, whatever the simulated time scale.
const (
	enrollBackoffMin = 50 * time.Millisecond
	enrollBackoffMax = 2 * time.Second
)

// agentTransport is the transport of one node agent's calls to target.
// Real nodes each call from their own address, so when the target is on
// loopback each agent dials from its address local in 127.0.0.0/8 (Linux
// routes the whole range to lo): per-client limits then see many clients,
// as they would in a data centre. When Options gave a client, it is a copy
// of that client's transport (the caller may give it a TLS configuration).
func (s *Simulator) agentTransport(target string, local net.IP) *http.Transport {
	if !s.ownClient {
		if t, ok := s.httpClient.Transport.(*http.Transport); ok {
			return t.Clone()
		}
		return http.DefaultTransport.(*http.Transport).Clone() //nolint:forcetypeassert // the standard library's
	}
	u, err := url.Parse(target)
	if err != nil {
		return &http.Transport{MaxIdleConnsPerHost: 1}
	}
	ip := net.ParseIP(u.Hostname())
	if ip == nil || !ip.IsLoopback() || ip.To4() == nil {
		return &http.Transport{MaxIdleConnsPerHost: 1}
	}
	base := &net.Dialer{Timeout: 10 * time.Second}
	own := &net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: local}}
	return &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := own.DialContext(ctx, network, addr)
			if err != nil && isAddrNotAvail(err) {
				// A system that routes only 127.0.0.1 to lo: share it.
				return base.DialContext(ctx, network, addr)
			}
			return c, err
		},
		MaxIdleConnsPerHost: 1,
	}
}

// agentAddr is the source address of the n-th node agent: 127.1.0.1 on,
// skipping the .0 and .255 host bytes, wrapping after 65,000 agents.
func agentAddr(n uint32) net.IP {
	n = (n - 1) % (256 * 254)
	return net.IPv4(127, 1+byte(n/(256*254)), byte(n/254), byte(n%254)+1)
}

func isAddrNotAvail(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" && errors.Is(err, errAddrNotAvail)
}

// enrollOnce makes one enrollment call and returns the answer's status,
// its error code, and the wait its Retry-After asks for; a 200's body goes
// to *answer when answer is not nil.
func enrollOnce(ctx context.Context, hc *http.Client, target string, body []byte, answer *[]byte) (int, string, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, "", 0, errors.New("enrollment URL is invalid")
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			return 0, "", 0, fmt.Errorf("enrollment call failed: %w", uerr.Err)
		}
		return 0, "", 0, errors.New("enrollment call failed")
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if answer != nil && resp.StatusCode == http.StatusOK {
		*answer = raw
	}
	var after time.Duration
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		after = time.Duration(secs) * time.Second
	}
	return resp.StatusCode, errorCode(raw), after, nil
}

// errorCode is the code of an API error body ("" when there is none).
func errorCode(raw []byte) string {
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &env)
	return env.Error.Code
}

// enrollRetry calls once until it gets an answer that is not an overload
// (503, 429) and no transport error, or ctx ends: a node agent retries a
// refused enrollment with jittered exponential backoff, honouring
// Retry-After, and gives up on any other answer (a 401 will not improve).
func enrollRetry(ctx context.Context, once func() (int, string, time.Duration, error)) (int, string, error) {
	backoff := enrollBackoffMin
	for {
		code, errCode, after, err := once()
		retry := err != nil || code == http.StatusServiceUnavailable || code == http.StatusTooManyRequests
		if !retry {
			return code, errCode, err
		}
		wait := backoff/2 + rand.N(backoff/2+1) //nolint:gosec // G404: jitter, not a secret
		wait = max(wait, min(after, enrollBackoffMax))
		backoff = min(2*backoff, enrollBackoffMax)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return code, errCode, err
		case <-t.C:
		}
	}
}
