package jsonata

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// awsDocsExpressions are the JSONata expressions of AWS's Step Functions
// developer guide ("Transforming data with JSONata" and the JSONata
// functions Step Functions provides), of this runtime's own state tests,
// and expressions of the same kind for the functions and forms the guide
// points to in jsonata's documentation, with whether the fast path takes
// them natively.
var awsDocsExpressions = []struct {
	expr   string
	native bool
}{
	{`$states.input.title`, true},
	{`$customerName`, true},
	{`$states.input`, true},
	{`$states.input.customer.name`, true},
	{`$states.input.age >= 18`, true},
	{`$states.input.type = 'Private'`, true},
	{`$states.input.value > 20 and $states.input.value < 30`, true},
	{`$states.result`, true},
	{`$states.result.Payload`, true},
	{`$states.result.Payload.total`, true},
	{`$states.errorOutput.Error`, true},
	{`$states.errorOutput.Cause`, true},
	{`$parse($states.errorOutput.Cause)`, true},
	{`$states.context.Execution.Name`, true},
	{`$states.context.Execution.Input.a`, true},
	{`$states.context.State.Name`, true},
	{`$states.context.Map.Item.Index`, true},
	{`$states.context.Map.Item.Value.id`, true},
	{`$states.input.items`, true},
	{`$count($states.input.items)`, true},
	{`$count($states.input.items) > 0`, true},
	{`$sum($states.input.items.price)`, true},
	{`$states.input.items[price > 10]`, true},
	{`$states.input.items[0].sku`, true},
	{`$states.input.n + 1`, true},
	{`$states.input.n * 2`, true},
	{`'Hello ' & $states.input.name`, true},
	{`'failed on ' & $states.input.host`, true},
	{`$exists($band) ? $band : 'none'`, true},
	{`{'foo': 'bar'}`, true},
	{`{'id': $states.input.id, 'status': 'NEW'}`, true},
	{`$merge([$states.input, {'status': 'NEW'}])`, true},
	{`$partition([1, 2, 3, 4, 5, 6, 7, 8, 9], 3)`, true},
	{`$range(0, 10, 2)`, true},
	{`$hash($states.input.content, 'SHA-256')`, true},
	{`$hash('input data', 'SHA-1')`, true},
	{`$random($states.input.seed)`, true},
	{`$parse($states.input.json_string)`, true},
	{`$uppercase($states.input.name)`, true},
	{`$string($states.input.n)`, true},
	{`$number($states.input.count)`, true},
	{`$join($states.input.tags, ',')`, true},
	{`$split($states.input.csv, ',')`, true},
	{`$contains($states.input.name, 'a')`, true},
	{`$length($states.input.name)`, true},
	{`$max($states.input.items.price)`, true},
	{`$min($states.input.items.price)`, true},
	{`$average($states.input.items.price)`, true},
	{`$round($states.input.ratio)`, true},
	{`$floor($states.input.ratio)`, true},
	{`$abs($states.input.delta)`, true},
	{`$append($states.input.tags, 'new')`, true},
	{`$reverse($states.input.tags)`, true},
	{`$type($states.input.items)`, true},
	{`$trim($states.input.padded)`, true},
	{`$substringBefore($states.input.arn, ':')`, true},
	{`$substringAfter($states.input.email, '@')`, true},
	{`$states.input.status in ['PENDING', 'RUNNING']`, true},
	{`$boolean($states.input.tags)`, true},
	{`$uuid()`, true},
	{`$random()`, true},
	{`$states.input.items ~> $count()`, true},
	{`$states.input.csv ~> $split(',') ~> $join('|')`, true},
	{`($total := $sum($states.input.items.price); $total > 10)`, true},
	{`$substring($states.input.name, 0, 2)`, true},
	{`$sort($states.input.tags)`, true},
	{`$distinct($states.input.dups)`, true}, // States.ArrayUnique's JSONata form
	{`$map($states.input.items, function($v) { $v.price * $v.qty })`, true},
	{`$filter($states.input.items, function($v) { $v.price > 10 })`, true},
	{`$reduce($states.input.items.price, function($a, $b) { $a + $b })`, true},
	{`$sort($states.input.items, function($l, $r) { $l.price > $r.price })`, true},
	{`$keys($states.input.customer)`, true},
	{`$states.input.items.(price * qty)`, true},
	// Not yet native: the interpreter evaluates these.
	{`$now()`, false},
	{`$millis()`, false},
}

// TestAWSDocsExpressionsRunNatively: each expression the table marks
// native is taken and decided by the fast path, with the interpreter's
// answer; the others stay the interpreter's. It logs the share.
func TestAWSDocsExpressionsRunNatively(t *testing.T) {
	input := mustJSON(t, `{"title":"Doctor","customer":{"name":"María"},"age":21,"type":"Private","value":25,
	  "items":[{"sku":"a","price":12,"qty":2},{"sku":"b","price":4.5,"qty":1}],"n":3,"name":"Ana","host":"gpu-01",
	  "id":"o-1","content":"payload","seed":7,"json_string":"{\"a\":[1,2]}","count":"42","tags":["x","y"],"csv":"a,b",
	  "ratio":2.5,"delta":-4,"padded":"  a  b ","arn":"arn:aws:states","email":"ops@example.com","status":"RUNNING","dups":["a",1,"a",2.0,2,null,null]}`)
	vars := varMap{
		"states": map[string]any{
			"input":       input,
			"result":      map[string]any{"Payload": map[string]any{"total": int64(16)}},
			"errorOutput": map[string]any{"Error": "States.TaskFailed", "Cause": `{"code":7}`},
			"context": map[string]any{
				"Execution": map[string]any{"Name": "run-1", "Input": map[string]any{"a": "A"}},
				"State":     map[string]any{"Name": "Step"},
				"Map":       map[string]any{"Item": map[string]any{"Index": int64(1), "Value": map[string]any{"id": "i-1"}}},
			},
		},
		"customerName": "María",
		"band":         "gold",
	}
	native := 0
	for _, c := range awsDocsExpressions {
		x, err := Compile(c.expr)
		require.NoError(t, err, c.expr)
		if !c.native {
			assert.Nil(t, x.fast, "%s: now native: mark it so", c.expr)
			continue
		}
		require.NotNil(t, x.fast, "%s: the fast path must take it", c.expr)
		env := Env{Vars: vars, Entropy: bytes.NewReader(bytes.Repeat([]byte{1}, 64))}
		fv, ferr := evalFast(x.fast, env)
		require.NotErrorIs(t, ferr, errNotSure, "%s: the fast path must decide it", c.expr)
		env.Entropy = bytes.NewReader(bytes.Repeat([]byte{1}, 64))
		lv, lerr := x.evalReference(env, noInput)
		require.NoError(t, lerr, c.expr)
		require.NoError(t, ferr, c.expr)
		assert.Equal(t, lv, fv, c.expr)
		native++
	}
	t.Logf("%d of %d AWS-docs expressions run natively", native, len(awsDocsExpressions))
}
