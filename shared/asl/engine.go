package asl

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/maasflow/maasflow/shared/clock"
)

// TaskHandler runs a Task. It is the method set of aws-lambda-go's
// lambda.Handler, so handlers built with lambda.NewHandler(fn) are called
// exactly as the Lambda runtime calls them, and their errors are named as
// Lambda names them.
type TaskHandler interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

// Options configures an Engine. The zero value runs on the wall clock with
// no task handlers.
type Options struct {
	// Clock drives waits, retries and timeouts; nil means the wall clock. A
	// *VirtualClock makes the engine run in pure virtual time; a clockwork
	// fake clock lets a test advance time by hand; clock.Scaled speeds a
	// local run up.
	Clock clock.Clock
	// Tasks maps a Lambda function ARN or name to its handler. A Task finds
	// its handler by its Resource (direct Lambda ARN) or by the FunctionName
	// parameter of arn:aws:states:::lambda:invoke[.waitForTaskToken]; any
	// other Resource is looked up verbatim.
	Tasks  map[string]TaskHandler
	Logger *slog.Logger
	// NewID generates execution names, request ids and token material; nil
	// means random UUIDs.
	NewID func() string
	// Entropy feeds retry jitter and the random intrinsics (States.UUID,
	// unseeded States.MathRandom); nil means crypto/rand.
	Entropy io.Reader
	// Region and AccountID appear in the ARNs the engine mints; defaults
	// us-east-1 and 123456789012.
	Region    string
	AccountID string
	// MaxHistoryEvents is the per-execution history limit; 0 means AWS's
	// 25,000.
	MaxHistoryEvents int
	// TokenWaitsIdle lets a *VirtualClock move while a .waitForTaskToken
	// task waits for its token. By default such a wait holds virtual time
	// still, because the answer is expected from outside the engine; with
	// this set, nothing answering in zero time means the heartbeat or
	// timeout fires at once.
	TokenWaitsIdle bool
	// IdleTokenFunctions are functions (by ARN) whose .waitForTaskToken
	// waits let a *VirtualClock move even without TokenWaitsIdle: their
	// token is answered by a component driven by the same clock (the
	// machine watch's schedule), which needs time to move to answer it.
	IdleTokenFunctions map[string]bool
	// FunctionConcurrency caps the invocations of one function that run at
	// once, like Lambda's reserved concurrency: an invocation over it fails
	// at once with Lambda.TooManyRequestsException, which a state machine
	// retries with back-off, so overload slows executions down instead of
	// piling work on the CPU. 0 means no limit; local mode passes
	// DefaultFunctionConcurrency.
	FunctionConcurrency int
	// InvokeClock measures a Task's TimeoutSeconds while its handler runs;
	// nil means Clock. Local mode passes the wall clock when it speeds time
	// up: a handler's work is real computation that no time scale shortens
	// (on AWS each invocation has a CPU of its own), so a scaled clock would
	// time out a handler merely because other executions keep the machine
	// busy. The wait for a task token stays on Clock.
	InvokeClock clock.Clock
	// BucketDir stands for Amazon S3 in a distributed Map's ItemReader and
	// ResultWriter: object Key of bucket Bucket is the file
	// BucketDir/Bucket/Key. Empty means no S3: such a Map fails with
	// States.ItemReaderFailed or States.ResultWriterFailed, naming the field.
	BucketDir string
}

// DefaultFunctionConcurrency is the per-function concurrency local mode
// gives each function: eight invocations per core keep every core busy
// while handlers wait on I/O (MAAS, the database), without letting a
// thousand executions share the CPU so thinly that none of them finishes.
func DefaultFunctionConcurrency() int { return 8 * runtime.NumCPU() }

