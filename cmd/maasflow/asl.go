package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/maasflow/maasflow/shared/asl"
)

const aslUsage = `usage:
  maasflow asl validate [--sub NAME=VALUE ...] FILE...
  maasflow asl run --definition FILE [--input JSON|@FILE] [--task RESOURCE=@FILE ...]
                   [--sub NAME=VALUE ...] [--history]

validate exits 0 when every file is a valid definition, else prints the problems
(state and field) on stderr and exits 1.

run executes the definition on the embedded runtime in virtual time (Wait states
and retries take no real time) and prints one JSON object:
  {"status":"SUCCEEDED","output":...} or {"status":"FAILED","error":"...","cause":"..."}
plus "history":[...] with --history. --task answers every call of the Task whose
Resource (or lambda:invoke FunctionName) is RESOURCE with the JSON in FILE; a file
holding {"$fail":{"error":"Name","cause":"..."}} fails the task instead. It exits 0
whatever the execution's outcome, 1 for an invalid definition and 2 for misuse.
`

// runASL implements `maasflow asl`.
func runASL(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, aslUsage)
		return 2
	}
	switch args[0] {
	case "validate":
		return aslValidate(args[1:], stderr)
	case "run":
		return aslRun(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, aslUsage)
		return 0
	}
	fmt.Fprintf(stderr, "maasflow asl: unknown subcommand %q\n\n%s", args[0], aslUsage)
	return 2
}

// multiFlag collects a repeated flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func parseSubs(subs multiFlag) (map[string]string, error) {
	out := map[string]string{}
	for _, s := range subs {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--sub %q: want NAME=VALUE", s)
		}
		out[k] = v
	}
	return out, nil
}

func aslValidate(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("asl validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var subs multiFlag
	fs.Var(&subs, "sub", "definition substitution NAME=VALUE (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprint(stderr, "maasflow asl validate: no file given\n\n"+aslUsage)
		return 2
	}
	sm, err := parseSubs(subs)
	if err != nil {
		fmt.Fprintln(stderr, "maasflow asl validate:", err)
		return 2
	}
	code := 0
	for _, file := range fs.Args() {
		b, err := os.ReadFile(file)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", file, err)
			code = 1
			continue
		}
		if _, err := asl.Parse(b, sm); err != nil {
			printDefinitionError(stderr, file, err)
			code = 1
		}
	}
	return code
}

func printDefinitionError(w io.Writer, file string, err error) {
	var de *asl.DefinitionError
	if errors.As(err, &de) {
		for _, p := range de.Problems {
			fmt.Fprintf(w, "%s: %s\n", file, p)
		}
		return
	}
	fmt.Fprintf(w, "%s: %v\n", file, err)
}

// runOutput is the one JSON object `asl run` prints.
type runOutput struct {
	Status  string             `json:"status"`
	Output  json.RawMessage    `json:"output,omitempty"`
	Error   *string            `json:"error,omitempty"`
	Cause   *string            `json:"cause,omitempty"`
	History []asl.HistoryEvent `json:"history,omitempty"`
}

func aslRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("asl run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	defFile := fs.String("definition", "", "state machine definition file (required)")
	input := fs.String("input", "{}", "execution input: JSON text or @FILE")
	history := fs.Bool("history", false, "include the execution history")
	var tasks, subs multiFlag
	fs.Var(&tasks, "task", "canned task answer RESOURCE=@FILE (repeatable)")
	fs.Var(&subs, "sub", "definition substitution NAME=VALUE (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	misuse := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "maasflow asl run: "+format+"\n", a...)
		return 2
	}
	if *defFile == "" || fs.NArg() > 0 {
		return misuse("--definition FILE is required and no positional arguments are taken")
	}
	sm, err := parseSubs(subs)
	if err != nil {
		return misuse("%v", err)
	}
	def, err := os.ReadFile(*defFile)
	if err != nil {
		return misuse("%v", err)
	}
	machine, err := asl.Parse(def, sm)
	if err != nil {
		printDefinitionError(stderr, *defFile, err)
		return 1
	}
	in, err := readArg(*input)
	if err != nil {
		return misuse("--input: %v", err)
	}
	if !json.Valid(in) {
		return misuse("--input is not valid JSON")
	}
	vc := asl.NewVirtualClock(time.Now().UTC().Truncate(time.Millisecond))
	handlers := map[string]asl.TaskHandler{}
	engine := asl.NewEngine(asl.Options{Clock: vc, Tasks: handlers})
	for _, spec := range tasks {
		res, file, ok := strings.Cut(spec, "=@")
		if !ok || res == "" || file == "" {
			return misuse("--task %q: want RESOURCE=@FILE", spec)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return misuse("--task %s: %v", res, err)
		}
		h, err := newCannedTask(engine, b)
		if err != nil {
			return misuse("--task %s: %v", res, err)
		}
		handlers[res] = h
	}
	smARN, err := engine.CreateStateMachine("cli", machine)
	if err != nil {
		return misuse("%v", err)
	}
	arn, err := engine.StartExecution(ctx, smARN, "", in)
	if err != nil {
		return misuse("%v", err)
	}
	ex, err := engine.Wait(ctx, arn)
	if err != nil {
		// Interrupted: stop the execution so its goroutines end, report it.
		_ = engine.StopExecution(arn, "", "interrupted")
		ex, _ = engine.DescribeExecution(arn)
	}
	out := runOutput{Status: ex.Status}
	if ex.Status == asl.StatusSucceeded {
		out.Output = json.RawMessage(ex.Output)
	} else {
		out.Error, out.Cause = &ex.Error, &ex.Cause
	}
	if *history {
		h, err := engine.History(arn)
		if err != nil {
			return misuse("%v", err)
		}
		out.History = h
	}
	b, err := json.Marshal(out)
	if err != nil {
		fmt.Fprintln(stderr, "maasflow asl run:", err)
		return 1
	}
	fmt.Fprintln(stdout, string(b))
	return 0
}

func readArg(v string) ([]byte, error) {
	if file, ok := strings.CutPrefix(v, "@"); ok {
		return os.ReadFile(file)
	}
	return []byte(v), nil
}

// cannedTask answers a task with fixed JSON, or fails it as a
// {"$fail":{"error","cause"}} file says. For a .waitForTaskToken task it
// answers through the task token.
type cannedTask struct {
	engine *asl.Engine
	answer []byte
	fail   *asl.TaskFailedError
}

func newCannedTask(e *asl.Engine, b []byte) (*cannedTask, error) {
	if !json.Valid(b) {
		return nil, errors.New("the file is not valid JSON")
	}
	var probe struct {
		Fail *struct {
			Error string `json:"error"`
			Cause string `json:"cause"`
		} `json:"$fail"`
	}
	c := &cannedTask{engine: e, answer: b}
	if err := json.Unmarshal(b, &probe); err == nil && probe.Fail != nil {
		c.fail = &asl.TaskFailedError{Name: probe.Fail.Error, Cause: probe.Fail.Cause}
	}
	return c, nil
}

func (c *cannedTask) Invoke(ctx context.Context, _ []byte) ([]byte, error) {
	if token, ok := asl.TaskToken(ctx); ok {
		var err error
		if c.fail != nil {
			err = c.engine.SendTaskFailure(token, c.fail.Name, c.fail.Cause)
		} else {
			err = c.engine.SendTaskSuccess(token, c.answer)
		}
		if err != nil {
			return nil, fmt.Errorf("answer task token: %w", err)
		}
		return []byte("{}"), nil
	}
	if c.fail != nil {
		return nil, c.fail
	}
	return c.answer, nil
}
