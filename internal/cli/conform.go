package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/conform/catalog"
	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/ir"
	"github.com/agentwarden/warden/internal/conform/models"
	"github.com/agentwarden/warden/internal/conform/promela"
	"github.com/agentwarden/warden/internal/conform/replay"
	"github.com/agentwarden/warden/internal/conform/report"
	"github.com/agentwarden/warden/internal/conform/tla"
	"github.com/agentwarden/warden/internal/telemetry"
)

const conformUsage = "lint FILE|DIR|--model NAME|FILE|DIR|--builtin [-D NAME=N] | check [--model NAME|FILE|DIR|--all] [-D NAME=N] [--warden] [--out DIR] [--max-states N] [--symmetry=false] [--store exact|hashcompact|bitstate] | " +
	"emit --format promela|tla --model NAME|FILE|DIR [-D NAME=N] [--warden] [--out DIR] [--tlc-jar JAR] | " +
	"replay --target TARGET [--profile REV] [--warden] [--format text|json] [--otlp URL] | " +
	"matrix [--model NAME|FILE|DIR] [-D NAME=N] [--format json|markdown|html] [--out DIR] [--store MODE] [--against TARGET] [--otlp URL]"

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
		return conformEmit(ctx, env, args[1:])
	case "matrix":
		return conformMatrix(ctx, env, args[1:])
	case "replay":
		return conformReplay(ctx, env, args[1:])
	case "-h", "--help", "help":
		fmt.Fprintf(env.Stdout, "usage: warden conform %s\n", conformUsage)
		return ExitOK, nil
	}
	return ExitUsage, fmt.Errorf("unknown subcommand %q (want lint, check, emit, replay or matrix)", args[0])
}

func conformLint(ctx context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "conform lint", "FILE|DIR|--model NAME|FILE|DIR|--builtin")
	builtin := fs.Bool("builtin", false, "lint every built-in model")
	model := fs.String("model", "", "lint one model: "+modelHelp)
	defs := addDefines(fs)
	// Flags may follow the file (lint model.yaml -D AGENTS=3).
	var files []string
	for rest := args; ; {
		if code, err := parseFlags(fs, rest); err != nil {
			return code, err
		}
		if fs.NArg() == 0 {
			break
		}
		files, rest = append(files, fs.Arg(0)), fs.Args()[1:]
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
	case *builtin && len(files) == 0:
		for _, n := range models.Order {
			data, file, err := models.Source(n)
			if err != nil {
				return ExitInternal, err
			}
			srcs = append(srcs, src{data, file})
		}
	case !*builtin && *model != "" && isBuiltin(*model) && len(files) == 0:
		data, file, err := models.Source(strings.TrimSuffix(*model, "+warden"))
		if err != nil {
			return ExitInternal, err
		}
		srcs = append(srcs, src{data, file})
	case !*builtin && (len(files) == 1) != (*model != "") && len(files) <= 1:
		path := *model
		if path == "" {
			path = files[0]
		}
		files, err := modelFiles(path)
		if err != nil {
			return ExitConfig, err
		}
		for _, file := range files {
			data, err := readModelFile(file)
			if err != nil {
				return ExitConfig, err
			}
			srcs = append(srcs, src{data, file})
		}
	default:
		return ExitUsage, errors.New("usage: warden conform lint FILE|DIR|--model NAME|FILE|DIR|--builtin")
	}
	code := ExitOK
	for _, s := range srcs {
		m, ds := ir.LoadWith(s.data, s.name, ir.ParseOptions{Defines: defs}, ir.LintOptions{Clause: cat.Has})
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
		fmt.Fprintf(env.Stdout, "%s: ok: model %s (%s), %d variables (%d bits), %d transitions, %d properties%s\n",
			s.name, m.Name, m.Protocol, len(m.Vars), m.StateBits(), len(m.Transitions), len(m.Properties), symmetricDomains(m))
	}
	return code, nil
}

