package jsonata

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFastPathFunctionsAgreeWithTheReference holds the numeric, array and
// string functions and `in` to jsonata-js on operands of every JSON type.
func TestFastPathFunctionsAgreeWithTheReference(t *testing.T) {
	input := mustJSON(t, `{"s":"b","ws":"  a \t b\n\r c  ","n":3,"neg":-2.5,"half":2.5,"odd":3.5,"f":2.7,"t":true,"fa":false,"z":null,
	  "o":{"k":"v"},"eo":{},"a":[1,2,3],"sa":["x","y"],"e":"é-ü","zero":0,"one":[5],"empty":[],"mixed":[1,"a",null,true],
	  "items":[{"sku":"a","n":1},{"sku":"b","n":4}],"big":1e300,"bools":[false,0,""]}`)
	vars := varMap{"states": map[string]any{"input": input}}
	operands := []string{"$states.input.s", "$states.input.ws", "$states.input.n", "$states.input.neg", "$states.input.half",
		"$states.input.odd", "$states.input.f", "$states.input.t", "$states.input.fa", "$states.input.z", "$states.input.o",
		"$states.input.eo", "$states.input.a", "$states.input.sa", "$states.input.e", "$states.input.zero", "$states.input.one",
		"$states.input.empty", "$states.input.mixed", "$states.input.items", "$states.input.items.n", "$states.input.items.sku",
		"$states.input.missing", "$states.input.big", "$states.input.bools", "'lit'", "-0.5", "0.5", "1.5", "-1.5", "null", "[]", "{}"}
	var exprs []string
	for _, a := range operands {
		exprs = append(exprs, "$floor("+a+")", "$ceil("+a+")", "$abs("+a+")", "$round("+a+")", "$round("+a+", 0)",
			"$round("+a+", 1)", "$sqrt("+a+")", "$power("+a+", 2)", "$power(2, "+a+")", "$power("+a+", 0.5)",
			"$max("+a+")", "$min("+a+")", "$average("+a+")", "$append("+a+", 1)", "$append([1], "+a+")",
			"$append("+a+", "+a+")", "$reverse("+a+")", "$boolean("+a+")", "$type("+a+")", "$trim("+a+")",
			"$substringBefore("+a+", '-')", "$substringAfter("+a+", '-')", "$substringBefore('a-b', "+a+")",
			"$substringAfter('a-b', "+a+")", "$distinct("+a+")", "$distinct($append("+a+", "+a+"))", a+" in $states.input.a", a+" in $states.input.mixed", a+" in "+a,
			"'b' in "+a, "1 in "+a, "null in "+a, a+" in ['b', 3, 2.5]")
	}
	exprs = append(exprs, `$round(-0.4)`, `$floor(-0.5)`, `$ceil(-0.5)`, `$power(-8, 1/3)`, `$power(10, 400)`, `$sqrt(-1)`,
		`$max([])`, `$average([1, 2])`, `$substringAfter('😀-x', '-')`, `$trim('')`, `$trim(' ')`, `$states.input.o in [$states.input.o]`,
		`$states.input.items[sku in ['a', 'c']].n`, `$append($states.input.items, {'sku': 'c'})`, `$round(2.5) + $round(3.5)`,
		`$distinct([1, 1.0, 2, '2', true, true, null, null, 'x', 'x'])`, `$distinct([[1], [1]])`, `$distinct([{'k': 1}, {'k': 1}])`,
		`$distinct($states.input.items.sku)`, `$distinct($states.input.items[0].sku)`)
	fastSeen, decided := agreeWithReference(t, exprs, vars)
	t.Logf("%d expressions, %d taken by the fast path, %d decided by it", len(exprs), fastSeen, decided)
	assert.Greater(t, decided, 500)
}

// TestFastPathChainsAgreeWithTheReference holds `~>` chains to jsonata-js.
func TestFastPathChainsAgreeWithTheReference(t *testing.T) {
	input := mustJSON(t, `{"s":"a,b","n":3,"a":[3,1,2],"items":[{"p":1},{"p":2}],"z":null}`)
	vars := varMap{"states": map[string]any{"input": input}, "count": "shadowed"}
	exprs := []string{
		`$states.input.s ~> $split(',')`, `$states.input.s ~> $split(',') ~> $join('-')`, `$states.input.a ~> $sum()`,
		`$states.input.a ~> $max()`, `$states.input.items.p ~> $sum()`, `$states.input.missing ~> $uppercase()`,
		`$states.input.z ~> $string()`, `$states.input.n ~> $power(2)`, `$states.input.s ~> $uppercase() ~> $length()`,
		`$states.input.a ~> $count()`, `$states.input.a ~> $reverse() ~> $append(9)`, `$states.input.s ~> $substringAfter(',')`,
		`$states.input.s ~> $uppercase`, `$states.input.a ~> $count(1)`, `[1, 2] ~> $partition(1)`,
	}
	fastSeen, decided := agreeWithReference(t, exprs, vars)
	t.Logf("%d expressions, %d taken by the fast path, %d decided by it", len(exprs), fastSeen, decided)
	assert.Greater(t, decided, 10)
}

