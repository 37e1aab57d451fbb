package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/jsii-runtime-go"
)

// The machine watch: onboarding waits park on a WatchMachine task token,
// and the machine-watch state machine, started on a schedule, reads each
// watched site's MAAS events and completes the tokens of the machines that
// moved.
const (
	machineWatchASL = "statemachines/machine-watch.asl.json"
	// functionWatchMachine stores a wait's task token (the onboarding
	// state machine invokes it); functionWatchSites is every state of the
	// machine watch.
	functionWatchMachine = "watch-machine"
	functionWatchSites   = "watch-sites"
	// ctxMachineWatchInterval is the schedule's period in minutes; 0 turns
	// the schedule off, and every wait then ends at its task timeout, when
	// the onboarding checks the machine itself.
	ctxMachineWatchInterval            = "maasflow:machineWatchIntervalMinutes"
	defaultMachineWatchIntervalMinutes = 1
	// machineWatchInput starts every scheduled run at its first round.
	machineWatchInput     = `{"round":0}`
	outputMachineWatchArn = "MachineWatchStateMachineArn"
)

// loadMachineWatch reads the machine-watch ASL and resolves its
// placeholders, which may only name functions. A tree without the file
// builds no machine watch.
func loadMachineWatch(root string, src *Sources) error {
	asl, byFn, err := loadFunctionASL(root, machineWatchASL, "the machine watch", src.Functions)
	if err != nil || asl == nil {
		return err
	}
	timeout, err := taskTimeout(asl, byFn)
	if err != nil {
		return fmt.Errorf("%s: %w", machineWatchASL, err)
	}
	src.MachineWatchASL, src.MachineWatchPlaceholders, src.MachineWatchTaskTimeout = string(asl), byFn, timeout
	return nil
}

// taskTimeout is the shortest TimeoutSeconds of the Task states that
// invoke a function: the machine watch's function runs no longer than its
// task, since a round that outlived its task would still advance the event
// cursors while the next round reads them. Every such task must set one.
func taskTimeout(asl []byte, byFn map[string]string) (int, error) {
	var def struct {
		States map[string]struct {
			Type           string `json:"Type"`
			TimeoutSeconds int    `json:"TimeoutSeconds"`
			Parameters     struct {
				FunctionName string `json:"FunctionName"`
			} `json:"Parameters"`
		} `json:"States"`
	}
	if err := json.Unmarshal(asl, &def); err != nil {
		return 0, fmt.Errorf("parse ASL: %w", err)
	}
	shortest := 0
	for _, name := range slices.Sorted(maps.Keys(def.States)) {
		st := def.States[name]
		m := placeholderRE.FindStringSubmatch(st.Parameters.FunctionName)
		if st.Type != "Task" || m == nil || byFn[m[1]] == "" {
			continue
		}
		if st.TimeoutSeconds <= 0 {
			return 0, fmt.Errorf("state %s invokes %s without TimeoutSeconds: the function's timeout follows its task's", name, byFn[m[1]])
		}
		if shortest == 0 || st.TimeoutSeconds < shortest {
			shortest = st.TimeoutSeconds
		}
	}
	return shortest, nil
}

func (p *MaasflowStackProps) validateMachineWatch() []error {
	var errs []error
	for _, ph := range slices.Sorted(maps.Keys(p.Sources.MachineWatchPlaceholders)) {
		fn := p.Sources.MachineWatchPlaceholders[ph]
		switch {
		case !slices.Contains(p.Sources.Functions, fn):
			errs = append(errs, fmt.Errorf("machine-watch placeholder ${%s} names function %s, which is not in functions/", ph, fn))
		case fn == functionAPI:
			errs = append(errs, fmt.Errorf("machine-watch placeholder ${%s}: the %s function cannot be a state machine task", ph, functionAPI))
		}
	}
	return errs
}

func (b *builder) machineWatchName() string { return b.name("machine-watch") }

// contextMinutes reads a schedule period in whole minutes from the
// context; absent is def, and a value that is not a whole number of
// minutes fails synthesis.
func (b *builder) contextMinutes(key string, def int) (int, error) {
	v := b.stack.Node().TryGetContext(jsii.String(key))
	switch v := v.(type) {
	case nil:
		return def, nil
	case float64:
		if v >= 0 && v == float64(int(v)) {
			return int(v), nil
		}
	case string:
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			return n, nil
		}
	}
	return 0, fmt.Errorf("context %s must be a whole number of minutes (0 turns the schedule off), got %v", key, v)
}

// machineWatch adds the machine-watch state machine and its schedule when
// the repository has statemachines/machine-watch.asl.json.
func (b *builder) machineWatch() {
	src := b.props.Sources
	if src.MachineWatchASL == "" {
		return
	}
	minutes, err := b.contextMinutes(ctxMachineWatchInterval, defaultMachineWatchIntervalMinutes)
	if err != nil {
		b.stack.Node().AddValidation(&invalidProps{err: err})
		return
	}
	subs := map[string]*string{}
	invoked := map[string]bool{}
	for ph, fn := range src.MachineWatchPlaceholders {
		subs[ph] = b.fns[fn].FunctionArn()
		invoked[fn] = true
	}
	for name := range invoked {
		// Bounded by its task (taskTimeout), not by the activities' 60 s.
		if cfn, ok := b.fns[name].Node().DefaultChild().(awslambda.CfnFunction); ok && src.MachineWatchTaskTimeout > 0 {
			cfn.SetTimeout(jsii.Number(src.MachineWatchTaskTimeout))
		}
	}

	// Named with part of the stack ID, as the onboarding's: a log group a
	// destroyed stack retained never blocks the next deploy.
	logs := awslogs.NewLogGroup(b.stack, jsii.String("MachineWatchLogs"), &awslogs.LogGroupProps{
		LogGroupName: awscdk.Fn_Join(jsii.String(""), &[]*string{
			jsii.String("/aws/vendedlogs/states/" + b.machineWatchName() + "-"), b.stackIDSuffix(),
		}),
		Retention: logRetention,
	})
	sm := awsstepfunctions.NewStateMachine(b.stack, jsii.String("MachineWatch"), &awsstepfunctions.StateMachineProps{
		StateMachineName: jsii.String(b.machineWatchName()),
		// Standard: a start runs exactly once (an Express run is at least
		// once, and two runs of one start would advance the same cursors),
		// and the execution history shows which round failed.
		StateMachineType:        awsstepfunctions.StateMachineType_STANDARD,
		DefinitionBody:          awsstepfunctions.DefinitionBody_FromString(jsii.String(src.MachineWatchASL)),
		DefinitionSubstitutions: &subs,
		Logs: &awsstepfunctions.LogOptions{
			Destination:          logs,
			Level:                awsstepfunctions.LogLevel_ERROR,
			IncludeExecutionData: jsii.Bool(false),
		},
		TracingEnabled: jsii.Bool(true),
	})
	nagStateMachine(sm)
	for _, name := range src.Functions {
		if invoked[name] {
			b.fns[name].GrantInvoke(sm)
		}
	}
	b.watch = sm
	awscdk.NewCfnOutput(b.stack, jsii.String(outputMachineWatchArn), &awscdk.CfnOutputProps{
		Value: sm.StateMachineArn(), Description: jsii.String("Machine-watch state machine"),
	})

	if minutes == 0 {
		return
	}
	b.schedule("MachineWatch", "the machine-watch state machine",
		"maasflow machine watch every "+strconv.Itoa(minutes)+" minutes: wakes the onboarding waits whose machine moved",
		sm, minutes, machineWatchInput)
}