// symmetricDomains lists m's symmetric domains for lint's summary line:
// ", symmetric: Agent (3 elements)"; "" when there is none.
func symmetricDomains(m *ir.Model) string {
	var parts []string
	for _, d := range m.SymmetricDomains() {
		parts = append(parts, fmt.Sprintf("%s (%d elements)", d.Name, d.Type.Size()))
	}
	if parts == nil {
		return ""
	}
	return ", symmetric: " + strings.Join(parts, ", ")
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
	// The instances of a transition with parameters share its position:
	// it is unreachable only when none of them fires.
	fired := map[ir.Pos]int{}
	for i, n := range r.Fired {
		fired[m.Transitions[i].Pos] += n
	}
	for i := range r.Fired {
		if t := m.Transitions[i]; fired[t.Pos] == 0 {
			fired[t.Pos] = -1 // reported
			ds = append(ds, ir.Diagnostic{Pos: t.Pos, Severity: ir.Warning, Code: "unreachable-transition",
				Msg: fmt.Sprintf("transition %q never fires in any of the %d reachable states", t.ID, r.States)})
		}
	}
	vs, err := check.Vacuity(ctx, p, 1_000_000)
	if err != nil {
		return ds
	}
	for _, v := range vs {
		ds = append(ds, ir.Diagnostic{Pos: v.Pos, Severity: ir.Warning, Code: "vacuous-property",
			Msg: fmt.Sprintf("property %q holds vacuously: %s", v.Property, v.Why)})
	}
	return ds
}

// defines is the repeatable -D NAME=N flag: values for a model's constants.
type defines map[string]int

func (d defines) String() string {
	var parts []string
	for k, v := range d {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func (d defines) Set(s string) error {
	name, val, ok := strings.Cut(s, "=")
	n, err := strconv.Atoi(val)
	if !ok || err != nil || !ir.ValidName(name) {
		return fmt.Errorf("want NAME=INTEGER with NAME a constant's name, not %q", s)
	}
	if _, dup := d[name]; dup {
		return fmt.Errorf("%s is given twice", name)
	}
	d[name] = n
	return nil
}

func addDefines(fs *flag.FlagSet) defines {
	d := defines{}
	fs.Var(d, "D", "set a model constant: `NAME=N` (repeatable), e.g. -D AGENTS=3")
	return d
}

// modelHelp says what --model takes.
var modelHelp = "a built-in model (" + strings.Join(models.Order, ", ") + "; NAME+warden behind the gateway), " +
	"a model `FILE`, or a directory of *.yaml model files"

// selectModels returns the models --model or --all name: a built-in
// model's name (NAME+warden for its variant behind the gateway), else a
// model file, else a directory whose *.yaml and *.yml files are models.
// A model file's diagnostics go to env.Stderr (file:line:col with a
// caret); one with errors makes the exit code ExitConfig. User models are
// linted without the clause catalog: their source_refs may cite their own
// documents (warden conform lint FILE checks them against the catalog).
func selectModels(env *Env, name string, all bool, guarded bool, defs defines) ([]*ir.Model, int, error) {
	if all == (name != "") {
		return nil, ExitUsage, errors.New("give exactly one of --model NAME|FILE|DIR and --all")
	}
	var ms []*ir.Model
	switch {
	case len(defs) > 0 && (all || isBuiltin(name)):
		names := models.Order
		if !all {
			names = []string{strings.TrimSuffix(name, "+warden")}
			guarded = guarded || strings.HasSuffix(name, "+warden")
		}
		var code int
		var err error
		if ms, code, err = loadBuiltins(env, names, defs); err != nil {
			return nil, code, err
		}
	case all:
		var err error
		if ms, err = models.All(); err != nil {
			return nil, ExitInternal, err
		}
	case isBuiltin(name):
		m, err := models.Get(name)
		if err != nil {
			return nil, ExitInternal, err
		}
		ms = []*ir.Model{m}
	default:
		var code int
		var err error
		if ms, code, err = loadModelFiles(env, name, defs); err != nil {
			return nil, code, err
		}
	}
	if guarded {
		for i := range ms {
			ms[i] = ms[i].Guarded()
		}
	}
	return ms, ExitOK, nil
}

func isBuiltin(name string) bool {
	base, _ := strings.CutSuffix(name, "+warden")
	return slices.Contains(models.Order, base)
}

// loadModelFiles reads the model file path, or every *.yaml and *.yml file
// of the directory path, in name order.
// loadBuiltins reads built-in models again with constant overrides.
func loadBuiltins(env *Env, names []string, defs defines) ([]*ir.Model, int, error) {
	cat, err := catalog.Default()
	if err != nil {
		return nil, ExitInternal, err
	}
	var ms []*ir.Model
	for _, n := range names {
		data, file, err := models.Source(n)
		if err != nil {
			return nil, ExitInternal, err
		}
		m, ds := ir.LoadWith(data, file, ir.ParseOptions{Defines: defs}, ir.LintOptions{Clause: cat.Has})
		if ds.HasErrors() {
			fmt.Fprint(env.Stderr, ds.Format(data))
			return nil, ExitConfig, fmt.Errorf("built-in model %s with -D %s has errors", n, defs)
		}
		ms = append(ms, m)
	}
	return ms, ExitOK, nil
}

func loadModelFiles(env *Env, path string, defs defines) ([]*ir.Model, int, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, ExitUsage, fmt.Errorf("--model %s: not a built-in model (%s) and not a file: %w",
			path, strings.Join(models.Order, ", "), err)
	}
	files, err := modelFiles(path)
	if err != nil {
		return nil, ExitConfig, err
	}
	var ms []*ir.Model
	bad := 0
	names := map[string]string{}
	for _, file := range files {
		data, err := readModelFile(file)
		if err != nil {
			return nil, ExitConfig, err
		}
		m, ds := ir.LoadWith(data, file, ir.ParseOptions{Defines: defs}, ir.LintOptions{})
		if len(ds) > 0 {
			fmt.Fprint(env.Stderr, ds.Format(data))
		}
		if m == nil || ds.HasErrors() {
			bad++
			continue
		}
		if prev, dup := names[m.Name]; dup {
			fmt.Fprintf(env.Stderr, "%s:1:1: error: model %q is also defined in %s [duplicate-id]\n", file, m.Name, prev)
			bad++
			continue
		}
		names[m.Name] = file
		ms = append(ms, m)
	}
	if bad > 0 {
		return nil, ExitConfig, fmt.Errorf("%d of %d model files have errors", bad, len(files))
	}
	return ms, ExitOK, nil
}

// modelFiles is path when it is a file, else the *.yaml and *.yml files
// of the directory path, in name order; a directory without any is an
// error.
func modelFiles(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
			files = append(files, filepath.Join(path, e.Name()))
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: the directory has no *.yaml or *.yml model files", path)
	}
	return files, nil
}

