// Command warden makes agent protocols safe to use, and proves that they are.
// See `warden help`.
package main

import (
	"os"

	"github.com/agentwarden/warden/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], &cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}))
}
