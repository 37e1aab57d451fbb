package intrinsic

// maxRangeItems is AWS's limit on the array States.ArrayRange may build.
const maxRangeItems = 1000

// array implements States.Array(values...): the arguments as an array.
func array(_ *env, _ *Call, args []any) (any, error) {
	// args is freshly built for this call, so it can be returned as is.
	return args, nil
}

// arrayPartition implements States.ArrayPartition(array, size): chunks of
// size items, the last one possibly shorter. size is rounded and must be
// positive.
func arrayPartition(_ *env, _ *Call, args []any) (any, error) {
	const name = "States.ArrayPartition"
	if err := wantArgs(name, args, 2); err != nil {
		return nil, err
	}
	items, err := arrayArg(name, args, 0)
	if err != nil {
		return nil, err
	}
	size, err := intArg(name, args, 1)
	if err != nil {
		return nil, err
	}
	if size <= 0 {
		return nil, fail(name, "argument 2 (chunk size) must be a positive integer, got %d", size)
	}
	var chunks []any
	if len(items) > 0 {
		chunks = make([]any, 0, (int64(len(items))-1)/size+1)
	} else {
		chunks = []any{}
	}
	for start := 0; start < len(items); {
		end := len(items)
		if int64(end-start) > size {
			end = start + int(size)
		}
		chunk := make([]any, end-start)
		copy(chunk, items[start:end])
		chunks = append(chunks, chunk)
		start = end
	}
	return chunks, nil
}

// arrayContains implements States.ArrayContains(array, value) with JSON
// equality (objects and arrays compared deeply).
func arrayContains(_ *env, _ *Call, args []any) (any, error) {
	const name = "States.ArrayContains"
	if err := wantArgs(name, args, 2); err != nil {
		return nil, err
	}
	items, err := arrayArg(name, args, 0)
	if err != nil {
		return nil, err
	}
	for _, item := range items {
		if equal(item, args[1]) {
			return true, nil
		}
	}
	return false, nil
}

// arrayRange implements States.ArrayRange(first, last, step): first, then
// every step, up to and including last. Arguments are rounded and must fit
// Java's int, as AWS's runtime takes them; step must not be zero (a negative
// step counts down) and the result holds at most 1000 items.
func arrayRange(_ *env, _ *Call, args []any) (any, error) {
	const name = "States.ArrayRange"
	if err := wantArgs(name, args, 3); err != nil {
		return nil, err
	}
	var n [3]int64
	for i := range n {
		v, err := int32Arg(name, args, i)
		if err != nil {
			return nil, err
		}
		n[i] = v
	}
	first, last, step := n[0], n[1], n[2]
	if step == 0 {
		return nil, fail(name, "argument 3 (step) must not be zero")
	}
	var count int64
	switch {
	case step > 0 && first <= last:
		count = (last-first)/step + 1
	case step < 0 && first >= last:
		count = (first-last)/(-step) + 1
	}
	if count > maxRangeItems {
		return nil, fail(name, "the range would hold %d items, more than the limit of %d", count, maxRangeItems)
	}
	out := make([]any, count)
	for i := range out {
		out[i] = first + int64(i)*step
	}
	return out, nil
}

// arrayGetItem implements States.ArrayGetItem(array, index), index from 0.
func arrayGetItem(_ *env, _ *Call, args []any) (any, error) {
	const name = "States.ArrayGetItem"
	if err := wantArgs(name, args, 2); err != nil {
		return nil, err
	}
	items, err := arrayArg(name, args, 0)
	if err != nil {
		return nil, err
	}
	idx, err := intArg(name, args, 1)
	if err != nil {
		return nil, err
	}
	if idx < 0 || idx >= int64(len(items)) {
		return nil, fail(name, "index %d is out of range for an array of %d item%s", idx, len(items), plural(len(items)))
	}
	return items[idx], nil
}

// arrayLength implements States.ArrayLength(array).
func arrayLength(_ *env, _ *Call, args []any) (any, error) {
	const name = "States.ArrayLength"
	if err := wantArgs(name, args, 1); err != nil {
		return nil, err
	}
	items, err := arrayArg(name, args, 0)
	if err != nil {
		return nil, err
	}
	return int64(len(items)), nil
}

// arrayUnique implements States.ArrayUnique(array): the first occurrence of
// each distinct value, in order. Values are compared by their canonical JSON
// text (sorted keys, 1 and 1.0 alike), which keeps large arrays linear.
func arrayUnique(_ *env, _ *Call, args []any) (any, error) {
	const name = "States.ArrayUnique"
	if err := wantArgs(name, args, 1); err != nil {
		return nil, err
	}
	items, err := arrayArg(name, args, 0)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]struct{}, len(items))
	out := make([]any, 0, len(items))
	for i, item := range items {
		key, err := marshalJSON(item)
		if err != nil {
			return nil, fail(name, "item %d cannot be compared: %s", i, typeName(item))
		}
		if _, dup := seen[key]; dup {
			continue
		}
		seen[key] = struct{}{}
		out = append(out, item)
	}
	return out, nil
}
