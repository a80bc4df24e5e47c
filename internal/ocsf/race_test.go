//go:build race

package ocsf

// raceEnabled: the test binary runs under the race detector, which
// allocates where a plain build does not (sync.Pool drops what it is
// given at random), so allocation counts are not checked.
const raceEnabled = true