// readModelFile reads a model file, but no more than one byte past
// ir.MaxFileBytes: the parser reports a longer file as too large, and a
// huge file (or /dev/zero) is not read into memory first.
func readModelFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, ir.MaxFileBytes+1))
}

// progressByDefault reports whether conform check shows its progress line
// without --progress: when stderr is a terminal.
func progressByDefault(stderr io.Writer) bool {
	f, ok := stderr.(interface{ Stat() (os.FileInfo, error) }) // *os.File
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && isTerminal(fi)
}

// isTerminal reports whether fi describes a terminal: a character device
// (golang.org/x/term is not a dependency; /dev/null counts too, harmlessly).
func isTerminal(fi os.FileInfo) bool { return fi.Mode()&os.ModeCharDevice != 0 }

func conformCheck(ctx context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "conform check", "[--model NAME|--all] [--warden] [--out DIR] [--max-states N]")
	name := fs.String("model", "", "what to check: "+modelHelp)
	defs := addDefines(fs)
	all := fs.Bool("all", false, "check every built-in model")
	guarded := fs.Bool("warden", false, "check the models behind the warden gateway")
	out := fs.String("out", "", "write each counterexample as ITF JSON under `DIR`/traces/MODEL/PROPERTY.itf.json")
	maxStates := fs.Int("max-states", check.DefaultMaxStates, "stop a check after this many states")
	maxDepth := fs.Int("max-depth", 0, "stop a check at this depth (0: no bound)")
	workers := fs.Int("workers", 0, "parallel workers (0: GOMAXPROCS)")
	progress := fs.Bool("progress", progressByDefault(env.Stderr),
		"print a progress line (states/s, queue) to stderr; on by default when stderr is a terminal")
	store := addStoreFlags(fs)
	symmetry := fs.Bool("symmetry", true, "store one state per orbit of the permutations of the domains a model declares "+
		"symmetric (state counts are then orbits; leads-to properties are checked without it); --symmetry=false checks every state")
	if code, err := parseNoArgs(fs, args); err != nil {
		return code, err
	}
	ms, code, err := selectModels(env, *name, *all, *guarded, defs)
	if err != nil {
		return code, err
	}
	cat, err := catalog.Default()
	if err != nil {
		return ExitInternal, err
	}
	opts := check.Options{MaxStates: *maxStates, MaxDepth: *maxDepth, Workers: *workers}
	if err := store.apply(&opts); err != nil {
		return ExitUsage, err
	}
	if *progress {
		opts.Progress = func(p check.Progress) {
			fmt.Fprintf(env.Stderr, "\r%10d states  %8.0f states/s  depth %3d  queue %8d", p.States, p.Rate, p.Depth, p.Queue)
		}
	}
	violated, incomplete, partial := 0, 0, 0
	for _, m := range ms {
		prog, err := check.Compile(m)
		if err != nil {
			// What Compile refuses is the user's model (an index outside
			// its domain, a state too wide), not a failure inside warden.
			return ExitConfig, err
		}
		if *symmetry && len(m.SymmetricDomains()) > 0 {
			var note string
			prog, note = prog.Reduced()
			fmt.Fprintf(env.Stdout, "%s: %s\n", m.Name, note)
		}
		for _, p := range m.Properties {
			o := opts
			o.NoAdversary = true
			r, err := check.Verify(ctx, prog, p.ID, o)
			if err != nil {
				return ExitInternal, err
			}
			adversary := false
			if r.Status == check.Holds {
				o.NoAdversary = false
				if r, err = check.Verify(ctx, prog, p.ID, o); err != nil {
					return ExitInternal, err
				}
				adversary = r.Status == check.Violated
			}
			if *progress {
				fmt.Fprint(env.Stderr, "\r\033[K")
			}
			label, _ := report.Triage(r, m, cat)
			line := fmt.Sprintf("%-26s %-28s %-3s %-17s %-10s", m.Name, p.ID, p.Principle, p.Class, r.Label())
			if r.Partial() {
				partial++
			}
			switch r.Status {
			case check.Violated:
				violated++
				how := "protocol+environment"
				if adversary {
					how = "needs adversary"
				}
				if c := r.Trace.Cycle; c != nil {
					// A lasso: the prefix, then the cycle that repeats forever.
					line += fmt.Sprintf(" %-14s lasso, prefix %d + cycle %d (%s): %s ⟲ %s", label, c.Start,
						len(r.Trace.CycleActions()), how, strings.Join(r.Trace.Actions()[:c.Start], " → "),
						strings.Join(r.Trace.CycleActions(), " → "))
				} else {
					line += fmt.Sprintf(" %-14s length %d (%s): %s", label, r.Trace.Len(), how, strings.Join(r.Trace.Actions(), " → "))
				}
				if *out != "" {
					file := filepath.Join(*out, filepath.FromSlash(report.TracePath(m.Name, p.ID)))
					if err := writeTrace(file, r.Trace); err != nil {
						return ExitInternal, err
					}
					line += "\n    trace: " + file
				}
			case check.Holds:
				line += fmt.Sprintf(" %-14s %d states", label, r.States)
				if r.Coverage == nil && opts.Store != check.StoreExact {
					line += " (leads-to: checked with the exact store)"
				}
				if n := prog.Permutations(); n > 0 && p.Kind == ir.Invariant {
					line += fmt.Sprintf(" (orbits; symmetry: %d permutations)", n)
				} else if n > 0 {
					line += " (leads-to: checked without symmetry)"
				}
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
	if incomplete > 0 {
		fmt.Fprintf(env.Stdout, "incomplete: %d of the checks stopped at a budget before the state space was exhausted; "+
			"their properties are neither shown to hold nor violated (raise --max-states or --max-depth)\n", incomplete)
	}
	if violated > 0 {
		return ExitFindings, nil
	}
	if incomplete > 0 {
		return ExitPartial, nil
	}
	if partial > 0 {
		fmt.Fprintf(env.Stdout, "partial coverage: %s only as far as a %s search saw, which may miss states; "+
			"that is not a proof (rerun with --store exact for one)\n", holdCount(partial), opts.Store)
		return ExitPartial, nil
	}
	return ExitOK, nil
}

// storeFlags are --store and its bitstate parameters, shared by check and
// matrix.
type storeFlags struct {
	fs           *flag.FlagSet
	store        *string
	bits, hashes *int
}

func addStoreFlags(fs *flag.FlagSet) *storeFlags {
	return &storeFlags{
		fs: fs,
		store: fs.String("store", "exact", "how visited states are kept: exact (a hold is a proof), hashcompact (a 64-bit "+
			"fingerprint per state) or bitstate (a fixed bit array); the last two may miss states, so their holds are "+
			"labelled partial coverage and exit 6"),
		bits: fs.Int("bitstate-bits", check.DefaultBitstateLog2, "with --store bitstate: an array of 2^`W` bits (as pan -w), 10 to 40"),
		hashes: fs.Int("bitstate-hashes", check.DefaultBitstateHashes,
			"with --store bitstate: `K` bits set per state (as pan -k), 1 to 16"),
	}
}

// apply checks the flags and sets opts' store, naming the flag at fault.
func (f *storeFlags) apply(opts *check.Options) error {
	mode, err := check.ParseStore(*f.store)
	if err != nil {
		return fmt.Errorf("--store: %w", err)
	}
	opts.Store = mode
	if mode != check.StoreBitstate {
		var set error
		f.fs.Visit(func(fl *flag.Flag) {
			if fl.Name == "bitstate-bits" || fl.Name == "bitstate-hashes" {
				set = fmt.Errorf("--%s applies only to --store bitstate, not %s", fl.Name, mode)
			}
		})
		return set
	}
	if *f.bits < check.MinBitstateLog2 || *f.bits > check.MaxBitstateLog2 {
		return fmt.Errorf("--bitstate-bits %d: want %d to %d (an array of 2^%d to 2^%d bits)", *f.bits,
			check.MinBitstateLog2, check.MaxBitstateLog2, check.MinBitstateLog2, check.MaxBitstateLog2)
	}
	if *f.hashes < 1 || *f.hashes > check.MaxBitstateHash {
		return fmt.Errorf("--bitstate-hashes %d: want 1 to %d", *f.hashes, check.MaxBitstateHash)
	}
	opts.BitstateLog2, opts.BitstateHashes = *f.bits, *f.hashes
	return opts.Validate()
}

// holdCount is "1 property holds" or "N properties hold".
func holdCount(n int) string {
	if n == 1 {
		return "1 property holds"
	}
	return fmt.Sprintf("%d properties hold", n)
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

func conformEmit(ctx context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "conform emit", "--format promela|tla --model NAME|FILE|DIR [--warden] [--out DIR] [--tlc-jar JAR]")
	format := fs.String("format", "promela", "output language: promela or tla")
	name := fs.String("model", "", "what to print: "+modelHelp)
	defs := addDefines(fs)
	guarded := fs.Bool("warden", false, "emit the variant behind the warden gateway")
	out := fs.String("out", "", "write MODULE.pml, or MODULE.tla and one MC_<PROPERTY>.cfg per invariant, into `DIR` "+
		"(one subdirectory per model when --model names several)")
	jar := fs.String("tlc-jar", "", "tla: run TLC from this tla2tools.jar on every invariant (needs java; default $"+tla.EnvJar+")")
	if code, err := parseNoArgs(fs, args); err != nil {
		return code, err
	}
	if *name == "" {
		return ExitUsage, errors.New("--model is required")
	}
	if *format != "promela" && *format != "tla" {
		return ExitUsage, fmt.Errorf("unknown format %q (want promela or tla)", *format)
	}
	ms, code, err := selectModels(env, *name, false, *guarded, defs)
	if err != nil {
		return code, err
	}
	if len(ms) > 1 && *out == "" {
		return ExitUsage, fmt.Errorf("--model %s holds %d models: give --out DIR to write each into its own subdirectory", *name, len(ms))
	}
	if *format == "tla" && *jar == "" && env.Getenv != nil {
		*jar = env.Getenv(tla.EnvJar)
	}
	code = ExitOK
	for _, m := range ms {
		dir := *out
		if len(ms) > 1 {
			dir = filepath.Join(*out, tla.ModuleName(m))
		}
		c, err := emitOne(ctx, env, m, *format, dir, *jar)
		if err != nil {
			return c, err
		}
		code = max(code, c)
	}
	return code, nil
}

// emitOne prints m in format to stdout, or writes it into dir, and runs
// TLC when jar is set.
func emitOne(ctx context.Context, env *Env, m *ir.Model, format, dir, jar string) (int, error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return ExitInternal, err
		}
	}
	if format == "promela" {
		if dir == "" {
			if err := promela.Emit(env.Stdout, m); err != nil {
				return ExitInternal, err
			}
			return ExitOK, nil
		}
		var b strings.Builder
		if err := promela.Emit(&b, m); err != nil {
			return ExitInternal, err
		}
		path := filepath.Join(dir, tla.ModuleName(m)+".pml")
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			return ExitInternal, err
		}
		fmt.Fprintf(env.Stdout, "wrote %s\n", path)
		return ExitOK, nil
	}
	if dir == "" && jar == "" {
		if err := tla.Emit(env.Stdout, m); err != nil {
			return ExitInternal, err
		}
		for _, p := range m.Properties {
			cfg, err := tla.Config(m, p.ID, false)
			if err != nil {
				return ExitInternal, err
			}
			fmt.Fprintf(env.Stdout, "\n\\* ---- %s ----\n%s", tla.ConfigName(p.ID), cfg)
		}
		return ExitOK, nil
	}
	written := dir != ""
	if !written {
		var err error
		if dir, err = os.MkdirTemp("", "warden-tla-"); err != nil {
			return ExitInternal, err
		}
		defer os.RemoveAll(dir)
	}
	path, err := tla.WriteFiles(dir, m, false)
	if err != nil {
		return ExitInternal, err
	}
	if written {
		fmt.Fprintf(env.Stdout, "wrote %s and %d configurations\n", path, len(m.Properties))
	}
	if jar == "" {
		return ExitOK, nil
	}
	return runTLC(ctx, env, jar, dir, m)
}

