package cli

import (
	"context"

	"github.com/agentwarden/warden/internal/demo"
	"github.com/agentwarden/warden/internal/demoserver"
)

func runDemo(ctx context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "demo", "[--verbose]")
	verbose := fs.Bool("verbose", false, "also print the gateway's log")
	if code, err := parseFlags(fs, args); err != nil {
		return code, err
	}
	res, err := demo.Run(ctx, demo.Options{Out: env.Stdout, Verbose: *verbose})
	if err != nil {
		return ExitInternal, err
	}
	if len(res.Failures) > 0 {
		return ExitInternal, nil
	}
	return ExitOK, nil
}

func runDemoServer(ctx context.Context, env *Env, args []string) (int, error) {
	return demoserver.Main(ctx, args, env.Stdin, env.Stdout, env.Stderr), nil
}
