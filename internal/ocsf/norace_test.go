//go:build !race

package ocsf

const raceEnabled = false
