// Package cli is warden's command line. Every command is a function that
// takes its arguments and an Env and returns an exit code and an error, so
// tests call commands exactly as a user runs them.
//
//	warden help | version | gateway | config check | demo | demo-server
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// Exit codes. `warden help` lists them; scripts may rely on them.
const (
	ExitOK       = 0 // success
	ExitFindings = 1 // the command ran and found something: an exploited target, a violated property
	ExitUsage    = 2 // bad command line
	ExitConfig   = 3 // the configuration file is invalid
	ExitUpstream = 4 // an upstream or the listener could not be started
	ExitInternal = 5 // an unexpected failure inside warden
	// ExitPartial is `warden attack run`'s verdict partial: under
	// correlation "all", some indicators matched but not all. It is kept
	// apart from ExitFindings (exploited) so that CI can tell a finished
	// attack from a half-finished one. `warden audit verify --key` uses it
	// for a log that is intact but ends in records no checkpoint attests.
	ExitPartial = 6
	// ExitDrained is warden gateway's stop (SIGTERM, SIGINT) when calls
	// were still in flight after gateway.limits.drain_timeout: they were
	// answered with -32035, rule shutdown. A stop with none left exits 0.
	ExitDrained = 7
	// ExitLocalAction and ExitBoundaryBreach are `warden attack run
	// --tier-exit-codes`'s exploited verdicts whose highest matched tier
	// is local_action or boundary_breach (1 stays for ingested or none),
	// so that CI can tell how far an attack got.
	ExitLocalAction    = 8
	ExitBoundaryBreach = 9
)

var exitCodes = []struct {
	code int
	name string
	text string
}{
	{ExitOK, "ok", "success"},
	{ExitFindings, "findings", "ran, and found something (an exploited target, a violated property, a broken audit chain, a token that does not verify)"},
	{ExitUsage, "usage", "bad command line"},
	{ExitConfig, "config", "the configuration, an OATF document or a protocol model is invalid; warden conform replay: the target cannot be set up"},
	{ExitUpstream, "upstream", "an upstream, a store, the listener or the admin API could not be reached or started; warden attack run: a target was never really exercised (verdict error)"},
	{ExitInternal, "internal", "an unexpected failure inside warden"},
	{ExitPartial, "partial", "warden attack run: some of an attack's indicators matched, not all; warden audit verify --key: intact, but records after the last checkpoint are unattested; warden conform: a check stopped at its state budget (incomplete) or a replay probe got no verdict (inconclusive)"},
	{ExitDrained, "drained", "warden gateway stopped with calls in flight past the drain time (answered with -32035)"},
	{ExitLocalAction, "local-action", "warden attack run --tier-exit-codes: exploited, up to tier local_action"},
	{ExitBoundaryBreach, "boundary-breach", "warden attack run --tier-exit-codes: exploited, up to tier boundary_breach"},
}

// Env is what a command may touch of the outside world.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
}

// command is one subcommand.
type command struct {
	name   string
	usage  string // one line: arguments
	short  string // one line: what it does
	hidden bool
	run    func(ctx context.Context, env *Env, args []string) (int, error)
}

func commands() []command {
	return []command{
		{name: "gateway", usage: "[--config FILE] [--listen ADDR] [--check-store] | --stdio [flags] -- CMD [ARGS...]",
			short: "relay MCP clients to MCP servers through the security pipeline", run: runGateway},
		{name: "demo", usage: "[--verbose]",
			short: "run the embedded demo: a demo MCP server behind the gateway, and a scripted client", run: runDemo},
		{name: "config", usage: "check FILE", short: "validate a configuration file and report every problem", run: runConfig},
		{name: "token", usage: "hash|issue|verify|inspect|sign|revoke [flags]",
			short: "zero-trust tokens: parameters_hash, and single-use tokens bound to one call", run: runToken},
		{name: "keys", usage: "generate|list|jwks|client|api-key [flags]", short: "the signing keys of zero-trust tokens", run: runKeys},
		{name: "approve", usage: "list | show ID | allow ID | deny ID [--reason TEXT]",
			short: "decide on tool calls the gateway holds for approval", run: runApprove},
		{name: "audit", usage: "verify FILE [--head SEQ:HASH] | export FILE [--format jsonl|ocsf]",
			short: "check the gateway's hash-chained audit log, or export it", run: runAudit},
		{name: "attack", usage: "validate [--library-compat] FILE... | normalize [--library-compat] FILE | list [--library DIR] | run [flags] DOC|--library DIR",
			short: "OATF attack documents: validate, normalize, list a library, run attacks against targets", run: runAttack},
		{name: "conform", usage: "lint FILE|--builtin | check [--model NAME|--all] [--warden] [--out DIR] | emit --format promela|tla --model NAME | replay --target TARGET [--warden] | matrix [--format json|markdown|html] [--against TARGET]",
			short: "model-check agent protocols against the AASM principles (AgentConform)", run: runConform},
		{name: "manifest", usage: "keygen --out PREFIX | make --upstream NAME (--from-url URL | -- CMD) | sign --key KEY.jwk FILE | verify FILE --key PUB.jwk | pins [approve|reject] --store FILE ...",
			short: "signed tool manifests and the tool pin store (rug-pull protection, AASM P2)", run: runManifest},
		{name: "version", short: "print the version", run: runVersion},
		{name: "help", usage: "[COMMAND]", short: "show help", run: runHelp},
		{name: "demo-server", usage: "[--root DIR] [--http ADDR] [--stateless]",
			short: "run the demo MCP server alone (stdio by default)", hidden: true, run: runDemoServer},
	}
}

