package asl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/maasflow/maasflow/shared/clock"
)

type resourceKind uint8

const (
	resLambda         resourceKind = iota + 1 // arn:aws:lambda:…:function:NAME
	resLambdaInvoke                           // arn:aws:states:::lambda:invoke
	resLambdaCallback                         // arn:aws:states:::lambda:invoke.waitForTaskToken
	resOther                                  // anything else, looked up verbatim
)

// taskResource is what the history says about a Task's resource.
type taskResource struct {
	kind         resourceKind
	resourceType string
	resource     string
}

func classifyResource(res string) *taskResource {
	switch {
	case strings.HasPrefix(res, "arn:aws:lambda:") && strings.Contains(res, ":function:"):
		return &taskResource{kind: resLambda, resource: res}
	case res == "arn:aws:states:::lambda:invoke":
		return &taskResource{kind: resLambdaInvoke, resourceType: "lambda", resource: "invoke"}
	case res == "arn:aws:states:::lambda:invoke.waitForTaskToken":
		return &taskResource{kind: resLambdaCallback, resourceType: "lambda", resource: "invoke.waitForTaskToken"}
	}
	tr := &taskResource{kind: resOther, resource: res}
	if rest, ok := strings.CutPrefix(res, "arn:aws:states:::"); ok {
		tr.resourceType, tr.resource, _ = strings.Cut(rest, ":")
	}
	return tr
}

// TaskFailedError fails a task with exactly this error name and cause. It
// exists for handlers that stand in for a task rather than run one (the
// canned answers of `maasflow asl run --task`, tests): a real Lambda function
// cannot choose its cause, which AWS sets to the JSON error payload.
type TaskFailedError struct {
	Name  string
	Cause string
}

func (e *TaskFailedError) Error() string { return e.Name + ": " + e.Cause }

type tokenKey struct{}

// TaskToken returns the task token of the .waitForTaskToken task a handler
// was invoked for, so an in-process handler can hand it to whoever will call
// SendTaskSuccess without threading it through its payload.
func TaskToken(ctx context.Context) (string, bool) {
	s, ok := ctx.Value(tokenKey{}).(string)
	return s, ok
}

// lookupHandler finds a Lambda handler by ARN, partial ARN or name.
func (e *Engine) lookupHandler(ref string) (TaskHandler, string, bool) {
	if h, ok := e.tasks[ref]; ok {
		return h, e.functionARN(ref), true
	}
	name := ref
	if i := strings.Index(ref, ":function:"); i >= 0 {
		name = ref[i+len(":function:"):]
	}
	if h, ok := e.tasks[name]; ok {
		return h, e.functionARN(ref), true
	}
	// A qualifier (version or alias) still names the same function.
	if base, _, ok := strings.Cut(name, ":"); ok {
		if h, ok := e.tasks[base]; ok {
			return h, e.functionARN(ref), true
		}
	}
	return nil, e.functionARN(ref), false
}

func (e *Engine) functionARN(ref string) string {
	if strings.HasPrefix(ref, "arn:") {
		return ref
	}
	if strings.Contains(ref, ":function:") {
		return fmt.Sprintf("arn:aws:lambda:%s:%s", e.region, ref)
	}
	return fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", e.region, e.account, ref)
}

