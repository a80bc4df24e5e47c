package check

// Internals the external tests (package check_test, which may import
// promela) read.

// ReachableValues lists every reachable state of p's unreduced program, one
// value per variable, by the tests' own plain BFS (symmetry_test.go).
func ReachableValues(p *Program) [][]int { return reachable(p.Unreduced()) }

// LassoError says why r's trace is not a lasso of real steps of p, or is
// nil (liveness_test.go).
func LassoError(p *Program, r *Result) error { return lassoError(p, r) }
