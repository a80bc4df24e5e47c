package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentwarden/warden/internal/config"
)

func runConfig(_ context.Context, env *Env, args []string) (int, error) {
	if len(args) != 2 || args[0] != "check" {
		return ExitUsage, errors.New("usage: warden config check FILE")
	}
	cfg, err := config.Load(args[1])
	if err != nil {
		fmt.Fprintln(env.Stderr, err)
		return ExitConfig, nil
	}
	names := make([]string, len(cfg.Gateway.Upstreams))
	for i, u := range cfg.Gateway.Upstreams {
		names[i] = u.Name + " (" + u.Transport() + ")"
	}
	fmt.Fprintf(env.Stdout, "%s: valid; listener %s%s; upstreams: %s\n", args[1], cfg.Gateway.Listen.Addr,
		cfg.Gateway.Listen.Path, strings.Join(names, ", "))
	return ExitOK, nil
}