// runTLC runs TLC on every invariant and compares its verdict with the Go
// checker's. Exit 1 when they disagree or TLC fails.
func runTLC(ctx context.Context, env *Env, jar, dir string, m *ir.Model) (int, error) {
	rs, err := tla.RunTLC(ctx, jar, dir, m, false)
	if err != nil {
		return ExitInternal, err
	}
	prog, err := check.Compile(m)
	if err != nil {
		return ExitInternal, err
	}
	code := ExitOK
	for _, r := range rs {
		want, err := check.Verify(ctx, prog, r.Property, check.Options{})
		if err != nil {
			return ExitInternal, err
		}
		agree := "agrees"
		if r.Status != string(want.Status) {
			agree, code = "DISAGREES with the Go checker ("+string(want.Status)+")", ExitFindings
		}
		fmt.Fprintf(env.Stdout, "%-28s TLC %-8s states %d  %s\n", r.Property, r.Status, r.States, agree)
		if r.Status == "error" {
			fmt.Fprintln(env.Stderr, r.Output)
		}
	}
	return code, nil
}

// replayFlags are the flags that name and complete a replay target, and
// say where its telemetry goes.
type replayFlags struct {
	profile, tool, sensitive, leak, credentialEnv, cardKeys, otlp *string
	timeout                                                       *time.Duration
}