// Engine runs state machines. It is safe for concurrent use.
type Engine struct {
	clock      clock.Clock
	virtual    *VirtualClock
	tasks      map[string]TaskHandler
	log        *slog.Logger
	newID      func() string
	entropy    io.Reader
	region     string
	account    string
	maxHist    int
	tokensIdle bool
	idleTokens map[string]bool
	invokeClk  clock.Clock
	fnLimit    int
	bucketDir  string

	handlerLocks sync.Map // aws-lambda-go handler → *sync.Mutex; see serialize

	mu         sync.Mutex
	machines   map[string]*registered
	executions map[string]*execution
	byMachine  map[string][]*execution
	tokens     map[string]*tokenWait
	fnSlots    map[string]chan struct{} // function ARN → its concurrency slots
	backlog    int64                    // executions waiting to retry a throttled invocation (under mu)
}

// addBacklog changes the backlog and tells a clock that governs its speed
// by it (LoadClock).
func (e *Engine) addBacklog(d int) {
	if d == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock() // held so that the clock sees the changes in order
	e.backlog += int64(d)
	if lc, ok := e.clock.(interface{ SetBacklog(n int64) }); ok {
		lc.SetBacklog(e.backlog)
	}
}

// acquireSlot takes one of fnARN's concurrency slots without waiting;
// ok is false when all are taken (Lambda's throttling). release gives the
// slot back.
func (e *Engine) acquireSlot(fnARN string) (release func(), ok bool) {
	if e.fnLimit <= 0 || strings.HasPrefix(fnARN, statesPrefix) {
		return func() {}, true
	}
	e.mu.Lock()
	slots := e.fnSlots[fnARN]
	if slots == nil {
		slots = make(chan struct{}, e.fnLimit)
		e.fnSlots[fnARN] = slots
	}
	e.mu.Unlock()
	select {
	case slots <- struct{}{}:
		return func() { <-slots }, true
	default:
		return nil, false
	}
}

type registered struct {
	name string
	arn  string
	sm   *StateMachine
	// histLen is the history length of this machine's last finished
	// execution: the next one starts with room for as many events, instead
	// of growing its history by doubling and copying from one.
	histLen atomic.Int64
}

// historyCapacity is the room a new execution's history starts with: as
// many events as the machine's last execution had, or before any, two per
// top-level state (entered and exited) and a few more. A long history
// does not make every later execution reserve as much.
func (r *registered) historyCapacity(maxHist int) int {
	const most = 1024
	n := int(r.histLen.Load())
	if n == 0 {
		n = 2*len(r.sm.root.states) + 8
	}
	return min(n, maxHist, most)
}

