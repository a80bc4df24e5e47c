package check

import (
	"fmt"
	"math"
	"strings"
)

// StoreMode is how a check remembers the states it has visited.
//
//	exact        every state's packed words: a "holds" is a proof
//	hashcompact  a 64-bit fingerprint per state (SPIN's -DHC, TLC's
//	             fingerprints): two states with one fingerprint are taken
//	             for one, so a state can be missed
//	bitstate     k bits per state in a fixed array (SPIN's -DBITSTATE,
//	             Holzmann's supertrace): a state whose k bits are all set
//	             already is taken for visited, so states can be missed
//
// In the two partial modes a violation is real: its counterexample is
// rebuilt by replaying its actions from the initial state, and is
// reported only if it replays. A "holds" is not a proof; Result.Coverage
// says how likely a missed state is.
type StoreMode string

const (
	StoreExact       StoreMode = "exact"
	StoreHashCompact StoreMode = "hashcompact"
	StoreBitstate    StoreMode = "bitstate"
)

// Bitstate defaults, as SPIN's: 2^27 bits (16 MiB) and 3 hash functions.
const (
	DefaultBitstateLog2   = 27
	DefaultBitstateHashes = 3
	// MinBitstateLog2 and MaxBitstateLog2 bound the array: 2^10 bits to
	// 2^40 bits (128 GiB).
	MinBitstateLog2 = 10
	MaxBitstateLog2 = 40
	MaxBitstateHash = 16
)

// ParseStore reads a --store value.
func ParseStore(s string) (StoreMode, error) {
	switch m := StoreMode(s); m {
	case StoreExact, StoreHashCompact, StoreBitstate:
		return m, nil
	case "":
		return StoreExact, nil
	}
	return "", fmt.Errorf("unknown store %q (want exact, hashcompact or bitstate)", s)
}

// Coverage describes a search that may have missed states: one run in
// hash-compaction or bitstate mode. It is nil for an exact search.
type Coverage struct {
	Mode StoreMode
	// For bitstate: the array has 2^Log2Bits bits, Hashes bits are set
	// per state.
	Log2Bits, Hashes int
	// MissBound is, for hash compaction, an upper bound on the probability
	// that any state was missed: n(n-1)/2 / 2^64 for the n states stored,
	// assuming fingerprints spread uniformly (TLC prints the same
	// estimate).
	MissBound float64
	// HashFactor is, for bitstate, bits per stored state (SPIN's "hash
	// factor"); ExpectedMissed the expected number of states whose bits
	// were all set already when they were first reached, and Estimate
	// stored / (stored + ExpectedMissed). A missed state's successors may
	// be missed too, so Estimate is an estimate, not a bound.
	HashFactor, ExpectedMissed, Estimate float64
}

// newCoverage computes the coverage of a partial search that stored
// states states.
func newCoverage(mode StoreMode, log2Bits, hashes, states int) *Coverage {
	c := &Coverage{Mode: mode}
	n := float64(states)
	switch mode {
	case StoreHashCompact:
		c.MissBound = min(1, n*(n-1)/2/math.Exp2(64))
	case StoreBitstate:
		c.Log2Bits, c.Hashes = log2Bits, hashes
		m, k := math.Exp2(float64(log2Bits)), float64(hashes)
		c.HashFactor = m / max(n, 1)
		// A state reached when j states are stored has its k bits all set
		// with probability about (1 - e^(-kj/m))^k; sum over j.
		const steps = 1000
		for i := range steps {
			j := (float64(i) + 0.5) * n / steps
			c.ExpectedMissed += math.Pow(1-math.Exp(-k*j/m), k) * n / steps
		}
		c.Estimate = n / (n + c.ExpectedMissed)
	}
	return c
}

// String describes the mode and its odds, as printed after a result:
// "hash compaction, 64-bit fingerprints; probability of a missed state
// ≤ 2.7e-06".
func (c *Coverage) String() string {
	switch c.Mode {
	case StoreHashCompact:
		return fmt.Sprintf("hash compaction, 64-bit fingerprints; probability of a missed state ≤ %s", sci(c.MissBound))
	case StoreBitstate:
		return fmt.Sprintf("bitstate, 2^%d bits, %d hashes, %.1f bits per state; coverage estimate %s (about %s states missed)",
			c.Log2Bits, c.Hashes, c.HashFactor, percent(c.Estimate), sci(c.ExpectedMissed))
	}
	return string(c.Mode)
}

// Label is the result as a user reads it: "holds" only after an exact
// search. A partial search that found no violation says so, with its
// mode and odds: "holds (partial coverage: hash compaction, …)" or "no
// violation found (partial coverage: bitstate, …)".
func (r *Result) Label() string {
	if r.Status != Holds || r.Coverage == nil {
		return string(r.Status)
	}
	if r.Coverage.Mode == StoreBitstate {
		return "no violation found (partial coverage: " + r.Coverage.String() + ")"
	}
	return "holds (partial coverage: " + r.Coverage.String() + ")"
}

// Partial reports whether r holds only as far as a partial search saw.
func (r *Result) Partial() bool { return r.Status == Holds && r.Coverage != nil }

func sci(x float64) string {
	if x == 0 {
		return "0"
	}
	return strings.NewReplacer("e-0", "e-", "e+0", "e+").Replace(fmt.Sprintf("%.1e", x))
}

func percent(x float64) string {
	if x >= 0.99995 {
		return fmt.Sprintf("%.4f%%", 100*x)
	}
	return fmt.Sprintf("%.2f%%", 100*x)
}
