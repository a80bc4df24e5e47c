//go:build integration && race

package gateway_test

// raceEnabled: the test binary runs under the race detector, where the
// conformance matrix (minutes of suite processes) is skipped.
const raceEnabled = true
