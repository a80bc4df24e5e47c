package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentwarden/warden/internal/conform/catalog"
	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/ir"
	"github.com/agentwarden/warden/internal/conform/models"
	"github.com/agentwarden/warden/internal/conform/promela"
	"github.com/agentwarden/warden/internal/conform/report"
)

const conformUsage = "lint FILE|--builtin | check [--model NAME|--all] [--warden] [--out DIR] [--max-states N] | " +
	"emit --format promela --model NAME [--warden] | matrix [--format json|markdown] [--out DIR]"

// runConform is `warden conform`: the AgentConform pipeline on the
// built-in protocol models (or a model file for lint).
func runConform(ctx context.Context, env *Env, args []string) (int, error) {
	if len(args) == 0 {
		return ExitUsage, errors.New("usage: warden conform " + conformUsage)
	}
	switch args[0] {
	case "lint":
		return conformLint(ctx, env, args[1:])
	case "check":
		return conformCheck(ctx, env, args[1:])
	case "emit":
		return conformEmit(env, args[1:])
	case "matrix":
		return conformMatrix(ctx, env, args[1:])
	case "-h", "--help", "help":
		fmt.Fprintf(env.Stdout, "usage: warden conform %s\n", conformUsage)
		return ExitOK, nil
	}
	return ExitUsage, fmt.Errorf("unknown subcommand %q (want lint, check, emit or matrix)", args[0])
}

func conformLint(ctx context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "conform lint", "FILE|--builtin")
	builtin := fs.Bool("builtin", false, "lint every built-in model")
	if code, err := parseFlags(fs, args); err != nil {
		return code, err
	}
	cat, err := catalog.Default()
	if err != nil {
		return ExitInternal, err
	}
	type src struct {
		data []byte
		name string
	}
	var srcs []src
	switch {
	case *builtin && fs.NArg() == 0:
		for _, n := range models.Order {
			data, file, err := models.Source(n)
			if err != nil {
				return ExitInternal, err
			}
			srcs = append(srcs, src{data, file})
		}
	case !*builtin && fs.NArg() == 1:
		data, err := os.ReadFile(fs.Arg(0))
		if err != nil {
			return ExitConfig, err
		}
		srcs = append(srcs, src{data, fs.Arg(0)})
	default:
		return ExitUsage, errors.New("usage: warden conform lint FILE|--builtin")
	}
	code := ExitOK
	for _, s := range srcs {
		m, ds := ir.Load(s.data, s.name, ir.LintOptions{Clause: cat.Has})
		if m != nil && !ds.HasErrors() {
			ds = append(ds, coverage(ctx, m)...)
		}
		if len(ds) > 0 {
			fmt.Fprint(env.Stderr, ds.Format(s.data))
		}
		if ds.HasErrors() {
			code = ExitConfig
			fmt.Fprintf(env.Stdout, "%s: invalid\n", s.name)
			continue
		}
		fmt.Fprintf(env.Stdout, "%s: ok: model %s (%s), %d variables (%d bits), %d transitions, %d properties\n",
			s.name, m.Name, m.Protocol, len(m.Vars), m.StateBits(), len(m.Transitions), len(m.Properties))
	}
	return code, nil
}

// coverage explores the model (bounded) and warns about transitions that
// never fire: a guard that can never hold is a modelling error.
func coverage(ctx context.Context, m *ir.Model) ir.Diagnostics {
	p, err := check.Compile(m)
	if err != nil {
		return ir.Diagnostics{{Pos: ir.Pos{File: m.File, Line: 1, Col: 1}, Code: "state-width", Msg: err.Error()}}
	}
	r, err := check.Check(ctx, p, "", check.Options{MaxStates: 1_000_000})
	if err != nil || r.Status != check.Holds {
		return nil
	}
	var ds ir.Diagnostics
	for i, n := range r.Fired {
		if n == 0 {
			t := m.Transitions[i]
			ds = append(ds, ir.Diagnostic{Pos: t.Pos, Severity: ir.Warning, Code: "unreachable-transition",
				Msg: fmt.Sprintf("transition %q never fires in any of the %d reachable states", t.ID, r.States)})
		}
	}
	return ds
}

func selectModels(name string, all bool, guarded bool) ([]*ir.Model, error) {
	if all == (name != "") {
		return nil, errors.New("give exactly one of --model NAME and --all")
	}
	var ms []*ir.Model
	if all {
		var err error
		if ms, err = models.All(); err != nil {
			return nil, err
		}
	} else {
		m, err := models.Get(name)
		if err != nil {
			return nil, err
		}
		ms = []*ir.Model{m}
	}
	if guarded {
		for i := range ms {
			ms[i] = ms[i].Guarded()
		}
	}
	return ms, nil
}

