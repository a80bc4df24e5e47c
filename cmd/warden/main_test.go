package main

import (
	"os"
	"path/filepath"
	"testing"
)

// WARDEN_CPUPROFILE is off unless set; set, the process's CPU profile is
// in the file once the command returns.
func TestStartProfile(t *testing.T) {
	startProfile("")() // off: nothing to write, nothing to stop
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	stop := startProfile(path)
	for i := 0; i < 1e6; i++ {
		_ = i * i
	}
	stop()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() == 0 {
		t.Error("the profile is empty")
	}
	// A path that cannot be created leaves the command running, unprofiled.
	startProfile(filepath.Join(t.TempDir(), "no", "such", "dir", "cpu.pprof"))()
}