// TestFastPathBlocksAgreeWithTheReference holds blocks and their `:=`
// bindings to jsonata-js: scope, order, shadowing and undefined.
func TestFastPathBlocksAgreeWithTheReference(t *testing.T) {
	input := mustJSON(t, `{"n":3,"a":[3,1,2],"items":[{"p":1,"s":"x"},{"p":2,"s":"y"}],"one":[{"p":5}],"z":null}`)
	vars := varMap{"states": map[string]any{"input": input}, "x": "outer"}
	exprs := []string{
		`($t := $sum($states.input.items.p); $t > 2)`, `($a := 1; $b := $a + 1; $a + $b)`, `($x := 'inner'; $x)`,
		`(($x := 'inner'); $x)`, `($x := $states.input.missing; $x)`, `($x := $states.input.missing; $exists($x))`,
		`($i := $states.input.items; $i[p > 1].s)`, `($i := $states.input.items.s; $i[0])`, `($i := $states.input.items.s; [$i])`,
		`($o := $states.input.one.p; $o)`, `($o := $states.input.one; $o.p)`, `($o := $states.input.one; [$o])`, `($v := 1)`,
		`($v := {'k': $states.input.n}; $v.k * 2)`, `($v := 1; ($v := 2; $v) + $v)`, `($count := 1; $count)`,
		`($n := $states.input.n; $n ~> $power(2))`, `($states.input.n; 'last')`, `($a := [1, 2]; $a[1])`,
		`($s := $states.input.items.s; $join($s, '+'))`, `($z := $states.input.z; $z = null)`, `($x := 1; $states.input.n + $x)`,
		`($p := $states.input.items[0]; $p.s & $p.p)`, `($m := $merge([$states.input.items[0], {'q': 1}]); $m.q)`,
	}
	fastSeen, decided := agreeWithReference(t, exprs, vars)
	t.Logf("%d expressions, %d taken by the fast path, %d decided by it", len(exprs), fastSeen, decided)
	assert.Greater(t, decided, 15)
}

// TestFastPathSubstringAgreesWithTheReference holds $substring to
// jsonata-js over code points, negative and out-of-range positions.
func TestFastPathSubstringAgreesWithTheReference(t *testing.T) {
	vars := varMap{"states": map[string]any{"input": mustJSON(t, `{"s":"héllo😀x","n":2,"f":1.5,"z":null}`)}}
	var exprs []string
	for _, s := range []string{"$states.input.s", "'abc'", "''", "$states.input.missing", "$states.input.n", "$states.input.z"} {
		for _, start := range []string{"0", "1", "-1", "-3", "-20", "5", "6", "20", "$states.input.f", "$states.input.n"} {
			exprs = append(exprs, "$substring("+s+", "+start+")")
			for _, length := range []string{"0", "1", "2", "-1", "10", "$states.input.f"} {
				exprs = append(exprs, "$substring("+s+", "+start+", "+length+")")
			}
		}
	}
	fastSeen, decided := agreeWithReference(t, exprs, vars)
	t.Logf("%d expressions, %d taken by the fast path, %d decided by it", len(exprs), fastSeen, decided)
	assert.Greater(t, decided, 200)
}

// TestFastPathSortAgreesWithTheReference holds $sort without a comparator
// to jsonata-js.
func TestFastPathSortAgreesWithTheReference(t *testing.T) {
	vars := varMap{"states": map[string]any{"input": mustJSON(t, `{"n":[3,1.5,-2,3,0],"s":["b","a","B","aa",""],"u":["é","e"],
	  "mixed":[1,"a"],"one":[4],"empty":[],"x":5,"items":[{"p":2},{"p":1}],"z":null,"nulls":[null,1]}`)}}
	exprs := []string{}
	for _, a := range []string{"n", "s", "u", "mixed", "one", "empty", "x", "items", "items.p", "z", "nulls", "missing"} {
		exprs = append(exprs, "$sort($states.input."+a+")", "$sort($states.input."+a+")[0]", "[$sort($states.input."+a+")]",
			"$states.input."+a+" ~> $sort()", "$sort($states.input."+a+", function($l, $r) { $l < $r })")
	}
	exprs = append(exprs, `$sort([2, 1])`, `$sort(['b', 'a'])`, `$sort([1, 2.5, 2])`, `$reverse($sort($states.input.n))`)
	fastSeen, decided := agreeWithReference(t, exprs, vars)
	t.Logf("%d expressions, %d taken by the fast path, %d decided by it", len(exprs), fastSeen, decided)
	assert.Greater(t, decided, 18)
}

