package asl

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// chainDef builds a chain of n Pass/Choice pairs: each Pass builds a payload
// with Parameters and places it with ResultPath, each Choice tests it.
func chainDef(n int) string {
	var b strings.Builder
	b.WriteString(`{"StartAt":"P0","States":{`)
	for i := range n {
		next := fmt.Sprintf("P%d", i+1)
		if i == n-1 {
			next = "Done"
		}
		fmt.Fprintf(&b, `"P%d":{"Type":"Pass","Parameters":{"i":%d,"node.$":"$.node","tag":"x"},"ResultPath":"$.step","Next":"C%d"},`, i, i, i)
		fmt.Fprintf(&b, `"C%d":{"Type":"Choice","Choices":[{"Variable":"$.step.i","NumericEquals":%d,"Next":"%s"}],"Default":"Done"},`, i, i, next)
	}
	b.WriteString(`"Done":{"Type":"Succeed"}}}`)
	return b.String()
}

// BenchmarkTransitions runs a 2,001-transition Pass/Choice chain per
// execution and reports transitions per second and allocations per
// transition. Run it with -cpu 1 for the single-core figure.
func BenchmarkTransitions(b *testing.B) {
	const pairs = 1000
	transitions := 2*pairs + 1
	sm, err := Parse([]byte(chainDef(pairs)), nil)
	if err != nil {
		b.Fatal(err)
	}
	e := NewEngine(Options{Clock: NewVirtualClock(epoch)})
	arn, err := e.CreateStateMachine("chain", sm)
	if err != nil {
		b.Fatal(err)
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ResetTimer()
	start := time.Now()
	runChains(b, e, arn)
	elapsed := time.Since(start)
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	total := float64(b.N * transitions)
	b.ReportMetric(total/elapsed.Seconds(), "transitions/s")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/total, "allocs/transition")
}

// BenchmarkMap runs a Map over 1,000 items (a Pass with Parameters each)
// with MaxConcurrency 0 (unbounded) and 10.
func BenchmarkMap(b *testing.B) {
	items := make([]string, 1000)
	for i := range items {
		items[i] = fmt.Sprintf(`{"id":%d}`, i)
	}
	input := `{"items":[` + strings.Join(items, ",") + `]}`
	for _, maxC := range []int{0, 10} {
		b.Run(fmt.Sprintf("items=1000/MaxConcurrency=%d", maxC), func(b *testing.B) {
			def := fmt.Sprintf(`{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":%d,
			  "ItemSelector":{"id.$":"$$.Map.Item.Value.id","i.$":"$$.Map.Item.Index"},
			  "ItemProcessor":{"StartAt":"P","States":{"P":{"Type":"Pass","Parameters":{"done.$":"$.id"},"End":true}}},"End":true}}}`, maxC)
			sm, err := Parse([]byte(def), nil)
			if err != nil {
				b.Fatal(err)
			}
			e := NewEngine(Options{Clock: NewVirtualClock(epoch)})
			arn, _ := e.CreateStateMachine("map", sm)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				x, err := e.StartExecution(ctx, arn, "", []byte(input))
				if err != nil {
					b.Fatal(err)
				}
				ex, err := e.Wait(ctx, x)
				if err != nil || ex.Status != StatusSucceeded {
					b.Fatalf("%v %s %s", err, ex.Status, ex.Cause)
				}
			}
			b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "items/s")
		})
	}
}

