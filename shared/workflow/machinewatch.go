package workflow

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/maasflow/maasflow/shared/asl"
	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/statemachines"
)

// MachineWatchInterval is how often the machine watch state machine
// (statemachines/machine-watch.asl.json) starts: every minute, as the AWS
// deployment's schedule does; each execution runs two rounds 30 s apart.
const MachineWatchInterval = time.Minute

// machineWatchInput is every scheduled execution's input.
var machineWatchInput = []byte(`{"round":0}`)

// MachineWatchTicker starts the machine watch state machine on the embedded
// runtime every Interval of Clock: local mode's stand-in for the AWS
// schedule, and the same for every harness that runs onboardings, so their
// machine waits are woken the way deployed ones are.
type MachineWatchTicker struct {
	Engine LocalEngine
	// ARN is the machine watch state machine's.
	ARN   string
	Clock clock.Clock
	// Interval is the period; zero means MachineWatchInterval.
	Interval time.Duration
	// Logger gets a failed start; nil discards it.
	Logger *slog.Logger
}

// Start starts the first execution one interval from now and returns the
// function that stops the schedule (executions already started run on).
// The ticks are clock callbacks, so on a virtual clock time cannot move
// past a tick before its execution has started.
func (w MachineWatchTicker) Start() (stop func()) {
	interval := w.Interval
	if interval <= 0 {
		interval = MachineWatchInterval
	}
	log := w.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var (
		mu      sync.Mutex
		stopped bool
		timer   clock.Timer
		tick    func()
	)
	tick = func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		name := "machine-watch-" + uuid.NewString()
		if _, err := w.Engine.StartExecution(context.Background(), w.ARN, name, machineWatchInput); err != nil {
			log.Error("scheduled machine watch", slog.String("error", err.Error()))
		}
		timer = w.Clock.AfterFunc(interval, tick)
	}
	mu.Lock()
	timer = w.Clock.AfterFunc(interval, tick)
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		timer.Stop()
	}
}

// StartLocalMachineWatch loads the machine watch state machine onto engine,
// its WatchSites task resolved through subs (the Catalog's substitutions,
// as for the onboarding state machine), and starts the ticker on clk. It
// returns the state machine's ARN and the function that stops the ticker.
func StartLocalMachineWatch(engine *asl.Engine, subs map[string]string, clk clock.Clock, logger *slog.Logger) (string, func(), error) {
	sm, err := asl.Parse(statemachines.MachineWatch, subs)
	if err != nil {
		return "", nil, fmt.Errorf("load machine watch state machine: %w", err)
	}
	arn, err := engine.CreateStateMachine("machine-watch", sm)
	if err != nil {
		return "", nil, fmt.Errorf("create machine watch state machine: %w", err)
	}
	stop := MachineWatchTicker{Engine: engine, ARN: arn, Clock: clk, Logger: logger}.Start()
	return arn, stop, nil
}
