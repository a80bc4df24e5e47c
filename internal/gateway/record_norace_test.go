//go:build !race

package gateway

const recordRace = false
