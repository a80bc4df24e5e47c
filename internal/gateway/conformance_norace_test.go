//go:build integration && !race

package gateway_test

const raceEnabled = false
