package check

import (
	"fmt"
	"strings"
)

// CountersModel returns the IR source of a generated model whose state
// count is known in advance, for measuring the checker at scale and
// comparing it with SPIN: n counters c0..c(n-1), each in 0..k-1. Inc_i adds
// one to c_i below its bound; Move_i moves one unit from c_i to its
// neighbour c_(i+1 mod n) when c_i > 0 and the neighbour is below its
// bound. Inc alone reaches every vector, so exactly k^n states are
// reachable, at most n(k-1) steps from the initial all-zero state. The
// property Apart ("c0 and c1 are not both at k-1") is violated; its
// shortest counterexample takes 2(k-1) steps.
func CountersModel(n, k int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ir_version: 1\nmodel: counters_%dx%d\nprotocol: MCP\nvariables:\n", n, k)
	for i := range n {
		fmt.Fprintf(&b, "  - {name: c%d, type: int, min: 0, max: %d}\n", i, k-1)
	}
	b.WriteString("transitions:\n")
	for i := range n {
		j := (i + 1) % n
		fmt.Fprintf(&b, "  - {id: Inc%d, kind: Environment, assumption: generated, guard: \"c%d < %d\", writes: {c%d: c%d + 1}}\n",
			i, i, k-1, i, i)
		if j != i {
			fmt.Fprintf(&b, "  - {id: Move%d, kind: Environment, assumption: generated, guard: \"c%d > 0 && c%d < %d\", writes: {c%d: c%d - 1, c%d: c%d + 1}}\n",
				i, i, j, k-1, i, i, j, j)
		}
	}
	b.WriteString("properties:\n")
	fmt.Fprintf(&b, "  - {id: Bounded, principle: P6, class: AASM-HARDENING, expr: \"c0 <= %d\"}\n", k-1)
	if n > 1 {
		fmt.Fprintf(&b, "  - {id: Apart, principle: P6, class: AASM-HARDENING, expr: \"!(c0 == %d && c1 == %d)\"}\n", k-1, k-1)
	}
	return b.String()
}
