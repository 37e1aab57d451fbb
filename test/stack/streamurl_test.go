package stack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/config"
)

// invokeStream invokes f as Lambda invokes a function behind a function
// URL in RESPONSE_STREAM mode: the body the function streams to the
// Runtime API comes out of the reader as it arrives.
func (f *lambdaFunction) invokeStream(payload []byte) (io.ReadCloser, error) {
	if err := f.ensureProcess(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	exited := f.exited
	f.mu.Unlock()
	pr, pw := io.Pipe()
	inv := &invocation{id: uuid.NewString(), payload: payload, done: make(chan invokeResult, 1), stream: pw}
	f.queue <- inv
	go func() {
		select {
		case r := <-inv.done:
			if r.ierr != nil {
				_ = pw.CloseWithError(fmt.Errorf("%s: %s", r.ierr.Type, r.ierr.Message))
			}
		case <-exited:
			_ = pw.CloseWithError(errors.New("the function exited before it answered"))
		}
	}()
	return pr, nil
}

// functionURL is one AWS::Lambda::Url of the template.
type functionURL struct {
	fn         *lambdaFunction
	authType   string
	invokeMode string
}

// loadFunctionURL reads the template's function URL of fn and checks what
// a public streaming URL needs: the function is the template's, and a
// resource policy lets anyone invoke the URL (AuthType NONE).
func (l *lane) loadFunctionURL(fn string) (*functionURL, error) {
	name := functionPrefix + fn
	for _, id := range l.tpl.ofType("AWS::Lambda::Url") {
		p := l.tpl.Resources[id].Properties
		target, err := l.res.str(p["TargetFunctionArn"])
		if err != nil {
			return nil, fmt.Errorf("function URL %s: %w", id, err)
		}
		f := l.byARN[target]
		if f == nil || f.name != name {
			continue
		}
		u := &functionURL{fn: f, authType: fmt.Sprint(p["AuthType"]), invokeMode: fmt.Sprint(p["InvokeMode"])}
		if u.authType == "NONE" && !l.publicURLPermission(target) {
			return nil, fmt.Errorf("function URL %s: AuthType NONE without a lambda:InvokeFunctionUrl permission for everyone", id)
		}
		return u, nil
	}
	return nil, fmt.Errorf("no function URL targets %s", name)
}

func (l *lane) publicURLPermission(fnARN string) bool {
	for _, id := range l.tpl.ofType("AWS::Lambda::Permission") {
		p, err := l.res.resolve(l.tpl.Resources[id].Properties)
		if err != nil {
			continue
		}
		m := p.(map[string]any)
		if m["Action"] == "lambda:InvokeFunctionUrl" && m["Principal"] == "*" && m["FunctionUrlAuthType"] == "NONE" && m["FunctionName"] == fnARN {
			return true
		}
	}
	return false
}

// ServeHTTP is the function URL: the request as the function URL event
// (payload 2.0), the streamed answer's prelude as status and headers, the
// rest as the body, flushed as it comes.
func (u *functionURL) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := events.LambdaFunctionURLRequest{
		Version: "2.0", RawPath: r.URL.Path, RawQueryString: r.URL.RawQuery, Headers: map[string]string{},
		RequestContext: events.LambdaFunctionURLRequestContext{
			AccountID: laneAccount, RequestID: uuid.NewString(), DomainName: r.Host, APIID: "laneurl", TimeEpoch: time.Now().UnixMilli(),
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: r.Method, Path: r.URL.Path, Protocol: "HTTP/1.1",
				SourceIP: "127.0.0.1", UserAgent: r.UserAgent()},
		},
	}
	for k, v := range r.Header {
		req.Headers[strings.ToLower(k)] = strings.Join(v, ",")
	}
	if len(r.URL.Query()) > 0 {
		req.QueryStringParameters = map[string]string{}
		for k, v := range r.URL.Query() {
			req.QueryStringParameters[k] = strings.Join(v, ",")
		}
	}
	if body, _ := io.ReadAll(r.Body); len(body) > 0 {
		req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	payload, _ := json.Marshal(req)
	if u.invokeMode != "RESPONSE_STREAM" {
		http.Error(w, "the lane's function URL serves RESPONSE_STREAM only", http.StatusNotImplemented)
		return
	}
	out, err := u.fn.invokeStream(payload)
	if err != nil {
		http.Error(w, `{"message":"Internal Server Error"}`, http.StatusBadGateway)
		return
	}
	defer func() { _ = out.Close() }()
	// A reader that went away ends the stream here at once, as Lambda
	// stops forwarding; the function finds out at its next write.
	stop := context.AfterFunc(r.Context(), func() { _ = out.Close() })
	defer stop()
	br := bufio.NewReader(out)
	// The prelude: JSON, then eight NUL bytes.
	var prelude bytes.Buffer
	for !bytes.HasSuffix(prelude.Bytes(), make([]byte, 8)) {
		b, err := br.ReadByte()
		if err != nil {
			http.Error(w, `{"message":"Internal Server Error"}`, http.StatusBadGateway)
			return
		}
		prelude.WriteByte(b)
	}
	var head struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
	}
	if err := json.Unmarshal(bytes.TrimRight(prelude.Bytes(), "\x00"), &head); err != nil {
		http.Error(w, `{"message":"Internal Server Error"}`, http.StatusBadGateway)
		return
	}
	for k, v := range head.Headers {
		w.Header().Set(k, v)
	}
	if head.StatusCode == 0 {
		head.StatusCode = http.StatusOK
	}
	w.WriteHeader(head.StatusCode)
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 4096)
	for {
		n, err := br.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}