// TestFastPathLambdasAgreeWithTheReference holds lambdas and the
// higher-order functions ($map, $filter, $reduce, $single, $sift, $each,
// $sort with a comparator) and $keys to jsonata-js: empty arrays, one
// item, undefined results, non-array input, nested lambdas, lambdas
// reading block variables, arity.
func TestFastPathLambdasAgreeWithTheReference(t *testing.T) {
	input := mustJSON(t, `{"items":[{"sku":"a","price":12,"qty":2},{"sku":"b","price":4.5,"qty":1},{"sku":"c","price":12,"qty":0}],
	  "one":[{"sku":"z","price":1,"qty":1}],"empty":[],"n":[3,1,2],"s":["b","a","c"],"x":5,"o":{"b":2,"a":1,"c":null},
	  "nested":[[1,2],[3]],"z":null,"mixed":[1,"a",null,true,{"k":1},[]],"objs":[{"b":1,"a":2},{"c":3,"a":4},5,[{"d":1}]],
	  "numkeys":{"10":1,"2":2},"eo":{}}`)
	vars := varMap{"states": map[string]any{"input": input}, "rate": int64(2)}
	in := "$states.input."
	var exprs []string
	for _, a := range []string{"items", "one", "empty", "n", "s", "x", "o", "nested", "z", "missing", "mixed", "items.price", "one.price"} {
		src := in + a
		exprs = append(exprs,
			"$map("+src+", function($v) { $v })", "$map("+src+", function($v, $i) { $i })", "$map("+src+", function($v, $i, $a) { $count($a) })",
			"$map("+src+", function($v) { $v.price })", "$map("+src+", function($v) { [$v] })", "$map("+src+", function() { 1 })",
			"$map("+src+", function($v) { $v * $rate })", "[$map("+src+", function($v) { $v })]", "$map("+src+", function($v) { $v })[0]",
			"$filter("+src+", function($v) { $v.price > 10 })", "$filter("+src+", function($v, $i) { $i > 0 })", "$filter("+src+", function($v) { $v })",
			"$filter("+src+", function($v, $i, $a) { $i = $count($a) - 1 })", "[$filter("+src+", function($v) { true })]",
			"$reduce("+src+", function($a, $b) { $a + $b })", "$reduce("+src+", function($a, $b) { $a + $b }, 100)",
			"$reduce("+src+", function($a, $b, $i) { $a + $i }, 0)", "$reduce("+src+", function($a, $b, $i, $all) { $count($all) })",
			"$reduce("+src+", function($a) { $a })", "$reduce("+src+", function($a, $b) { $append($a, $b) }, [])",
			"$single("+src+", function($v) { $v.sku = 'a' })", "$single("+src+", function($v, $i) { $i = 0 })",
			"$sort("+src+", function($l, $r) { $l > $r })", "$sort("+src+", function($l, $r) { $l.price < $r.price })",
			"$sort("+src+", function($l, $r) { $l.price > $r.price })", "$sort("+src+", function($l, $r) { 1 })",
			"$keys("+src+")", "$sift("+src+", function($v) { $v })", "$sift("+src+", function($v, $k) { $k != 'a' })",
			"$each("+src+", function($v, $k) { $k & '=' & $string($v) })", "$each("+src+", function($v) { $v })")
	}
	exprs = append(exprs,
		`$map($states.input.items, function($v) { $v.price * $v.qty })`,
		`$map($states.input.items, function($v) { $map($v.sku, function($c) { $uppercase($c) }) })`,
		`$map($states.input.nested, function($r) { $map($r, function($c) { $c * $rate }) })`,
		`($f := function($v) { $v * 2 }; $map($states.input.n, $f))`,
		`($k := 10; $map($states.input.n, function($v) { $v + $k }))`,
		`($k := 10; $f := function($v) { $v + $k }; $k := 20; $f(1))`,
		`($add := function($a, $b) { $a + $b }; $add(1))`, `($add := function($a, $b) { $a + $b }; $add(1, 2, 3))`,
		`($fact := function($n) { $n <= 1 ? 1 : $n * $fact($n - 1) }; $fact(5))`,
		`($loop := function($n) { $loop($n + 1) }; $loop(0))`,
		`($f := function($v) { $v }; $f)`, `function($v) { $v }`, `[function($v) { $v }]`, `{'f': function($v) { $v }}`,
		`$count(function($v) { $v })`, `$map([1, 2], $string)`, `$nope(1)`, `($f := 1; $f(2))`,
		`$states.input.n ~> $map(function($v) { $v + 1 })`, `$states.input.n ~> $filter(function($v) { $v > 1 })`,
		`$filter($states.input.mixed, function($v) { $v })`, `$map($states.input.items, function($v) { $v.missing })`,
		`$reduce($states.input.items.price, function($a, $b) { $a + $b })`,
		`$sort($states.input.items, function($l, $r) { $l.price > $r.price }).sku`,
		`$sort($states.input.n, function($l, $r) { $l < $r })`, `$sort([3, 1, 2, 1], function($l, $r) { $l > $r })`,
		`$keys($states.input.objs)`, `$keys($states.input.numkeys)`, `$keys($states.input.eo)`, `$keys([])`, `$keys('s')`,
		`$sift($states.input.o, function($v, $k, $o) { $count($keys($o)) = 3 })`, `$each($states.input.numkeys, function($v) { $v })`,
		`$map($states.input.items, function($v) { $v.price > 10 ? $v.sku })`, `$map($states.input.n, function($v) { ($x := $v; $x * $x) })`,
		`$filter($states.input.items, function($v) { $v.qty })`, `$single($states.input.n, function($v) { $v > 1 })`,
		`$single($states.input.n, function($v) { $v > 5 })`, `$states.input.items[$map([1], function($v) { $v })]`,
		`$map($states.input.items, function($v) { $v.price > 10 ? $keys($v) : $uppercase($v.sku) })`,
		`$map($states.input.items, function($v) { $v.price > 10 ? $map([$v.sku], function($s) { $s }) })`,
		`$map($states.input.items, function($v) { ($s := $v.sku; $filter([$s, 'b'], function($x) { $x = 'b' })) })`,
		`$map($states.input.items, function($v) { ($s := $v.sku; [$s]) })`, `$map($states.input.n, function($v) { $v > 1 ? [$v] : $v })`,
		`$map($states.input.o, function($o) { $keys($o) })`, `$map($states.input.items, function($v) { $distinct([$v.sku]) })`,
		`$reduce($states.input.n, function($a, $b) { $append($a, $b) })`, `$each($states.input.o, function($v, $k) { $keys({$k: $v}) })`,
	)
	fastSeen, decided := agreeWithReference(t, exprs, vars)
	t.Logf("%d expressions, %d taken by the fast path, %d decided by it", len(exprs), fastSeen, decided)
	assert.Greater(t, decided, 280)
}