func addReplayFlags(fs *flag.FlagSet) replayFlags {
	return replayFlags{
		profile:   fs.String("profile", "", "MCP revision (2025-06-18, 2025-11-25, 2026-07-28) or A2A version (1.0, 0.3)"),
		tool:      fs.String("tool", "echo", "MCP: a harmless tool any session may call (the lifecycle probe)"),
		sensitive: fs.String("sensitive-tool", "", "MCP: the consequential tool called without credential or consent (default: --tool)"),
		leak:      fs.String("leak-tool", "", "MCP: a tool that reads the server's environment, where the directive of the prompt-integrity probe is planted (default: one named like *env*)"),
		credentialEnv: fs.String("credential-env", "", "MCP over stdio: the environment `VARIABLE` the server takes its credential from; "+
			"passed from warden's environment, and withheld by the identity probe (without it that probe is unrealisable over stdio)"),
		cardKeys: fs.String("card-keys", "", "A2A: a JWKS `FILE` of the keys that sign the agent's card; "+
			"behind warden the card must then carry a valid signature (default: warden pins the first card it sees)"),
		timeout: fs.Duration("timeout", 10*time.Second, "wait this long for each answer"),
		otlp: fs.String("otlp", "", "send a span per probe and per message sent and received (AITF and OpenTelemetry names) "+
			"by OTLP over HTTP to this `URL`, e.g. http://127.0.0.1:4318"),
	}
}