// task runs one attempt of a Task state.
func (r *stateRun) task() (any, *failure) {
	st := r.st
	t := r.t
	e := t.x.e
	eff, f := r.inputPath()
	if f != nil {
		return nil, f
	}
	timeout, heartbeat, f := r.taskTimeouts(eff)
	if f != nil {
		return nil, f
	}
	res := st.taskRes
	if res.kind == resLambdaCallback {
		r.token = e.newToken()
		// The context object (and a JSONata $states holding it) may have
		// been built for the timeouts, before the token existed.
		r.ctxObj, r.jsStates = nil, nil
	}
	if eff, f = r.parameters(eff); f != nil {
		return nil, f
	}
	if jsonSize(eff) > MaxPayloadBytes {
		return nil, dataLimit(st.name)
	}

	// Resolve the handler and the payload.
	var handler TaskHandler
	var fnARN string
	var found bool
	payload := eff
	switch res.kind {
	case resLambda:
		handler, fnARN, found = e.lookupHandler(st.resource)
	case resLambdaInvoke, resLambdaCallback:
		m, _ := eff.(map[string]any)
		name, _ := m["FunctionName"].(string)
		if name == "" {
			return nil, runtimeFailure(fmt.Sprintf("The Parameters of state '%s' must include a FunctionName string for %s", st.name, st.resource))
		}
		handler, fnARN, found = e.lookupHandler(name)
		p, has := m["Payload"]
		if !has {
			p = map[string]any{}
		}
		payload = p
	default:
		handler, found = e.tasks[st.resource]
		fnARN = st.resource
	}

	lambdaEvents := res.kind == resLambda
	if lambdaEvents {
		t.record(event{typ: "LambdaFunctionScheduled", name: st.resource, value: eff, hasValue: true, timeout: timeoutSecondsOf(st, timeout)})
		t.record(event{typ: "LambdaFunctionStarted"})
	} else {
		t.record(event{typ: "TaskScheduled", res: res, value: eff, hasValue: true, timeout: timeoutSecondsOf(st, timeout), hb: int64(heartbeat / time.Second)})
		t.record(event{typ: "TaskStarted", res: res})
	}
	failed := func(f *failure) (any, *failure) {
		typ := "TaskFailed"
		if lambdaEvents {
			typ = "LambdaFunctionFailed"
		}
		if f.Error == ErrTimeout {
			typ = strings.Replace(typ, "Failed", "TimedOut", 1)
			t.record(event{typ: typ, res: res, err: f.Error})
		} else {
			t.record(event{typ: typ, res: res, err: f.Error, cause: f.Cause, hasCause: f.HasCause})
		}
		return nil, f
	}
	if !found {
		if res.kind == resOther {
			return failed(runtimeFailure(fmt.Sprintf("The resource '%s' of state '%s' has no handler registered in the embedded runtime", st.resource, st.name)))
		}
		return failed(&failure{Error: "Lambda.ResourceNotFoundException", HasCause: true,
			Cause: fmt.Sprintf("Function not found: %s (Service: AWSLambda; Status Code: 404; Error Code: ResourceNotFoundException; Request ID: %s; Proxy: null)", fnARN, e.newID())})
	}

	// The task's clock starts now: TimeoutSeconds covers the invocation and,
	// for a callback, the wait for the token; HeartbeatSeconds applies to
	// the wait.
	deadline := e.clock.Now().Add(timeout)
	var tw *tokenWait
	if res.kind == resLambdaCallback {
		tw = &tokenWait{x: t.x, w: newWaiter(), heartbeat: heartbeat}
		tw.w.holds = !e.tokensIdle && !e.idleTokens[fnARN]
		e.mu.Lock()
		e.tokens[r.token] = tw
		e.mu.Unlock()
		defer func() {
			e.mu.Lock()
			delete(e.tokens, r.token)
			e.mu.Unlock()
		}()
	}

	requestID := e.newID()
	release, admitted := e.acquireSlot(fnARN)
	t.setThrottled(!admitted)
	if !admitted {
		return failed(&failure{Error: ErrLambdaTooManyRequests, HasCause: true,
			Cause: fmt.Sprintf("Rate Exceeded. (Service: AWSLambda; Status Code: 429; Error Code: TooManyRequestsException; Request ID: %s; Proxy: null)", requestID)})
	}
	out, ierr, kind := r.invoke(handler, fnARN, requestID, payload, timeout)
	release()
	switch kind {
	case wakeCancel:
		t.record(event{typ: "TaskStateAborted", name: st.name})
		return nil, errCanceled
	case wakeTimeout:
		return failed(&failure{Error: ErrTimeout, HasCause: true})
	}
	if ierr != nil {
		if len(ierr.StackTrace) == 1 && ierr.StackTrace[0] == verbatimMarker[0] {
			// A TaskFailedError: the error and cause are given verbatim.
			return failed(&failure{Error: ierr.Type, Cause: ierr.Message, HasCause: ierr.Message != ""})
		}
		b, _ := json.Marshal(ierr)
		return failed(&failure{Error: ierr.Type, Cause: string(b), HasCause: true})
	}
	parsed, err := parseJSON(out)
	if err != nil {
		return failed(runtimeFailure(fmt.Sprintf("The function %s returned a payload that is not JSON", fnARN)))
	}

	var result any
	switch res.kind {
	case resLambda, resOther:
		result = parsed
	default:
		result = invokeResponse(parsed, len(out), requestID, e.clock.Now())
	}
	if tw != nil {
		// The submission is kept as text: while the task waits, nothing but
		// the history needs it, and text is the smallest form.
		t.record(event{typ: "TaskSubmitted", res: res, text: toJSON(result)})
		r.ctxObj = nil
		v, f, kind := r.waitToken(tw, heartbeat, deadline)
		switch kind {
		case wakeCancel:
			t.record(event{typ: "TaskStateAborted", name: st.name})
			return nil, errCanceled
		case wakeTimeout, wakeHeartbeat:
			return failed(&failure{Error: ErrTimeout, HasCause: true})
		}
		if f != nil {
			return failed(f)
		}
		result = v
	}
	if jsonSize(result) > MaxPayloadBytes {
		// AWS names the task by its resource here, not the state: the
		// function ARN of a direct Lambda task, the integration's type
		// ('lambda' for lambda:invoke) otherwise.
		who := res.resourceType
		if lambdaEvents {
			who = st.resource
		}
		return failed(dataLimit(who))
	}
	if lambdaEvents {
		t.record(event{typ: "LambdaFunctionSucceeded", value: result, hasValue: true})
	} else {
		t.record(event{typ: "TaskSucceeded", res: res, value: result, hasValue: true})
	}
	return r.finishResult(result)
}

