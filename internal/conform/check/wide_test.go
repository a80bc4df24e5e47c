package check

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// wideModel has nine 17-bit counters (153 bits, wider than two words);
// each jumps once from 0 to 65535, so 2^9 states are reachable and the
// state where all have jumped is 9 steps away.
func wideModel() string {
	var b strings.Builder
	b.WriteString("ir_version: 1\nmodel: wide\nprotocol: MCP\nvariables:\n")
	var all []string
	for i := range 9 {
		fmt.Fprintf(&b, "  - {name: w%d, type: int, min: 0, max: 65535}\n", i)
		all = append(all, fmt.Sprintf("w%d == 65535", i))
	}
	b.WriteString("transitions:\n")
	for i := range 9 {
		fmt.Fprintf(&b, "  - {id: Jump%d, kind: Environment, assumption: test, guard: \"w%d == 0\", writes: {w%d: 65535}}\n", i, i, i)
	}
	b.WriteString("properties:\n")
	fmt.Fprintf(&b, "  - {id: NotAll, principle: P6, class: AASM-HARDENING, expr: \"!(%s)\"}\n", strings.Join(all, " && "))
	b.WriteString("  - {id: Any, principle: P6, class: AASM-HARDENING, expr: \"w0 >= 0\"}\n")
	return b.String()
}

func TestStateWiderThan128Bits(t *testing.T) {
	p := compile(t, wideModel())
	if bits := p.Model().StateBits(); bits <= 128 {
		t.Fatalf("the test model is only %d bits wide", bits)
	}
	full, err := Check(context.Background(), p, "Any", Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if full.Status != Holds || full.States != 512 {
		t.Errorf("status %s, %d states, want holds with 512", full.Status, full.States)
	}
	r, _ := Check(context.Background(), p, "NotAll", Options{})
	if r.Status != Violated || r.Trace.Len() != 9 {
		t.Fatalf("status %s, trace %v", r.Status, r.Trace)
	}
	last := r.Trace.Steps[9].Values
	for i, v := range last {
		if v != 65535 {
			t.Errorf("w%d = %d in the violating state, want 65535", i, v)
		}
	}
}