// spans returns the Recorder of --otlp, nil without it, and a function that
// flushes and stops its exporter (it waits up to 5 s for the receiver).
func (rf replayFlags) spans(ctx context.Context) (*telemetry.Recorder, func(), error) {
	if *rf.otlp == "" {
		return nil, func() {}, nil
	}
	exp, err := telemetry.NewSpanExporter(ctx, telemetry.SpanExport{Kind: telemetry.SpanExporterOTLP, Endpoint: *rf.otlp})
	if err != nil {
		return nil, nil, fmt.Errorf("--otlp: %w", err)
	}
	tp := telemetry.NewTracerProvider(exp)
	stop := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		tp.Shutdown(sctx)
	}
	return telemetry.NewRecorder(telemetry.Options{TracerProvider: tp}), stop, nil
}

// replayTarget replays the target spec, plain and (with behind) behind an in-process warden gateway, recording spans when spans
// is not nil. Progress goes to env.Stderr.
func replayTarget(ctx context.Context, env *Env, spec string, rf replayFlags, behind bool, spans *telemetry.Recorder) (plain, guarded *replay.Report, err error) {
	t, up, stop, err := replay.ParseTarget(spec, replay.TargetOptions{Profile: *rf.profile, Tool: *rf.tool,
		Sensitive: *rf.sensitive, Leak: *rf.leak, CredentialEnv: *rf.credentialEnv, CardKeys: *rf.cardKeys})
	if err != nil {
		return nil, nil, err
	}
	defer stop()
	traces := map[string]*replay.Trace{}
	if name := map[string]string{replay.MCP: "mcp", replay.A2A: "a2a"}[t.Protocol]; name != "" {
		m, err := models.Get(name)
		if err != nil {
			return nil, nil, err
		}
		if traces, err = replay.Counterexamples(ctx, m, check.Options{MaxStates: check.DefaultMaxStates}); err != nil {
			return nil, nil, err
		}
	}
	o := replay.Options{StepTimeout: *rf.timeout, Spans: spans}
	if plain, err = replay.Run(ctx, t, traces, o); err != nil {
		return nil, nil, err
	}
	if !behind {
		return plain, nil, nil
	}
	if t.Protocol == replay.MCP && up.URL == "" && len(up.Command) == 0 {
		return nil, nil, fmt.Errorf("target %s cannot be put behind warden (use mock:mcp-http for the fake)", spec)
	}
	dir, err := os.MkdirTemp("", "warden-conform-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	bt, stopW, err := replay.BehindWarden(t, up, dir, nil)
	if err != nil {
		return nil, nil, err
	}
	defer stopW()
	guarded, err = replay.Run(ctx, bt, traces, o)
	return plain, guarded, err
}

func conformReplay(ctx context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "conform replay", "--target TARGET [--profile REV] [--warden] [--format text|json] [--otlp URL]")
	target := fs.String("target", "", "what to replay against: "+replay.SpecHelp)
	behind := fs.Bool("warden", false, "also replay behind an in-process warden gateway")
	format := fs.String("format", "text", "text or json")
	rf := addReplayFlags(fs)
	if code, err := parseNoArgs(fs, args); err != nil {
		return code, err
	}
	if *target == "" {
		return ExitUsage, errors.New("--target is required (" + replay.SpecHelp + ")")
	}
	if *format != "text" && *format != "json" {
		return ExitUsage, fmt.Errorf("unknown format %q (want text or json)", *format)
	}
	spans, stopSpans, err := rf.spans(ctx)
	if err != nil {
		return ExitUsage, err
	}
	defer stopSpans()
	plain, guarded, err := replayTarget(ctx, env, *target, rf, *behind, spans)
	if err != nil {
		return ExitConfig, err
	}
	reports := []*replay.Report{plain}
	if guarded != nil {
		reports = append(reports, guarded)
	}
	if *format == "json" {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"reports": reports}); err != nil {
			return ExitInternal, err
		}
	} else {
		for _, r := range reports {
			fmt.Fprintf(env.Stdout, "%s (%s, %s)\n", r.Target, strings.TrimSpace(r.Protocol+" "+r.Profile), r.Mode)
			for _, n := range r.Notes {
				fmt.Fprintf(env.Stdout, "  note: %s\n", n)
			}
			for _, res := range r.Results {
				fmt.Fprintf(env.Stdout, "  %-28s %-3s %-13s %s\n", res.Model+"/"+res.Property, res.Principle, res.Outcome, res.Evidence)
			}
		}
	}
	for _, res := range plain.Results {
		if res.Outcome == replay.Reproduced {
			return ExitFindings, nil
		}
	}
	if n := inconclusive(reports...); n > 0 {
		// On stderr, as matrix's: stdout may be one JSON document.
		fmt.Fprintf(env.Stderr, "inconclusive: %s gave no verdict (silence, a timeout or a crash); "+
			"they are not counted as blocked\n", plural(n, "probe"))
		return ExitPartial, nil
	}
	return ExitOK, nil
}

