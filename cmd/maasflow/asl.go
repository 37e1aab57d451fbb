package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/maasflow/maasflow/shared/asl"
)

func (c *cli) aslCommand() *cobra.Command {
	var subs []string
	validate := &cobra.Command{
		Use:   "validate [--sub NAME=VALUE ...] FILE...",
		Short: "check state machine definitions",
		Long: `Exit 0 when every file is a valid definition, else print the problems (state and
field) on stderr and exit 1.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("no file given")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			c.err = aslValidate(args, subs, c.env.stderr)
			return nil
		},
	}
	validate.Flags().StringArrayVar(&subs, "sub", nil, "definition substitution NAME=VALUE (repeatable)")

	o := &aslRunOptions{}
	runCmd := &cobra.Command{
		Use:   "run --definition FILE [--input JSON|@FILE] [--task RESOURCE=@FILE ...] [--sub NAME=VALUE ...] [--history]",
		Short: "run a state machine on the embedded runtime in virtual time",
		Long: `Execute the definition on the embedded runtime in virtual time (Wait states and
retries take no real time) and print one JSON object:
  {"status":"SUCCEEDED","output":...} or {"status":"FAILED","error":"...","cause":"..."}
plus "history":[...] with --history. --task answers every call of the Task whose
Resource (or lambda:invoke FunctionName) is RESOURCE with the JSON in FILE; a file
holding {"$fail":{"error":"Name","cause":"..."}} fails the task instead. It exits 0
whatever the execution's outcome, 1 for an invalid definition and 2 for misuse.
--buckets DIR stands for Amazon S3 in a distributed Map's ItemReader and
ResultWriter: object KEY of bucket BUCKET is the file DIR/BUCKET/KEY.`,
		Args: noPositional,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.err = aslRun(cmd.Context(), o, c.env.stdout, c.env.stderr)
			return nil
		},
	}
	fs := runCmd.Flags()
	fs.StringVar(&o.definition, "definition", "", "state machine definition file (required)")
	fs.StringVar(&o.input, "input", "{}", "execution input: JSON text or @FILE")
	fs.BoolVar(&o.history, "history", false, "include the execution history")
	fs.StringArrayVar(&o.tasks, "task", nil, "canned task answer RESOURCE=@FILE (repeatable)")
	fs.StringArrayVar(&o.subs, "sub", nil, "definition substitution NAME=VALUE (repeatable)")
	fs.StringVar(&o.buckets, "buckets", "", "directory standing for S3 (DIR/BUCKET/KEY) for distributed Map ItemReader and ResultWriter")
	return c.group("asl", "validate or run Amazon States Language definitions", validate, runCmd)
}

func parseSubs(subs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, s := range subs {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, usagef("--sub %q: want NAME=VALUE", s)
		}
		out[k] = v
	}
	return out, nil
}

func aslValidate(files, subs []string, stderr io.Writer) error {
	sm, err := parseSubs(subs)
	if err != nil {
		return err
	}
	bad := false
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", file, err)
			bad = true
			continue
		}
		if _, err := asl.Parse(b, sm); err != nil {
			printDefinitionError(stderr, file, err)
			bad = true
		}
	}
	if bad {
		return &adminExitCodeError{Code: adminExitError}
	}
	return nil
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

// aslRunOptions are the flags of `maasflow asl run`.
type aslRunOptions struct {
	definition, input, buckets string
	history                    bool
	tasks, subs                []string
}

func aslRun(ctx context.Context, o *aslRunOptions, stdout, stderr io.Writer) error {
	if o.definition == "" {
		return usagef("--definition FILE is required")
	}
	sm, err := parseSubs(o.subs)
	if err != nil {
		return err
	}
	def, err := os.ReadFile(o.definition)
	if err != nil {
		return usagef("%v", err)
	}
	machine, err := asl.Parse(def, sm)
	if err != nil {
		printDefinitionError(stderr, o.definition, err)
		return &adminExitCodeError{Code: adminExitError}
	}
	in, err := readArg(o.input)
	if err != nil {
		return usagef("--input: %v", err)
	}
	if !json.Valid(in) {
		return usagef("--input is not valid JSON")
	}
	vc := asl.NewVirtualClock(time.Now().UTC().Truncate(time.Millisecond))
	handlers := map[string]asl.TaskHandler{}
	engine := asl.NewEngine(asl.Options{Clock: vc, Tasks: handlers, BucketDir: o.buckets})
	for _, spec := range o.tasks {
		res, file, ok := strings.Cut(spec, "=@")
		if !ok || res == "" || file == "" {
			return usagef("--task %q: want RESOURCE=@FILE", spec)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return usagef("--task %s: %v", res, err)
		}
		h, err := newCannedTask(engine, b)
		if err != nil {
			return usagef("--task %s: %v", res, err)
		}
		handlers[res] = h
	}
	smARN, err := engine.CreateStateMachine("cli", machine)
	if err != nil {
		return usagef("%v", err)
	}
	arn, err := engine.StartExecution(ctx, smARN, "", in)
	if err != nil {
		return usagef("%v", err)
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
	if o.history {
		h, err := engine.History(arn)
		if err != nil {
			return fmt.Errorf("read history: %w", err)
		}
		out.History = h
	}
	b, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	fmt.Fprintln(stdout, string(b))
	return nil
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