func timeoutSecondsOf(st *state, d time.Duration) int64 {
	if st.timeoutSeconds == 0 && st.timeoutPath == nil && (st.j == nil || st.j.timeout == nil) {
		return 0
	}
	return int64(d / time.Second)
}

// taskTimeouts resolves TimeoutSeconds(Path) and HeartbeatSeconds(Path);
// the paths read the effective input (after InputPath).
func (r *stateRun) taskTimeouts(eff any) (time.Duration, time.Duration, *failure) {
	st := r.st
	timeout, heartbeat := st.timeoutSeconds, st.heartbeatSeconds
	resolve := func(p *path, field string) (int64, *failure) {
		v, ok := p.get(eff, r)
		if !ok {
			return 0, runtimeFailure(fmt.Sprintf("Invalid path '%s' : No results for path: %s", p.text, p.normalized()))
		}
		n, isInt := isInteger(v)
		if !isInt || n <= 0 || n > 99999999 {
			return 0, runtimeFailure(fmt.Sprintf("The %s parameter does not reference a positive integer: %s == %s", field, p.text, toJSON(v)))
		}
		return n, nil
	}
	var f *failure
	if st.timeoutPath != nil {
		if timeout, f = resolve(st.timeoutPath, "TimeoutSecondsPath"); f != nil {
			return 0, 0, f
		}
	}
	if st.heartbeatPath != nil {
		if heartbeat, f = resolve(st.heartbeatPath, "HeartbeatSecondsPath"); f != nil {
			return 0, 0, f
		}
	}
	if j := st.j; j != nil {
		if timeout, f = r.jsonataInt(j.timeout, timeout, 1, 99999999); f != nil {
			return 0, 0, f
		}
		if heartbeat, f = r.jsonataInt(j.heartbeat, heartbeat, 1, 99999999); f != nil {
			return 0, 0, f
		}
	}
	if timeout == 0 {
		timeout = 99999999
	}
	if heartbeat > 0 && heartbeat >= timeout {
		return 0, 0, runtimeFailure(fmt.Sprintf("The HeartbeatSeconds of state '%s' (%d) must be smaller than its TimeoutSeconds (%d)", st.name, heartbeat, timeout))
	}
	return time.Duration(timeout) * time.Second, time.Duration(heartbeat) * time.Second, nil
}

type invokeResult struct {
	out  []byte
	ierr *messages.InvokeResponse_Error
}

// invoke calls the handler in its own goroutine, so that TimeoutSeconds and
// StopExecution take effect even when the handler ignores its context.
func (r *stateRun) invoke(h TaskHandler, fnARN, requestID string, payload any, timeout time.Duration) ([]byte, *messages.InvokeResponse_Error, wakeKind) {
	t := r.t
	x := t.x
	e := x.e
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: requestID, InvokedFunctionArn: fnARN})
	if r.token != "" {
		ctx = context.WithValue(ctx, tokenKey{}, r.token)
	}
	body := []byte(toJSON(payload))
	w := newWaiter()
	x.mu.Lock()
	t.hcancel = cancel
	x.mu.Unlock()
	defer func() {
		x.mu.Lock()
		t.hcancel = nil
		x.mu.Unlock()
	}()
	e.busy()
	handlerWorkers.run(func() {
		unlock := e.serialize(h)
		out, ierr := callHandler(ctx, h, body)
		unlock()
		x.mu.Lock()
		w.claimLocked(e, wakeDone, invokeResult{out: out, ierr: ierr}, nil)
		x.mu.Unlock()
		e.idle()
	})
	tm := t.afterOn(e.invokeClk, timeout, w, wakeTimeout)
	t.park(w)
	tm.Stop()
	if t.reason() != nil {
		// Cancelled, even if the handler, seeing its context cancelled,
		// returned before the wait was claimed.
		return nil, nil, wakeCancel
	}
	if w.kind != wakeDone {
		return nil, nil, w.kind
	}
	res := w.value.(invokeResult)
	return res.out, res.ierr, wakeDone
}