// NewEngine returns an engine configured by o.
func NewEngine(o Options) *Engine {
	e := &Engine{
		clock:      o.Clock,
		tasks:      o.Tasks,
		log:        o.Logger,
		newID:      o.NewID,
		entropy:    o.Entropy,
		region:     o.Region,
		account:    o.AccountID,
		maxHist:    o.MaxHistoryEvents,
		tokensIdle: o.TokenWaitsIdle,
		idleTokens: o.IdleTokenFunctions,
		invokeClk:  o.InvokeClock,
		fnLimit:    o.FunctionConcurrency,
		bucketDir:  o.BucketDir,
		fnSlots:    map[string]chan struct{}{},
		machines:   map[string]*registered{},
		executions: map[string]*execution{},
		byMachine:  map[string][]*execution{},
		tokens:     map[string]*tokenWait{},
	}
	if e.clock == nil {
		e.clock = clock.Real()
	}
	if e.invokeClk == nil {
		e.invokeClk = e.clock
	}
	if vc, ok := e.clock.(*VirtualClock); ok {
		e.virtual = vc
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.newID == nil {
		e.newID = uuid.NewString
	}
	if e.entropy == nil {
		e.entropy = rand.Reader
	}
	if e.region == "" {
		e.region = "us-east-1"
	}
	if e.account == "" {
		e.account = "123456789012"
	}
	if e.maxHist <= 0 {
		e.maxHist = 25000
	}
	e.tasks = registerExecutionTasks(e, e.tasks)
	return e
}

// Clock returns the clock the engine runs on, so that components which must
// share its time (a simulator in a test) can use it.
func (e *Engine) Clock() clock.Clock { return e.clock }

func (e *Engine) busy() {
	if e.virtual != nil {
		e.virtual.Busy()
	}
}

func (e *Engine) idle() {
	if e.virtual != nil {
		e.virtual.Idle()
	}
}

// roleARN is the execution role the context object and history report.
func (e *Engine) roleARN() string {
	return fmt.Sprintf("arn:aws:iam::%s:role/maasflow-local", e.account)
}

// StateMachineARN returns the ARN a state machine named name gets.
func (e *Engine) StateMachineARN(name string) string {
	return fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:%s", e.region, e.account, name)
}

// CreateStateMachine registers sm under name and returns its ARN. As on AWS,
// registering the same definition again returns the same ARN and a
// different one fails with *StateMachineAlreadyExistsError.
func (e *Engine) CreateStateMachine(name string, sm *StateMachine) (string, error) {
	if !validName(name) {
		return "", &InvalidNameError{Name: name}
	}
	arn := e.StateMachineARN(name)
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.machines[arn]; ok {
		if r.sm.definition != sm.definition {
			return "", &StateMachineAlreadyExistsError{Name: name}
		}
		return arn, nil
	}
	e.machines[arn] = &registered{name: name, arn: arn, sm: sm}
	return arn, nil
}

// UpdateStateMachine replaces the definition of a registered state machine;
// running executions keep the definition they started with.
func (e *Engine) UpdateStateMachine(stateMachineARN string, sm *StateMachine) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.machines[stateMachineARN]
	if !ok {
		return &StateMachineDoesNotExistError{ARN: stateMachineARN}
	}
	e.machines[stateMachineARN] = &registered{name: r.name, arn: r.arn, sm: sm}
	return nil
}

// Execution describes an execution as DescribeExecution does. Input and
// Output are JSON text; Output is empty unless the execution succeeded.
type Execution struct {
	ExecutionARN    string    `json:"executionArn"`
	StateMachineARN string    `json:"stateMachineArn"`
	Name            string    `json:"name"`
	Status          string    `json:"status"`
	Input           string    `json:"input"`
	Output          string    `json:"output,omitempty"`
	Error           string    `json:"error,omitempty"`
	Cause           string    `json:"cause,omitempty"`
	StartDate       time.Time `json:"startDate"`
	StopDate        time.Time `json:"stopDate,omitzero"`
}

// Execution statuses.
const (
	StatusRunning   = "RUNNING"
	StatusSucceeded = "SUCCEEDED"
	StatusFailed    = "FAILED"
	StatusTimedOut  = "TIMED_OUT"
	StatusAborted   = "ABORTED"
)

// StartExecution starts an execution and returns its ARN; the execution runs
// in the background. An empty name gets a generated one. As AWS does, a name
// already used by an execution of the state machine fails with
// *ExecutionAlreadyExistsError, except a running one with the same input,
// which returns its ARN (StartExecution is idempotent).
func (e *Engine) StartExecution(_ context.Context, stateMachineARN, name string, input []byte) (string, error) {
	if name == "" {
		name = e.newID()
	}
	if !validName(name) {
		return "", &InvalidNameError{Name: name}
	}
	if len(input) == 0 {
		input = []byte("{}")
	}
	if len(input) > MaxPayloadBytes {
		return "", &InvalidExecutionInputError{Reason: fmt.Sprintf("%d bytes exceeds the %d-byte limit", len(input), MaxPayloadBytes)}
	}
	in, err := parseJSON(input)
	if err != nil {
		return "", &InvalidExecutionInputError{Reason: "not valid JSON"}
	}
	e.mu.Lock()
	r, ok := e.machines[stateMachineARN]
	if !ok {
		e.mu.Unlock()
		return "", &StateMachineDoesNotExistError{ARN: stateMachineARN}
	}
	arn := fmt.Sprintf("arn:aws:states:%s:%s:execution:%s:%s", e.region, e.account, r.name, name)
	if old, ok := e.executions[arn]; ok {
		e.mu.Unlock()
		old.mu.Lock()
		same := old.status == StatusRunning && old.inputText == string(input)
		old.mu.Unlock()
		if same {
			return arn, nil
		}
		return "", &ExecutionAlreadyExistsError{Name: name, ARN: arn}
	}
	x := newExecution(e, r, arn, name, in, string(input))
	e.executions[arn] = x
	e.byMachine[stateMachineARN] = append(e.byMachine[stateMachineARN], x)
	e.mu.Unlock()
	x.start()
	return arn, nil
}