// inconclusive counts the results of the reports whose target gave no
// verdict.
func inconclusive(reports ...*replay.Report) int {
	n := 0
	for _, r := range reports {
		if r == nil {
			continue
		}
		for _, res := range r.Results {
			if res.Outcome == replay.Inconclusive {
				n++
			}
		}
	}
	return n
}

func conformMatrix(ctx context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "conform matrix", "[--model NAME|FILE|DIR] [--format json|markdown|html] [--out DIR] [--against TARGET] [--otlp URL]")
	format := fs.String("format", "markdown", "json, markdown or html")
	name := fs.String("model", "", "the models to check (default: every built-in model): "+modelHelp)
	defs := addDefines(fs)
	out := fs.String("out", "", "also write matrix.json, matrix.md, matrix.html and every counterexample under `DIR`")
	maxStates := fs.Int("max-states", check.DefaultMaxStates, "stop a check after this many states")
	store := addStoreFlags(fs)
	against := fs.String("against", "", "replay against TARGET, plain and behind warden, and add those columns: "+replay.SpecHelp)
	rf := addReplayFlags(fs)
	if code, err := parseNoArgs(fs, args); err != nil {
		return code, err
	}
	if *format != "json" && *format != "markdown" && *format != "html" {
		return ExitUsage, fmt.Errorf("unknown format %q (want json, markdown or html)", *format)
	}
	if *rf.otlp != "" && *against == "" {
		return ExitUsage, errors.New("--otlp records a replay: it needs --against")
	}
	copts := check.Options{MaxStates: *maxStates}
	if err := store.apply(&copts); err != nil {
		return ExitUsage, err
	}
	spans, stopSpans, err := rf.spans(ctx)
	if err != nil {
		return ExitUsage, err
	}
	defer stopSpans()
	ms, code, err := selectModels(env, *name, *name == "", false, defs)
	if err != nil {
		return code, err
	}
	noVerdict := 0 // replay probes that were inconclusive
	cat, err := catalog.Default()
	if err != nil {
		return ExitInternal, err
	}
	res, err := report.Run(ctx, ms, cat, report.Options{Check: copts})
	if err != nil {
		return ExitInternal, err
	}
	if *against != "" {
		plain, guarded, err := replayTarget(ctx, env, *against, rf, true, spans)
		if err != nil {
			return ExitConfig, err
		}
		res.Against(plain, guarded)
		noVerdict = inconclusive(plain, guarded)
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
			"matrix.html": func(w *os.File) error { return res.WriteHTML(w) },
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
	switch *format {
	case "json":
		err = res.WriteJSON(env.Stdout)
	case "html":
		err = res.WriteHTML(env.Stdout)
	default:
		err = res.WriteMarkdown(env.Stdout)
	}
	if err != nil {
		return ExitInternal, err
	}
	incomplete := 0
	for _, f := range res.Findings {
		if f.Result == string(check.Incomplete) || f.WardenResult == string(check.Incomplete) {
			incomplete++
		}
	}
	if incomplete > 0 {
		fmt.Fprintf(env.Stderr, "incomplete: %d of the properties stopped at --max-states %d before the state space was "+
			"exhausted; their cells are neither shown to hold nor violated\n", incomplete, *maxStates)
	}
	if noVerdict > 0 {
		fmt.Fprintf(env.Stderr, "inconclusive: %s of the replay gave no verdict (silence, a timeout or a crash); "+
			"their cells keep the model's label\n", plural(noVerdict, "probe"))
	}
	partial := 0
	for _, f := range res.Findings {
		if f.Coverage == report.CoveragePartial {
			partial++
		}
	}
	if partial > 0 {
		fmt.Fprintf(env.Stderr, "partial coverage: %s only as far as a %s search saw, which may miss states; "+
			"that is not a proof (rerun with --store exact for one)\n", holdCount(partial), copts.Store)
	}
	if incomplete > 0 || noVerdict > 0 || partial > 0 {
		return ExitPartial, nil
	}
	return ExitOK, nil
}
