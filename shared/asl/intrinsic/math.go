package intrinsic

import (
	"encoding/binary"
	"math"
)

// mathAdd implements States.MathAdd(a, b). AWS documents integer arguments
// between -2147483648 and 2147483647 and rounds non-integers Java-style
// (1.5 → 2, -1.5 → -1). The sum is an int64, so it cannot wrap.
func mathAdd(_ *env, _ *Call, args []any) (any, error) {
	const name = "States.MathAdd"
	if err := wantArgs(name, args, 2); err != nil {
		return nil, err
	}
	a, err := int32Arg(name, args, 0)
	if err != nil {
		return nil, err
	}
	b, err := int32Arg(name, args, 1)
	if err != nil {
		return nil, err
	}
	return a + b, nil
}

// mathRandom implements States.MathRandom(start, end[, seed]): an integer
// from start (inclusive) to end (exclusive), as AWS documents. Arguments are
// rounded. With a seed the result is deterministic: it is what
// java.util.Random(seed).nextInt(end-start)+start gives, the generator of
// AWS's Java runtime, though AWS does not document its exact sequence.
// Without a seed, one is drawn from the entropy source.
func mathRandom(e *env, _ *Call, args []any) (any, error) {
	const name = "States.MathRandom"
	if len(args) != 2 && len(args) != 3 {
		return nil, fail(name, "takes 2 or 3 arguments (start, end[, seed]), got %d", len(args))
	}
	start, err := int32Arg(name, args, 0)
	if err != nil {
		return nil, err
	}
	end, err := int32Arg(name, args, 1)
	if err != nil {
		return nil, err
	}
	bound := end - start
	if bound <= 0 {
		return nil, fail(name, "argument 2 (end) must be greater than argument 1 (start)")
	}
	if bound > math.MaxInt32 {
		return nil, fail(name, "the range from start to end must hold at most %d numbers", math.MaxInt32)
	}
	var seed int64
	if len(args) == 3 {
		if seed, err = intArg(name, args, 2); err != nil {
			return nil, err
		}
	} else {
		var b [8]byte
		if _, err := e.entropy.Read(b[:]); err != nil {
			return nil, fail(name, "read entropy: %v", err)
		}
		seed = int64(binary.LittleEndian.Uint64(b[:])) //nolint:gosec // any 64 bits make a seed: wrapping is intended
	}
	r := newJavaRandom(seed)
	return start + int64(r.nextInt(int32(bound))), nil
}

// javaRandom is java.util.Random's 48-bit linear congruential generator.
type javaRandom struct{ seed int64 }

const (
	javaMultiplier = 0x5DEECE66D
	javaAddend     = 0xB
	javaMask       = (1 << 48) - 1
)

func newJavaRandom(seed int64) *javaRandom {
	return &javaRandom{seed: (seed ^ javaMultiplier) & javaMask}
}

func (r *javaRandom) next(bits uint) int32 {
	r.seed = (r.seed*javaMultiplier + javaAddend) & javaMask
	return int32(uint64(r.seed) >> (48 - bits)) //nolint:gosec // Java's (int) cast keeps the low 32 bits; so does this
}

// nextInt is Random.nextInt(bound) for bound > 0, including its rejection
// loop, so the sequence matches Java's.
func (r *javaRandom) nextInt(bound int32) int32 {
	x := r.next(31)
	m := bound - 1
	if bound&m == 0 { // power of two
		return int32((int64(bound) * int64(x)) >> 31) //nolint:gosec // the product of a 31-bit value and bound, shifted by 31, is below bound
	}
	for u := x; ; u = r.next(31) {
		x = u % bound
		if u-x+m >= 0 { // int32 overflow here is the rejection signal, as in Java
			return x
		}
	}
}