// serialize makes calls to one aws-lambda-go handler take turns. Its Invoke
// returns a slice of a pooled buffer that it has already put back in the
// pool, so a concurrent call of the same handler can overwrite the bytes
// before they are read; callHandler copies them while the turn is held.
// Other TaskHandler implementations run concurrently.
func (e *Engine) serialize(h TaskHandler) func() {
	ht := reflect.TypeOf(h)
	if ht.Kind() != reflect.Pointer || ht.Elem().PkgPath() != "github.com/aws/aws-lambda-go/lambda" {
		return func() {}
	}
	mu, _ := e.handlerLocks.LoadOrStore(h, &sync.Mutex{})
	m := mu.(*sync.Mutex)
	m.Lock()
	return m.Unlock
}

// callHandler invokes h and converts its error or panic into the error
// payload the Lambda runtime would report: errorType is the Go type name of
// the error (pointer dereferenced, package dropped, wrappers not unwrapped),
// a messages.InvokeResponse_Error value is used verbatim, and a panic is
// named after the panic value's type and carries its stack trace.
func callHandler(ctx context.Context, h TaskHandler, payload []byte) (out []byte, ierr *messages.InvokeResponse_Error) {
	defer func() {
		if v := recover(); v != nil {
			if ive, ok := v.(messages.InvokeResponse_Error); ok {
				ierr = &ive
				return
			}
			ierr = &messages.InvokeResponse_Error{
				Message:    fmt.Sprintf("%v", v),
				Type:       typeName(v),
				StackTrace: panicStack(),
				ShouldExit: true,
			}
		}
	}()
	b, err := h.Invoke(ctx, payload)
	b = append([]byte(nil), b...)
	if err != nil {
		var tf *TaskFailedError
		if errors.As(err, &tf) {
			return nil, &messages.InvokeResponse_Error{Type: tf.Name, Message: tf.Cause, StackTrace: verbatimMarker}
		}
		if ive, ok := err.(messages.InvokeResponse_Error); ok { //nolint:errorlint // the Lambda runtime matches the value itself, unwrapped
			return nil, &ive
		}
		return nil, &messages.InvokeResponse_Error{Message: err.Error(), Type: typeName(err)}
	}
	return b, nil
}

// verbatimMarker tags an error payload built from a TaskFailedError, whose
// name and cause are used as given.
var verbatimMarker = []*messages.InvokeResponse_Error_StackFrame{{Label: "TaskFailedError"}}

func typeName(v any) string {
	t := reflect.TypeOf(v)
	if t.Kind() == reflect.Pointer {
		return t.Elem().Name()
	}
	return t.Name()
}

// panicStack renders the panicking goroutine's stack as the Lambda runtime
// does: path relative to the module root, line and function label.
func panicStack() []*messages.InvokeResponse_Error_StackFrame {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(3, pcs) // runtime.Callers, panicStack, the deferred func
	frames := runtime.CallersFrames(pcs[:n])
	var out []*messages.InvokeResponse_Error_StackFrame
	for {
		fr, more := frames.Next()
		label := fr.Function
		p := fr.File
		i := len(p)
		for k, cnt := 0, strings.Count(label, "/")+2; k < cnt; k++ {
			i = strings.LastIndex(p[:i], "/")
			if i < 0 {
				break
			}
		}
		p = p[i+1:]
		label = label[strings.LastIndex(label, "/")+1:]
		label = label[strings.Index(label, ".")+1:]
		out = append(out, &messages.InvokeResponse_Error_StackFrame{Path: p, Line: int32(fr.Line), Label: label}) //nolint:gosec // G115: a source line number fits in int32
		if !more {
			break
		}
	}
	return out
}

