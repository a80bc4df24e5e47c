// Command warden makes agent protocols safe to use, and proves that they are.
// See `warden help`.
package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/agentwarden/warden/internal/cli"
)

func main() {
	stop := startProfile(os.Getenv("WARDEN_CPUPROFILE"))
	code := cli.Main(os.Args[1:], &cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
	stop()
	os.Exit(code)
}

// startProfile writes a CPU profile of this process to path until the
// returned function is called, for measuring warden as it runs in its own
// process (a gateway behind a load generator, as bench does). Off unless
// WARDEN_CPUPROFILE names a file; the profile is written when the command
// returns (a gateway stopped by SIGTERM or SIGINT, or whose stdin ended),
// not when the process is killed. A profile that cannot be started is
// reported on stderr and the command runs without it.
func startProfile(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "warden: WARDEN_CPUPROFILE: %v\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "warden: WARDEN_CPUPROFILE: %v\n", err)
		}
	}
}