// TestStreamFunctionOnTheSynthesizedStack runs the stream function behind
// its function URL as the template declares it: an operator's token from
// the stack's issuer opens an onboarding's stream, which carries the
// onboarding to its end; every call the function makes is checked against
// its role.
func TestStreamFunctionOnTheSynthesizedStack(t *testing.T) {
	l := runLane(t, freshTemplate(t))
	u, err := l.loadFunctionURL("stream")
	require.NoError(t, err)
	require.Equal(t, "NONE", u.authType, "a browser cannot sign: the function verifies the token itself")
	front := httptest.NewServer(u)
	t.Cleanup(front.Close)

	group := config.DefaultAdminGroup
	for _, kv := range u.fn.env {
		if v, ok := strings.CutPrefix(kv, config.EnvAdminGroup+"="); ok {
			group = v
		}
	}
	token, err := laneIssuer.token("lane-cli", "cognito:groups", group)
	require.NoError(t, err)

	f := l.setup()
	l.hardware("gpu-s1", "10.10.7.11", "52:54:00:70:01:01")
	id := l.onboard(f, "gpu-s1", "10.10.7.11")

	open := func(path, bearer string) *http.Response {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, front.URL+path, nil)
		require.NoError(t, err)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		return resp
	}

	// The authorizer's refusals are the function's own here.
	resp := open("/api/v1/admin/onboardings/"+id+"/stream", "")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	_ = resp.Body.Close()
	resp = open("/api/v1/admin/onboardings/"+id, token)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "only the stream routes")
	_ = resp.Body.Close()

	seen := followOnboarding(t, front.URL, token, id, terminalWait, l.functionLogs)
	assert.GreaterOrEqual(t, len(seen), 2, "the stream pushed the onboarding's changes, not only its end: %v", seen)

	l.requireClean()
	calls, _ := l.aws.snapshot()
	var streamCalls []call
	for _, c := range calls {
		if c.Principal == u.fn.name {
			streamCalls = append(streamCalls, c)
		}
	}
	require.NotEmpty(t, streamCalls, "the stream function read the table as its own principal")
	unused, _ := l.iam.unusedGrants(map[string]string{u.fn.name: l.roleOf[u.fn.name]}, streamCalls)
	t.Logf("the stream function's grants an onboarding's stream did not use:\n%s", describeUnused(unused, justifiedGrants))
}

// followOnboarding opens an onboarding's stream at a stream URL (the
// function URL's base) and reads it until the onboarding is completed; it
// returns the statuses it carried. logs explains a failure.
func followOnboarding(t *testing.T, streamURL, token, id string, wait time.Duration, logs func() string) map[any]bool {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(streamURL, "/")+"/api/v1/admin/onboardings/"+id+"/stream", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode, logs())
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	events := make(chan map[string]any, 64)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var v map[string]any
				if json.Unmarshal([]byte(data), &v) == nil {
					events <- v
				}
			}
		}
	}()
	seen := map[any]bool{}
	deadline := time.After(wait)
	for {
		select {
		case ev, ok := <-events:
			require.True(t, ok, "the stream ended before the onboarding did; seen %v\n%s", seen, logs())
			require.Equal(t, id, ev["id"], "the stream carries its onboarding")
			seen[ev["status"]] = true
			if ev["status"] == "completed" {
				return seen
			}
		case <-deadline:
			t.Fatalf("no completed onboarding on the stream; seen %v\n%s", seen, logs())
		}
	}
}