// invokeResponse wraps a payload as the optimized Lambda integration does.
func invokeResponse(payload any, size int, requestID string, now time.Time) map[string]any {
	date := now.UTC().Format(time.RFC1123)
	headers := map[string]any{
		"Connection":                     "keep-alive",
		"Content-Length":                 fmt.Sprint(size),
		"Content-Type":                   "application/json",
		"Date":                           date,
		"X-Amz-Executed-Version":         "$LATEST",
		"x-amzn-Remapped-Content-Length": "0",
		"x-amzn-RequestId":               requestID,
	}
	all := make(map[string]any, len(headers))
	for k, v := range headers {
		all[k] = []any{v}
	}
	return map[string]any{
		"ExecutedVersion": "$LATEST",
		"Payload":         payload,
		"SdkHttpMetadata": map[string]any{
			"AllHttpHeaders": all,
			"HttpHeaders":    headers,
			"HttpStatusCode": int64(200),
		},
		"SdkResponseMetadata": map[string]any{"RequestId": requestID},
		"StatusCode":          int64(200),
	}
}

// tokenWait is a .waitForTaskToken task waiting for its token.
type tokenWait struct {
	x         *execution
	w         *waiter
	heartbeat time.Duration
	hbTimer   clock.Timer
}

// waitToken parks until SendTaskSuccess/Failure, the heartbeat expires, the
// task times out or the execution is cancelled.
func (r *stateRun) waitToken(tw *tokenWait, heartbeat time.Duration, deadline time.Time) (any, *failure, wakeKind) {
	t := r.t
	e := t.x.e
	remaining := deadline.Sub(e.clock.Now())
	if remaining < 0 {
		remaining = 0
	}
	tm := t.after(remaining, tw.w, wakeTimeout)
	defer tm.Stop()
	if heartbeat > 0 {
		t.x.mu.Lock()
		tw.hbTimer = e.clock.AfterFunc(heartbeat, func() {
			t.x.mu.Lock()
			tw.w.claimLocked(e, wakeHeartbeat, nil, nil)
			t.x.mu.Unlock()
		})
		t.x.mu.Unlock()
		defer func() {
			t.x.mu.Lock()
			tw.hbTimer.Stop()
			t.x.mu.Unlock()
		}()
	}
	t.park(tw.w)
	if t.reason() != nil {
		return nil, nil, wakeCancel
	}
	return tw.w.value, tw.w.fail, tw.w.kind
}

func (e *Engine) tokenWait(token string) (*tokenWait, error) {
	e.mu.Lock()
	tw, ok := e.tokens[token]
	e.mu.Unlock()
	if ok {
		return tw, nil
	}
	if strings.HasPrefix(token, tokenPrefix) {
		return nil, &TaskTimedOutError{}
	}
	return nil, &InvalidTokenError{}
}

// SendTaskSuccess completes the .waitForTaskToken task holding taskToken
// with output (JSON). A token whose task has ended fails with
// *TaskTimedOutError, an unknown one with *InvalidTokenError.
func (e *Engine) SendTaskSuccess(taskToken string, output []byte) error {
	if len(output) > MaxPayloadBytes {
		return &InvalidOutputError{Reason: fmt.Sprintf("%d bytes exceeds the %d-byte limit", len(output), MaxPayloadBytes)}
	}
	v, err := parseJSON(output)
	if err != nil {
		return &InvalidOutputError{Reason: "not valid JSON"}
	}
	tw, err := e.tokenWait(taskToken)
	if err != nil {
		return err
	}
	tw.x.mu.Lock()
	claimed := tw.w.claimLocked(e, wakeDone, v, nil)
	tw.x.mu.Unlock()
	if !claimed {
		return &TaskTimedOutError{}
	}
	return nil
}

// SendTaskFailure fails the .waitForTaskToken task holding taskToken with
// errName and cause (either may be empty).
func (e *Engine) SendTaskFailure(taskToken, errName, cause string) error {
	tw, err := e.tokenWait(taskToken)
	if err != nil {
		return err
	}
	tw.x.mu.Lock()
	claimed := tw.w.claimLocked(e, wakeDone, nil, &failure{Error: errName, Cause: cause, HasCause: cause != ""})
	tw.x.mu.Unlock()
	if !claimed {
		return &TaskTimedOutError{}
	}
	return nil
}

// SendTaskHeartbeat restarts the heartbeat clock of the task holding
// taskToken; it never extends TimeoutSeconds.
func (e *Engine) SendTaskHeartbeat(taskToken string) error {
	tw, err := e.tokenWait(taskToken)
	if err != nil {
		return err
	}
	tw.x.mu.Lock()
	defer tw.x.mu.Unlock()
	if tw.w.done {
		return &TaskTimedOutError{}
	}
	if tw.hbTimer != nil {
		tw.hbTimer.Reset(tw.heartbeat)
	}
	return nil
}
