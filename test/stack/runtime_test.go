package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/google/uuid"
)

// lambdaFunction is one AWS::Lambda::Function of the template, run as its
// bootstrap binary behind a Lambda Runtime API server of its own. One
// process serves one invocation at a time, as one Lambda execution
// environment does; invocations queue for it.
type lambdaFunction struct {
	name    string // FunctionName
	arn     string
	binary  string
	env     []string // the template's environment plus what Lambda sets
	timeout time.Duration
	logs    *syncBuffer

	queue chan *invocation

	mu       sync.Mutex
	inflight map[string]*invocation
	proc     *exec.Cmd
	exited   chan struct{}
	initErr  string
	srv      *http.Server
	addr     string
	closed   bool
}

type invocation struct {
	id      string
	payload []byte
	done    chan invokeResult
	once    sync.Once
	// stream, when set, takes a streamed response's body as it arrives
	// (a function URL in RESPONSE_STREAM mode, streamurl_test.go).
	stream *io.PipeWriter
}

type invokeResult struct {
	out  []byte
	ierr *messages.InvokeResponse_Error
}

func (inv *invocation) finish(r invokeResult) {
	inv.once.Do(func() { inv.done <- r })
}

// start serves the function's Runtime API on a loopback port.
func (f *lambdaFunction) start() error {
	f.queue = make(chan *invocation, 64)
	f.inflight = map[string]*invocation{}
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	f.addr = ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", f.next)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", f.response)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", f.invokeError)
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", f.initError)
	f.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = f.srv.Serve(ln) }()
	return nil
}

func (f *lambdaFunction) next(w http.ResponseWriter, r *http.Request) {
	select {
	case inv := <-f.queue:
		f.mu.Lock()
		f.inflight[inv.id] = inv
		f.mu.Unlock()
		h := w.Header()
		h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
		h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(f.timeout).UnixMilli(), 10))
		h.Set("Lambda-Runtime-Invoked-Function-Arn", f.arn)
		h.Set("Lambda-Runtime-Trace-Id", "Root=1-"+strconv.FormatInt(time.Now().Unix(), 16)+"-000000000000000000000000;Sampled=0")
		h.Set("Content-Type", "application/json")
		_, _ = w.Write(inv.payload)
	case <-r.Context().Done():
	}
}

func (f *lambdaFunction) take(id string) *invocation {
	f.mu.Lock()
	defer f.mu.Unlock()
	inv := f.inflight[id]
	delete(f.inflight, id)
	return inv
}

func (f *lambdaFunction) response(w http.ResponseWriter, r *http.Request) {
	inv := f.take(r.PathValue("id"))
	if inv != nil && inv.stream != nil {
		_, err := io.Copy(inv.stream, r.Body)
		_ = inv.stream.CloseWithError(err)
		inv.finish(invokeResult{})
		w.WriteHeader(http.StatusAccepted)
		return
	}
	body, _ := io.ReadAll(r.Body)
	if inv != nil {
		inv.finish(invokeResult{out: body})
	}
	w.WriteHeader(http.StatusAccepted)
}

func (f *lambdaFunction) invokeError(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var e messages.InvokeResponse_Error
	if err := json.Unmarshal(body, &e); err != nil || e.Type == "" {
		e = messages.InvokeResponse_Error{Type: "Runtime.Unknown", Message: string(body)}
	}
	if inv := f.take(r.PathValue("id")); inv != nil {
		inv.finish(invokeResult{ierr: &messages.InvokeResponse_Error{Type: e.Type, Message: e.Message}})
	}
	w.WriteHeader(http.StatusAccepted)
}

func (f *lambdaFunction) initError(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.initErr = string(body)
	f.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

// ensureProcess starts the bootstrap when none runs (the first invocation,
// or after a crash: Lambda starts a new execution environment).
func (f *lambdaFunction) ensureProcess() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return errors.New("function closed")
	}
	if f.proc != nil {
		return nil
	}
	cmd := exec.CommandContext(context.Background(), f.binary) //nolint:gosec // G204: the template's own asset
	cmd.Env = append(append([]string(nil), f.env...), "AWS_LAMBDA_RUNTIME_API="+f.addr)
	cmd.Stdout, cmd.Stderr = f.logs, f.logs
	if err := cmd.Start(); err != nil {
		return err
	}
	f.proc = cmd
	exited := make(chan struct{})
	f.exited = exited
	go func() {
		err := cmd.Wait()
		f.mu.Lock()
		f.proc = nil
		pending := f.inflight
		f.inflight = map[string]*invocation{}
		f.mu.Unlock()
		close(exited)
		for _, inv := range pending {
			inv.finish(invokeResult{ierr: &messages.InvokeResponse_Error{Type: "Runtime.ExitError",
				Message: fmt.Sprintf("RequestId: %s Error: Runtime exited: %v", inv.id, err)}})
		}
	}()
	return nil
}

// Invoke implements asl.TaskHandler: the engine calls the function as Step
// Functions calls Lambda.
func (f *lambdaFunction) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	out, ierr := f.invoke(ctx, payload)
	if ierr != nil {
		return nil, *ierr
	}
	return out, nil
}

func (f *lambdaFunction) invoke(ctx context.Context, payload []byte) ([]byte, *messages.InvokeResponse_Error) {
	if err := f.ensureProcess(); err != nil {
		return nil, &messages.InvokeResponse_Error{Type: "Runtime.StartError", Message: err.Error()}
	}
	f.mu.Lock()
	exited := f.exited
	f.mu.Unlock()
	inv := &invocation{id: uuid.NewString(), payload: payload, done: make(chan invokeResult, 1)}
	f.queue <- inv
	timer := time.NewTimer(f.timeout)
	defer timer.Stop()
	select {
	case r := <-inv.done:
		return r.out, r.ierr
	case <-exited:
		// The process died before taking the invocation (a failed init).
		select {
		case r := <-inv.done:
			return r.out, r.ierr
		default:
		}
		f.dropQueued(inv)
		f.mu.Lock()
		msg := f.initErr
		f.mu.Unlock()
		if msg == "" {
			msg = tail(f.logs.String(), 600)
		}
		return nil, &messages.InvokeResponse_Error{Type: "Runtime.ExitError", Message: "the function exited during init: " + msg}
	case <-timer.C:
		f.kill()
		return nil, &messages.InvokeResponse_Error{Type: "Sandbox.Timedout", Message: "Task timed out after " + f.timeout.String()}
	case <-ctx.Done():
		return nil, &messages.InvokeResponse_Error{Type: "Runtime.Cancelled", Message: ctx.Err().Error()}
	}
}

func (f *lambdaFunction) dropQueued(inv *invocation) {
	var keep []*invocation
	for {
		select {
		case q := <-f.queue:
			if q != inv {
				keep = append(keep, q)
			}
			continue
		default:
		}
		break
	}
	for _, q := range keep {
		f.queue <- q
	}
}

func (f *lambdaFunction) kill() {
	f.mu.Lock()
	p := f.proc
	f.mu.Unlock()
	if p != nil && p.Process != nil {
		_ = p.Process.Kill()
	}
}

func (f *lambdaFunction) close() {
	f.mu.Lock()
	f.closed = true
	exited := f.exited
	f.mu.Unlock()
	f.kill()
	if exited != nil {
		<-exited
	}
	if f.srv != nil {
		_ = f.srv.Close()
	}
}

// syncBuffer collects a process's output.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tail returns the last n bytes of a log, for failure messages.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

var _ = os.Getenv
var _ = strings.TrimSpace
