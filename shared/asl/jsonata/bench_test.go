package jsonata

import (
	"encoding/json"
	"testing"
)

// BenchmarkEval evaluates typical state expressions one at a time: those
// the fast path decides (blocks, chains, `in` and numeric functions,
// the map operator, lambdas and $map/$filter/$reduce among them), and
// those only jsonata-js evaluates (a sort step, the parent operator).
func BenchmarkEval(b *testing.B) {
	var input any
	if err := json.Unmarshal([]byte(`{"node":"gpu-01","site":"ams1","step":{"i":3},
	  "items":[{"sku":"a","qty":2,"price":3.5},{"sku":"b","qty":1,"price":10},{"sku":"c","qty":4,"price":1.25}]}`), &input); err != nil {
		b.Fatal(err)
	}
	vars := varMap{"states": map[string]any{"input": input}}
	for _, c := range []struct{ name, expr string }{
		{"path", `$states.input.step.i`},
		{"compare", `$states.input.step.i = 3`},
		{"merge", `$merge([$states.input, {'step': {'i': 4, 'node': $states.input.node, 'tag': 'x'}}])`},
		{"template", `{'host': $uppercase($states.input.node) & '.' & $states.input.site, 'n': $count($states.input.items)}`},
		{"filter", `$states.input.items[qty > 1].sku`},
		{"sum-of-products", `$sum($states.input.items.(qty * price))`},
		{"block", `($n := $count($states.input.items); $n > 2 ? 'many' : 'few')`},
		{"chain", `$states.input.node ~> $substringAfter('-') ~> $number()`},
		{"in", `$states.input.site in ['ams1', 'fra1']`},
		{"max-round", `$round($max($states.input.items.price))`},
		{"map-filter-reduce", `$reduce($map($filter($states.input.items, function($v) { $v.qty > 1 }), function($v) { $v.qty * $v.price }), function($a, $b) { $a + $b })`},
		{"sort", `$states.input.items^(>price).sku`},
		{"parent", `$states.input.items.{'sku': sku, 'site': %.site}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			x, err := Compile(c.expr)
			if err != nil {
				b.Fatal(err)
			}
			env := Env{Vars: vars}
			if _, err := x.Eval(env); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := x.Eval(env); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
