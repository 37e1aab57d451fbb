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
	// Idle, when set, is asked at each tick: true pauses the schedule
	// until Wake. A virtual clock jumps to the next timer whenever nothing
	// runs, so a schedule that is always armed would drive it — and start
	// executions — without end once the harness's work is done.
	Idle func() bool
}

// MachineWatchSchedule is a started MachineWatchTicker.
type MachineWatchSchedule struct {
	w        MachineWatchTicker
	interval time.Duration
	log      *slog.Logger

	mu      sync.Mutex
	stopped bool
	timer   clock.Timer // nil while paused
}

// Start arms the first tick one interval from now. The ticks are clock
// callbacks, so on a virtual clock time cannot move past a tick before its
// execution has started.
func (w MachineWatchTicker) Start() *MachineWatchSchedule {
	s := &MachineWatchSchedule{w: w, interval: w.Interval, log: w.Logger}
	if s.interval <= 0 {
		s.interval = MachineWatchInterval
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.Wake()
	return s
}

// Wake arms the next tick unless one is armed or the schedule is stopped.
func (s *MachineWatchSchedule) Wake() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped && s.timer == nil {
		s.timer = s.w.Clock.AfterFunc(s.interval, s.tick)
	}
}

// Stop ends the schedule; executions already started run on.
func (s *MachineWatchSchedule) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	if s.timer != nil {
		s.timer.Stop()
	}
}

func (s *MachineWatchSchedule) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timer = nil
	if s.stopped || (s.w.Idle != nil && s.w.Idle()) {
		return
	}
	name := "machine-watch-" + uuid.NewString()
	if _, err := s.w.Engine.StartExecution(context.Background(), s.w.ARN, name, machineWatchInput); err != nil {
		s.log.Error("scheduled machine watch", slog.String("error", err.Error()))
	}
	s.timer = s.w.Clock.AfterFunc(s.interval, s.tick)
}

// StartLocalMachineWatch loads the machine watch state machine onto engine,
// its WatchSites task resolved through subs (the Catalog's substitutions,
// as for the onboarding state machine), and starts the ticker on clk
// (idle: see MachineWatchTicker.Idle; nil ticks for good). It returns the
// state machine's ARN and the schedule.
func StartLocalMachineWatch(engine *asl.Engine, subs map[string]string, clk clock.Clock, logger *slog.Logger,
	idle func() bool,
) (string, *MachineWatchSchedule, error) {
	sm, err := asl.Parse(statemachines.MachineWatch, subs)
	if err != nil {
		return "", nil, fmt.Errorf("load machine watch state machine: %w", err)
	}
	arn, err := engine.CreateStateMachine("machine-watch", sm)
	if err != nil {
		return "", nil, fmt.Errorf("create machine watch state machine: %w", err)
	}
	return arn, MachineWatchTicker{Engine: engine, ARN: arn, Clock: clk, Logger: logger, Idle: idle}.Start(), nil
}