func conformCheck(ctx context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "conform check", "[--model NAME|--all] [--warden] [--out DIR] [--max-states N]")
	name := fs.String("model", "", "the built-in model to check ("+strings.Join(models.Order, ", ")+")")
	all := fs.Bool("all", false, "check every built-in model")
	guarded := fs.Bool("warden", false, "check the models behind the warden gateway")
	out := fs.String("out", "", "write each counterexample as ITF JSON under `DIR`/traces/MODEL/PROPERTY.itf.json")
	maxStates := fs.Int("max-states", check.DefaultMaxStates, "stop a check after this many states")
	maxDepth := fs.Int("max-depth", 0, "stop a check at this depth (0: no bound)")
	workers := fs.Int("workers", 0, "parallel workers (0: GOMAXPROCS)")
	progress := fs.Bool("progress", false, "print a progress line (states/s, queue) to stderr")
	if code, err := parseNoArgs(fs, args); err != nil {
		return code, err
	}
	ms, err := selectModels(*name, *all, *guarded)
	if err != nil {
		return ExitUsage, err
	}
	cat, err := catalog.Default()
	if err != nil {
		return ExitInternal, err
	}
	opts := check.Options{MaxStates: *maxStates, MaxDepth: *maxDepth, Workers: *workers}
	if *progress {
		opts.Progress = func(p check.Progress) {
			fmt.Fprintf(env.Stderr, "\r%10d states  %8.0f states/s  depth %3d  queue %8d", p.States, p.Rate, p.Depth, p.Queue)
		}
	}
	violated, incomplete := 0, 0
	for _, m := range ms {
		prog, err := check.Compile(m)
		if err != nil {
			return ExitInternal, err
		}
		for _, p := range m.Properties {
			o := opts
			o.NoAdversary = true
			r, err := check.Check(ctx, prog, p.ID, o)
			if err != nil {
				return ExitInternal, err
			}
			adversary := false
			if r.Status == check.Holds {
				o.NoAdversary = false
				if r, err = check.Check(ctx, prog, p.ID, o); err != nil {
					return ExitInternal, err
				}
				adversary = r.Status == check.Violated
			}
			if *progress {
				fmt.Fprint(env.Stderr, "\r\033[K")
			}
			label, _ := report.Triage(r, m, cat)
			line := fmt.Sprintf("%-26s %-28s %-3s %-17s %-10s", m.Name, p.ID, p.Principle, p.Class, r.Status)
			switch r.Status {
			case check.Violated:
				violated++
				how := "protocol+environment"
				if adversary {
					how = "needs adversary"
				}
				line += fmt.Sprintf(" %-14s length %d (%s): %s", label, r.Trace.Len(), how, strings.Join(r.Trace.Actions(), " → "))
				if *out != "" {
					file := filepath.Join(*out, filepath.FromSlash(report.TracePath(m.Name, p.ID)))
					if err := writeTrace(file, r.Trace); err != nil {
						return ExitInternal, err
					}
					line += "\n    trace: " + file
				}
			case check.Holds:
				line += fmt.Sprintf(" %-14s %d states", label, r.States)
			default:
				incomplete++
				line += fmt.Sprintf(" stopped: %s after %d states", r.Reason, r.States)
			}
			fmt.Fprintln(env.Stdout, line)
		}
	}
	fmt.Fprintf(env.Stdout, "%d violated, %d incomplete\n", violated, incomplete)
	if err := ctx.Err(); err != nil {
		return ExitInternal, err
	}
	if violated > 0 {
		return ExitFindings, nil
	}
	return ExitOK, nil
}

func writeTrace(file string, t *check.Trace) error {
	data, err := t.ITF()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, data, 0o644)
}

func conformEmit(env *Env, args []string) (int, error) {
	fs := newFlags(env, "conform emit", "--format promela --model NAME [--warden]")
	format := fs.String("format", "promela", "output language: promela")
	name := fs.String("model", "", "the built-in model")
	guarded := fs.Bool("warden", false, "emit the variant behind the warden gateway")
	if code, err := parseNoArgs(fs, args); err != nil {
		return code, err
	}
	if *name == "" {
		return ExitUsage, errors.New("--model is required")
	}
	ms, err := selectModels(*name, false, *guarded)
	if err != nil {
		return ExitUsage, err
	}
	switch *format {
	case "promela":
		if err := promela.Emit(env.Stdout, ms[0]); err != nil {
			return ExitInternal, err
		}
		return ExitOK, nil
	case "tla":
		return ExitUsage, errors.New("--format tla is not built yet; use promela")
	}
	return ExitUsage, fmt.Errorf("unknown format %q (want promela)", *format)
}

func conformMatrix(ctx context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "conform matrix", "[--format json|markdown] [--out DIR]")
	format := fs.String("format", "markdown", "json or markdown")
	out := fs.String("out", "", "also write matrix.json, matrix.md and every counterexample under `DIR`")
	maxStates := fs.Int("max-states", check.DefaultMaxStates, "stop a check after this many states")
	if code, err := parseNoArgs(fs, args); err != nil {
		return code, err
	}
	if *format != "json" && *format != "markdown" {
		return ExitUsage, fmt.Errorf("unknown format %q (want json or markdown)", *format)
	}
	ms, err := models.All()
	if err != nil {
		return ExitInternal, err
	}
	cat, err := catalog.Default()
	if err != nil {
		return ExitInternal, err
	}
	res, err := report.Run(ctx, ms, cat, report.Options{Check: check.Options{MaxStates: *maxStates}})
	if err != nil {
		return ExitInternal, err
	}
	if *out != "" {
		for _, f := range res.Findings {
			if f.Trace != nil {
				if err := writeTrace(filepath.Join(*out, filepath.FromSlash(f.Counterexample)), f.Trace); err != nil {
					return ExitInternal, err
				}
			}
		}
		for name, write := range map[string]func(w *os.File) error{
			"matrix.json": func(w *os.File) error { return res.WriteJSON(w) },
			"matrix.md":   func(w *os.File) error { return res.WriteMarkdown(w) },
		} {
			f, err := os.Create(filepath.Join(*out, name))
			if err != nil {
				return ExitInternal, err
			}
			err = write(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return ExitInternal, err
			}
		}
	}
	if *format == "json" {
		err = res.WriteJSON(env.Stdout)
	} else {
		err = res.WriteMarkdown(env.Stdout)
	}
	if err != nil {
		return ExitInternal, err
	}
	return ExitOK, nil
}