// TestJSONataFunctionNamesAreKnown: the names read from jsonata's source
// hold its functions (a call of one the fast path lacks stays the
// interpreter's) and no variable name.
func TestJSONataFunctionNamesAreKnown(t *testing.T) {
	for _, name := range []string{"map", "filter", "reduce", "sum", "keys", "now", "millis", "formatNumber", "lookup"} {
		assert.True(t, jsonataFunctions()[name], name)
	}
	assert.False(t, jsonataFunctions()["states"])
	x, err := Compile(`$formatNumber(1, '#')`)
	require.NoError(t, err)
	assert.Nil(t, x.fast)
}

// TestFastPathMapOperatorAgreesWithTheReference holds `path.(expr)` to
// jsonata-js.
func TestFastPathMapOperatorAgreesWithTheReference(t *testing.T) {
	input := mustJSON(t, `{"items":[{"sku":"a","price":12,"qty":2},{"sku":"b","price":4.5,"qty":1},{"sku":"c","qty":3}],
	  "one":[{"price":2,"qty":3}],"empty":[],"o":{"price":2,"qty":5},"n":[3,1,2],"nested":[[1,2],[3]],"x":5,"z":null}`)
	vars := varMap{"states": map[string]any{"input": input}, "rate": int64(2), "list": []any{int64(1), int64(2)}}
	var exprs []string
	for _, a := range []string{"items", "one", "empty", "o", "n", "nested", "x", "z", "missing"} {
		src := "$states.input." + a
		exprs = append(exprs, src+".(price * qty)", src+".(price)", src+".(sku & '!')", src+".({'s': sku})", src+".([price])",
			src+".(price * $rate)", src+".($x := qty; $x + 1)", src+".('k')", "["+src+".(qty)]", "$sum("+src+".(price * qty))")
	}
	exprs = append(exprs, `$list.($ * 2)`, `$list.('v')`, `$states.input.items[price > 5].(price * qty)`,
		`$map($states.input.items, function($v) { $v.(qty) })`, `$states.input.items.(qty).x`)
	fastSeen, decided := agreeWithReference(t, exprs, vars)
	t.Logf("%d expressions, %d taken by the fast path, %d decided by it", len(exprs), fastSeen, decided)
	assert.Greater(t, decided, 50)
}
