package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentwarden/warden/internal/zerotrust"
)

// runToken dispatches `warden token SUBCOMMAND`. Only hash exists so far;
// issue, verify and inspect follow with the token service.
func runToken(ctx context.Context, env *Env, args []string) (int, error) {
	if len(args) == 0 {
		return ExitUsage, errors.New("usage: warden token hash --params JSON")
	}
	switch args[0] {
	case "hash":
		return runTokenHash(ctx, env, args[1:])
	}
	return ExitUsage, fmt.Errorf("unknown subcommand %q (want hash)", args[0])
}

// runTokenHash prints the parameters_hash of a tool call's arguments: the
// lowercase hex SHA-256 of their RFC 8785 canonical form.
func runTokenHash(_ context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "token hash", "--params JSON|- [--canonical]")
	params := fs.String("params", "", "the tool call's `arguments` as JSON, or - to read them from stdin (absent: {})")
	canonical := fs.Bool("canonical", false, "also print the canonical form that was hashed")
	if code, err := parseFlags(fs, args); err != nil {
		return code, err
	}
	if fs.NArg() > 0 {
		return ExitUsage, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	in := []byte(*params)
	if *params == "-" {
		var err error
		if in, err = io.ReadAll(io.LimitReader(env.Stdin, 4<<20+1)); err != nil {
			return ExitUsage, err
		}
	}
	hash, form, err := zerotrust.ParamsHash(in)
	if err != nil {
		return ExitUsage, fmt.Errorf("--params: %v", strings.TrimPrefix(err.Error(), "jsonrpc -32700: "))
	}
	fmt.Fprintln(env.Stdout, hash)
	if *canonical {
		fmt.Fprintln(env.Stdout, string(form))
	}
	return ExitOK, nil
}