func (e *Engine) execution(arn string) (*execution, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.executions[arn]
	if !ok {
		return nil, &ExecutionDoesNotExistError{ARN: arn}
	}
	return x, nil
}

// DescribeExecution returns the execution's current status and, once it has
// ended, its output or error.
func (e *Engine) DescribeExecution(executionARN string) (Execution, error) {
	x, err := e.execution(executionARN)
	if err != nil {
		return Execution{}, err
	}
	return x.describe(), nil
}

// StopExecution aborts a running execution with an optional error and cause
// and returns once it has unwound; stopping an ended execution does nothing.
func (e *Engine) StopExecution(executionARN, errName, cause string) error {
	x, err := e.execution(executionARN)
	if err != nil {
		return err
	}
	x.stop(errName, cause)
	return nil
}

// ListExecutions lists the executions of a state machine, newest first,
// optionally filtered by status.
func (e *Engine) ListExecutions(stateMachineARN, status string) []Execution {
	e.mu.Lock()
	list := append([]*execution(nil), e.byMachine[stateMachineARN]...)
	e.mu.Unlock()
	out := make([]Execution, 0, len(list))
	for i := len(list) - 1; i >= 0; i-- {
		d := list[i].describe()
		if status == "" || d.Status == status {
			out = append(out, d)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartDate.After(out[j].StartDate) })
	return out
}

// History returns the execution's events so far; it can be read while the
// execution runs.
func (e *Engine) History(executionARN string) ([]HistoryEvent, error) {
	x, err := e.execution(executionARN)
	if err != nil {
		return nil, err
	}
	x.mu.Lock()
	evs := x.events.snapshot()
	x.mu.Unlock()
	out := make([]HistoryEvent, evs.len())
	role := e.roleARN()
	for i := range out {
		out[i] = evs.at(i).public(e.region, role)
	}
	return out, nil
}

// Wait blocks until the execution ends or ctx is done, and returns its
// description.
func (e *Engine) Wait(ctx context.Context, executionARN string) (Execution, error) {
	x, err := e.execution(executionARN)
	if err != nil {
		return Execution{}, err
	}
	select {
	case <-x.done:
		return x.describe(), nil
	case <-ctx.Done():
		return x.describe(), fmt.Errorf("wait for execution %s: %w", executionARN, ctx.Err())
	}
}

// validName applies AWS's rules for state machine and execution names.
func validName(name string) bool {
	if name == "" || len([]rune(name)) > 80 {
		return false
	}
	for _, r := range name {
		if unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune("<>{}[]?*\"#%\\^|~`$&,;:/", r) {
			return false
		}
	}
	return true
}

// newToken mints a task token: opaque, unguessable, URL-safe.
func (e *Engine) newToken() string {
	var b [36]byte
	if _, err := io.ReadFull(e.entropy, b[:]); err != nil {
		// A broken entropy source still must not produce colliding tokens.
		copy(b[:], e.newID())
	}
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

const tokenPrefix = "AQCEAAAAKgAAAA" //nolint:gosec // G101: the fixed prefix of the task-token format, not a credential
