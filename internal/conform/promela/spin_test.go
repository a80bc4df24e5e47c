package promela

import "testing"

// panOutput is pan 6.5.2's report for a small model (BFS, -DSAFETY, mcp behind warden).
const panOutput = `
(Spin Version 6.5.2 -- 6 December 2019)
	+ Breadth-First Search

Full statespace search for:
	never claim         	- (none specified)
	assertion violations	+
	cycle checks       	- (disabled by -DSAFETY)
	invalid end states	+

State-vector 28 byte, depth reached 13, errors: 0
      337 states, stored
	     337 nominal states (stored-atomic)
      833 states, matched
     1170 transitions (= stored+matched)
        0 atomic steps
hash conflicts:         0 (resolved)

Stats on memory usage (in Megabytes):
    0.015	equivalent memory usage for states (stored*(State-vector + overhead))
    0.288	actual memory usage for states
  128.000	memory used for hash table (-w24)
  128.195	total actual memory usage


unreached in proctype main
	model.pml:108, state 88, "-end-"
	(1 of 88 states)

pan: elapsed time 0 seconds
`

func TestParsePan(t *testing.T) {
	r, err := parsePan(panOutput)
	if err != nil {
		t.Fatal(err)
	}
	if r.Stored != 337 || r.Violated {
		t.Errorf("stored %d violated %v, want 337 false", r.Stored, r.Violated)
	}
	if want := 0.015 * (1 << 20); r.StateBytes != want {
		t.Errorf("StateBytes = %v, want %v", r.StateBytes, want)
	}
	if want := 128.195 * (1 << 20); r.TotalBytes != want {
		t.Errorf("TotalBytes = %v, want %v", r.TotalBytes, want)
	}
	if _, err := parsePan("pan: out of memory\n"); err == nil {
		t.Error("parsePan accepted output without a verdict")
	}
}
