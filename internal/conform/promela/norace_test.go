//go:build !race

package promela

const raceEnabled = false
