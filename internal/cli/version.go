package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X github.com/agentwarden/warden/internal/cli.version=v1.2.3".
var version = ""

// Version returns warden's version: the linked-in one, else the module
// version from the build info, else "devel".
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

func runVersion(_ context.Context, env *Env, _ []string) (int, error) {
	fmt.Fprintf(env.Stdout, "warden %s %s/%s %s\n", Version(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	return ExitOK, nil
}