// Main runs warden with args (without the program name) and returns the
// process exit code.
func Main(args []string, env *Env) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, args, env)
}

// Run is Main with a caller-supplied context, for tests.
func Run(ctx context.Context, args []string, env *Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	if len(args) == 0 {
		printHelp(env.Stderr)
		return ExitUsage
	}
	name := args[0]
	switch name {
	case "-h", "--help", "-help":
		name = "help"
	case "--version":
		name = "version"
	}
	for _, c := range commands() {
		if c.name != name {
			continue
		}
		code, err := c.run(ctx, env, args[1:])
		if err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return ExitOK
			}
			fmt.Fprintf(env.Stderr, "warden %s: %v\n", c.name, err)
		}
		return code
	}
	fmt.Fprintf(env.Stderr, "warden: unknown command %q\n\n", name)
	printHelp(env.Stderr)
	return ExitUsage
}

func runHelp(_ context.Context, env *Env, args []string) (int, error) {
	if len(args) == 0 {
		printHelp(env.Stdout)
		return ExitOK, nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			fmt.Fprintf(env.Stdout, "usage: warden %s %s\n\n%s\n", c.name, c.usage, c.short)
			if h, ok := commandHelp[c.name]; ok {
				fmt.Fprintf(env.Stdout, "\n%s", h)
			}
			return ExitOK, nil
		}
	}
	return ExitUsage, fmt.Errorf("no command %q", args[0])
}

func printHelp(w io.Writer) {
	fmt.Fprintf(w, "warden makes agent protocols safe to use, and proves that they are.\n\n")
	fmt.Fprintf(w, "usage: warden COMMAND [ARGS]\n\ncommands:\n")
	for _, c := range commands() {
		if !c.hidden {
			fmt.Fprintf(w, "  %-9s %s\n", c.name, c.short)
		}
	}
	fmt.Fprintf(w, "\nRun 'warden help COMMAND' for a command's flags.\n\nexit codes:\n")
	codes := append(exitCodes[:0:0], exitCodes...)
	sort.Slice(codes, func(i, j int) bool { return codes[i].code < codes[j].code })
	for _, c := range codes {
		fmt.Fprintf(w, "  %d  %-9s %s\n", c.code, c.name, c.text)
	}
	fmt.Fprintf(w, "\nQuick start:\n  warden demo                       see the gateway work on an embedded server\n"+
		"  warden gateway --stdio -- CMD     wrap a stdio MCP server for any desktop client\n"+
		"  warden gateway --config FILE      serve upstreams on a loopback listener\n")
	fmt.Fprintf(w, "\nenvironment:\n"+
		"  WARDEN_DATA_DIR=DIR     the default of every --data-dir, else the per-user data directory\n"+
		"  WARDEN_CPUPROFILE=FILE  write a Go CPU profile of this warden process to FILE until the\n"+
		"                          command returns (off by default; a killed process writes none)\n")
}

// newFlags returns a flag set that reports errors instead of exiting, and
// prints its usage to env.Stderr.
func newFlags(env *Env, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet("warden "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "usage: warden %s %s\n", name, usage)
		if fs.NFlag() >= 0 {
			fmt.Fprintln(env.Stderr, "\nflags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseFlags parses args and maps a flag error to ExitUsage.
func parseFlags(fs *flag.FlagSet, args []string) (int, error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK, err
		}
		return ExitUsage, errUsageShown
	}
	return ExitOK, nil
}

// parseNoArgs is parseFlags for commands that take flags only: a stray
// argument is a usage error.
func parseNoArgs(fs *flag.FlagSet, args []string) (int, error) {
	if code, err := parseFlags(fs, args); err != nil {
		return code, err
	}
	if fs.NArg() > 0 {
		return ExitUsage, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return ExitOK, nil
}

// errUsageShown marks an error whose message the flag package already printed.
var errUsageShown = errors.New("invalid arguments")

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }
