//go:build race

package promela

// raceEnabled: the test binary runs under the race detector. SPIN and the
// pan programs it compiles are C, which the detector does not see, so the
// agreement test runs in the plain test run only.
const raceEnabled = true