// BenchmarkIdleWaitingExecutions starts 1,000 executions that each wait on
// a task token and reports the memory (heap and goroutine stacks) one idle
// waiting execution holds.
func BenchmarkIdleWaitingExecutions(b *testing.B) {
	const n = 1000
	def := `{"StartAt":"Enroll","States":{"Enroll":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken",
	  "Parameters":{"FunctionName":"Notify","Payload":{"token.$":"$$.Task.Token","node.$":"$.node"}},
	  "HeartbeatSeconds":3600,"TimeoutSeconds":86400,"ResultPath":"$.enrolled","End":true}}}`
	sm, err := Parse([]byte(def), nil)
	if err != nil {
		b.Fatal(err)
	}
	var perExec float64
	for range b.N {
		var mu sync.Mutex
		var tokens []string
		notify := handlerFunc(func(ctx context.Context, _ []byte) ([]byte, error) {
			tok, _ := TaskToken(ctx)
			mu.Lock()
			tokens = append(tokens, tok)
			mu.Unlock()
			return []byte(`{}`), nil
		})
		e := NewEngine(Options{Clock: newFake(), Tasks: map[string]TaskHandler{"Notify": notify}})
		arn, _ := e.CreateStateMachine("enroll", sm)
		ctx := context.Background()
		before := memInUse()
		arns := make([]string, 0, n)
		for i := range n {
			x, err := e.StartExecution(ctx, arn, "", []byte(fmt.Sprintf(`{"node":"gpu-%04d","site":"ams1"}`, i)))
			if err != nil {
				b.Fatal(err)
			}
			arns = append(arns, x)
		}
		for {
			mu.Lock()
			got := len(tokens)
			mu.Unlock()
			if got == n {
				break
			}
			runtime.Gosched()
		}
		// Let every execution settle into its wait.
		for _, x := range arns {
			for {
				h, _ := e.History(x)
				if h[len(h)-1].Type == "TaskSubmitted" {
					break
				}
				runtime.Gosched()
			}
		}
		after := memInUse()
		perExec = float64(after-before) / n
		for _, tok := range tokens {
			if err := e.SendTaskSuccess(tok, []byte(`{"ok":true}`)); err != nil {
				b.Fatal(err)
			}
		}
		for _, x := range arns {
			if _, err := e.Wait(ctx, x); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(perExec, "bytes/execution")
}

func memInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc + ms.StackInuse
}

// jsonataChainDef is chainDef in JSONata: each Pass builds the same output
// (the input's fields and the payload under "step"), with an object
// template when merge is false and with $merge otherwise; each Choice tests
// it.
func jsonataChainDef(n int, merge bool) string {
	var b strings.Builder
	b.WriteString(`{"QueryLanguage":"JSONata","StartAt":"P0","States":{`)
	for i := range n {
		next := fmt.Sprintf("P%d", i+1)
		if i == n-1 {
			next = "Done"
		}
		if merge {
			fmt.Fprintf(&b, `"P%d":{"Type":"Pass","Output":"{%% $merge([$states.input, {'step': {'i': %d, 'node': $states.input.node, 'tag': 'x'}}]) %%}","Next":"C%d"},`, i, i, i)
		} else {
			fmt.Fprintf(&b, `"P%d":{"Type":"Pass","Output":{"node":"{%% $states.input.node %%}","site":"{%% $states.input.site %%}","step":{"i":%d,"node":"{%% $states.input.node %%}","tag":"x"}},"Next":"C%d"},`, i, i, i)
		}
		fmt.Fprintf(&b, `"C%d":{"Type":"Choice","Choices":[{"Condition":"{%% $states.input.step.i = %d %%}","Next":"%s"}],"Default":"Done"},`, i, i, next)
	}
	b.WriteString(`"Done":{"Type":"Succeed"}}}`)
	return b.String()
}

// BenchmarkQueryLanguages runs the same 401-transition Pass/Choice chain
// written in JSONPath and in JSONata, to compare a JSONata state's cost
// with the equivalent JSONPath state's: "JSONata" builds the Pass output
// with an object template, "JSONata-merge" with $merge (which the JSONata
// library evaluates).
func BenchmarkQueryLanguages(b *testing.B) {
	const pairs = 200
	transitions := 2*pairs + 1
	for _, lang := range []struct {
		name string
		def  string
	}{{"JSONPath", chainDef(pairs)}, {"JSONata", jsonataChainDef(pairs, false)}, {"JSONata-merge", jsonataChainDef(pairs, true)}} {
		b.Run(lang.name, func(b *testing.B) {
			sm, err := Parse([]byte(lang.def), nil)
			if err != nil {
				b.Fatal(err)
			}
			e := NewEngine(Options{Clock: NewVirtualClock(epoch)})
			arn, err := e.CreateStateMachine("chain", sm)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			runChains(b, e, arn)
			b.ReportMetric(float64(b.N*transitions)/b.Elapsed().Seconds(), "transitions/s")
		})
	}
}

// runChains runs b.N executions of a chain machine to success.
func runChains(b *testing.B, e *Engine, arn string) {
	b.Helper()
	ctx := context.Background()
	for range b.N {
		x, err := e.StartExecution(ctx, arn, "", []byte(`{"node":"gpu-01","site":"ams1"}`))
		if err != nil {
			b.Fatal(err)
		}
		ex, err := e.Wait(ctx, x)
		if err != nil || ex.Status != StatusSucceeded {
			b.Fatalf("%v %s %s", err, ex.Status, ex.Cause)
		}
	}
}
