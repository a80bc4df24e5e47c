package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentwarden/warden/internal/attack"
	"github.com/agentwarden/warden/internal/oatf"
	"github.com/agentwarden/warden/internal/telemetry"
)

const attackUsage = "validate [--library-compat] FILE... | normalize [--library-compat] FILE | list [--library DIR] | run [flags] DOC|--library DIR"

// runAttack implements `warden attack`: OATF attack documents.
func runAttack(ctx context.Context, env *Env, args []string) (int, error) {
	if len(args) == 0 {
		return ExitUsage, errors.New("usage: warden attack " + attackUsage)
	}
	switch args[0] {
	case "validate":
		return attackValidate(env, args[1:])
	case "normalize":
		return attackNormalize(env, args[1:])
	case "list":
		return attackList(env, args[1:])
	case "run":
		return attackRun(ctx, env, args[1:])
	}
	return ExitUsage, fmt.Errorf("unknown subcommand %q; usage: warden attack %s", args[0], attackUsage)
}

// printDiagnostics renders diagnostics like a compiler, with the source line
// and a caret, and returns how many are errors.
func printDiagnostics(w io.Writer, doc *oatf.Document, src []byte, diags []oatf.Diagnostic) int {
	if doc != nil {
		src = doc.Source
	}
	errs := 0
	for _, d := range diags {
		fmt.Fprintln(w, d.Render(src))
		if d.Severity == oatf.SeverityError {
			errs++
		}
	}
	return errs
}

func attackValidate(env *Env, args []string) (int, error) {
	flags := newFlags(env, "attack validate", "[--library-compat] FILE...")
	compat := flags.Bool("library-compat", false, "accept what the public scenario library does beyond OATF 0.1 (Perl regexes become warnings)")
	if code, err := parseFlags(flags, args); err != nil {
		return code, err
	}
	if flags.NArg() == 0 {
		return ExitUsage, errors.New("usage: warden attack validate [--library-compat] FILE [FILE]")
	}
	opts := oatf.ValidateOptions{Library: *compat}
	code := ExitOK
	for _, file := range flags.Args() {
		doc, diags := oatf.ReadFile(file)
		if doc != nil {
			diags = append(diags, opts.Validate(doc)...)
			if !oatf.HasErrors(diags) {
				diags = append(diags, attack.CheckTargets(oatf.Normalize(doc))...)
			}
		}
		errs := printDiagnostics(env.Stderr, doc, nil, diags)
		warns := len(diags) - errs
		if errs > 0 {
			fmt.Fprintf(env.Stdout, "%s: invalid (%s, %s)\n", file, plural(errs, "error"), plural(warns, "warning"))
			code = ExitConfig
			continue
		}
		fmt.Fprintf(env.Stdout, "%s: valid (%s)\n", file, plural(warns, "warning"))
	}
	return code, nil
}

func attackNormalize(env *Env, args []string) (int, error) {
	flags := newFlags(env, "attack normalize", "[--library-compat] FILE")
	compat := flags.Bool("library-compat", false, "accept what the public scenario library does beyond OATF 0.1")
	if code, err := parseFlags(flags, args); err != nil {
		return code, err
	}
	if flags.NArg() != 1 {
		return ExitUsage, errors.New("usage: warden attack normalize [--library-compat] FILE")
	}
	raw, diags := oatf.ReadFile(flags.Arg(0))
	if raw == nil {
		printDiagnostics(env.Stderr, nil, nil, diags)
		return ExitConfig, nil
	}
	doc, diags := oatf.ValidateOptions{Library: *compat}.LoadDocument(raw, diags)
	if printDiagnostics(env.Stderr, raw, nil, diags) > 0 {
		return ExitConfig, nil
	}
	out, err := oatf.Serialize(doc)
	if err != nil {
		return ExitInternal, err
	}
	if _, err := env.Stdout.Write(out); err != nil {
		return ExitInternal, err
	}
	return ExitOK, nil
}

func attackList(env *Env, args []string) (int, error) {
	flags := newFlags(env, "attack list", "[--library DIR]")
	dir := flags.String("library", ".", "folder of OATF documents (searched recursively for *.yaml, *.yml)")
	if code, err := parseNoArgs(flags, args); err != nil {
		return code, err
	}
	files, err := libraryFiles(*dir)
	if err != nil {
		return ExitConfig, err
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSEVERITY\tMODES\tINDICATORS\tNAME")
	invalid := 0
	for _, f := range files {
		doc, diags := oatf.ValidateOptions{Library: true}.Load(f)
		if doc == nil {
			invalid++
			for _, d := range oatf.Errors(diags) {
				fmt.Fprintln(env.Stderr, d)
			}
			fmt.Fprintf(tw, "-\t-\t-\t-\t%s (invalid)\n", f)
			continue
		}
		a := doc.Attack()
		var modes []string
		for _, actor := range a.Get("execution").Get("actors").Items {
			if m := actor.Get("mode").StringOr(""); m != "" && !slices.Contains(modes, m) {
				modes = append(modes, m)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", a.Get("id").StringOr("-"), a.Get("severity").Get("level").StringOr("-"),
			strings.Join(modes, ","), len(doc.IndicatorRefs()), a.Get("name").StringOr(""))
	}
	if err := tw.Flush(); err != nil {
		return ExitInternal, err
	}
	fmt.Fprintf(env.Stdout, "%d documents, %d invalid\n", len(files), invalid)
	if invalid > 0 {
		return ExitConfig, nil
	}
	return ExitOK, nil
}

// plural spells n things: "1 error", "2 errors".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// libraryFiles lists the OATF documents under dir (*.yaml, *.yml), sorted.
func libraryFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// attackRunUsage is the synopsis of `warden attack run`.
const attackRunUsage = "[--mcp-command CMD|--mcp-url URL] [--agui-url URL|--context --context-url URL --context-model NAME] [--a2a-url URL] [--listen ADDR|--stdio] " +
	"[--allow-unmatchable] [--tier-exit-codes] [--verdict FILE] [--trace FILE] [--sarif FILE] [--junit FILE] DOC | --library DIR"

// headerFlags collects repeated --header "Name: value" flags.
type headerFlags http.Header

func (h headerFlags) String() string { return "" }

func (h headerFlags) Set(s string) error {
	name, value, ok := strings.Cut(s, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("header %q is not Name: value", s)
	}
	http.Header(h).Add(strings.TrimSpace(name), strings.TrimSpace(value))
	return nil
}

// attackRun implements `warden attack run`: it executes OATF documents
// against real peers and reports their verdicts.
//
// Exit codes: 0 not_exploited; 1 exploited (with --tier-exit-codes: 8 up
// to tier local_action, 9 up to boundary_breach); 6 partial; 2 usage (also:
// no document of a library could run with the endpoints given); 3 an
// invalid document, an unmatchable target, or a verdict of error from the
// indicators (every indicator skipped, or one failed to evaluate); 4 a
// target never really exercised (unreachable, failed during the run,
// --max-session, nothing sent): the verdict is error; 5 internal. A library
// run exits with the most severe code of its documents, in the order 5, 4,
// 3, 2, 9, 8, 1, 6, 0.
func attackRun(ctx context.Context, env *Env, args []string) (int, error) {
	flags := newFlags(env, "attack run", attackRunUsage)
	library := flags.String("library", "", "run every document under `DIR` (recursively, *.yaml and *.yml)")
	mcpCommand := flags.String("mcp-command", "", "mcp_client target: `COMMAND` line of an MCP server to run over stdio (split on spaces; or give it after --)")
	mcpURL := flags.String("mcp-url", "", "mcp_client target: streamable HTTP `URL` of an MCP server")
	aguiURL := flags.String("agui-url", "", "ag_ui_client target: `URL` of the AG-UI agent (POST RunAgentInput, SSE back)")
	a2aURL := flags.String("a2a-url", "", "a2a_client target: JSON-RPC `URL` of the A2A agent (0.3 or 1.0; its card is read from URL/.well-known/agent-card.json or the origin's)")
	listen := flags.String("listen", "127.0.0.1:0", "`ADDR` server actors listen on (mcp_server at /mcp/ACTOR, and /mcp when there is one; a2a_server at /a2a/ACTOR, and / when there is one)")
	stdio := flags.Bool("stdio", false, "serve the document's mcp_server actor on stdin/stdout (the summary goes to stderr)")
	header := headerFlags{}
	flags.Var(header, "header", "`NAME: VALUE` header for the client actors' HTTP requests (repeatable)")
	grace := flags.Duration("grace-period", -1, "observe this long after the client actors finish (default: the document's grace_period)")
	maxSession := flags.Duration("max-session", attack.DefaultMaxSession, "stop a run after this long")
	verdictOut := flags.String("verdict", "", "write the verdict JSON (OATF §9.3 metadata) to `FILE`; a library run writes a JSON array")
	traceOut := flags.String("trace", "", "write the message trace as JSON Lines to `FILE`")
	sarifOut := flags.String("sarif", "", "write SARIF 2.1.0 to `FILE`")
	junitOut := flags.String("junit", "", "write JUnit XML to `FILE` (one test case per document and per indicator)")
	verbose := flags.Bool("verbose", false, "log the run's progress to stderr")
	otlp := flags.String("otlp", "", "send the run's spans (AITF and OpenTelemetry names) by OTLP over HTTP to this `URL`, e.g. http://127.0.0.1:4318")
	compat := flags.Bool("library-compat", false, "accept what the public scenario library does beyond OATF 0.1 (always on with --library)")
	tierExit := flags.Bool("tier-exit-codes", false, "exit 8 when exploited up to tier local_action and 9 up to boundary_breach (1 stays for ingested or no tier)")
	contextMode := flags.Bool("context", false, "context mode: warden is the agent host in front of a model (--context-url, --context-model); the ag_ui_client actor is the user, the server actors are the model's tools")
	contextURL := flags.String("context-url", "", "context mode: base `URL` of an OpenAI-compatible chat-completions API (…/v1; /chat/completions is appended)")
	contextModel := flags.String("context-model", "", "context mode: the model `NAME` sent in each request")
	contextKeyEnv := flags.String("context-key-env", "OPENAI_API_KEY", "context mode: environment `VARIABLE` holding the API key (sent as a bearer token; unset sends none)")
	contextNoStream := flags.Bool("context-no-stream", false, "context mode: ask for whole completions instead of streamed chunks")
	maxTurns := flags.Int("max-turns", attack.DefaultContextTurns, "context mode: model calls per agent run (each tool result fed back is one)")
	contextMaxTokens := flags.Int("context-max-tokens", attack.DefaultContextMaxTokens, "context mode: max_tokens of each completion")
	contextBudget := flags.Int64("context-token-budget", attack.DefaultContextBudget, "context mode: tokens (input and output) all the model calls of one document may use; a run that needs more is error unless exploited")
	allowUnmatchable := flags.Bool("allow-unmatchable", false, "run documents with indicators whose target warden never records (rule unmatchable-target) instead of refusing them; those indicators can only be not_matched")
	if code, err := parseFlags(flags, args); err != nil {
		return code, err
	}
	rest := flags.Args()
	var files []string
	switch {
	case *library != "" && len(rest) > 0 && rest[0] != "--":
		return ExitUsage, errors.New("give a document or --library, not both")
	case *library != "":
		var err error
		if files, err = libraryFiles(*library); err != nil {
			return ExitConfig, err
		}
		if len(files) == 0 {
			return ExitConfig, fmt.Errorf("no *.yaml documents under %s", *library)
		}
	case len(rest) == 0:
		return ExitUsage, errors.New("usage: warden attack run " + attackRunUsage)
	default:
		files, rest = rest[:1], rest[1:]
	}
	command := strings.Fields(*mcpCommand)
	if len(rest) > 0 && rest[0] == "--" {
		rest = rest[1:]
		if len(rest) == 0 || len(command) > 0 {
			return ExitUsage, errors.New("-- must be followed by the MCP server command, and replaces --mcp-command")
		}
		command = rest
	} else if len(rest) > 0 {
		return ExitUsage, fmt.Errorf("unexpected arguments %q", rest)
	}
	if len(command) > 0 && *mcpURL != "" {
		return ExitUsage, errors.New("--mcp-command and --mcp-url are exclusive")
	}
	if *stdio && *library != "" {
		return ExitUsage, errors.New("--stdio serves one document; it cannot run a library")
	}
	logLevel := slog.LevelWarn
	if *verbose {
		logLevel = slog.LevelInfo
	}
	opts := attack.Options{MCPCommand: command, MCPURL: *mcpURL, AGUIURL: *aguiURL, A2AURL: *a2aURL, Header: http.Header(header),
		Listen: *listen, Stdio: *stdio, Stdin: env.Stdin, Stdout: env.Stdout, MaxSession: *maxSession,
		Logger: slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: logLevel}))}
	if *grace >= 0 {
		opts.GracePeriod = grace
	}
	if *contextMode {
		if *aguiURL != "" {
			return ExitUsage, errors.New("--context is warden's own agent for the ag_ui_client actor: it excludes --agui-url")
		}
		opts.Context = &attack.ContextOptions{BaseURL: *contextURL, Model: *contextModel, APIKey: os.Getenv(*contextKeyEnv),
			NoStream: *contextNoStream, MaxTurns: *maxTurns, MaxTokens: *contextMaxTokens, TokenBudget: *contextBudget}
		if err := opts.Context.Validate(); err != nil {
			return ExitUsage, fmt.Errorf("%w (--context-url, --context-model, --max-turns, --context-max-tokens, --context-token-budget)", err)
		}
	}
	if *otlp != "" {
		exp, err := telemetry.NewSpanExporter(ctx, telemetry.SpanExport{Kind: "otlp", Endpoint: *otlp})
		if err != nil {
			return ExitUsage, fmt.Errorf("--otlp: %w", err)
		}
		tp := telemetry.NewTracerProvider(exp)
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			tp.Shutdown(sctx)
		}()
		opts.Spans = telemetry.NewRecorder(telemetry.Options{TracerProvider: tp})
	}
	report := env.Stdout
	if *stdio {
		report = env.Stderr
	}
	opts.OnReady = func(endpoints map[string]string) error {
		for _, actor := range slices.Sorted(maps.Keys(endpoints)) {
			fmt.Fprintf(env.Stderr, "actor %s listening at %s\n", actor, endpoints[actor])
		}
		return nil
	}

	var outcomes []attack.Outcome
	code := ExitOK
	single := *library == ""
	for i, f := range files {
		o, c := runOne(ctx, env, f, opts, runChecks{single: single, compat: *compat || !single,
			allowUnmatchable: *allowUnmatchable, tierExit: *tierExit})
		outcomes = append(outcomes, o)
		code = worseExit(code, c)
		if single {
			if o.Result != nil {
				attack.WriteSummary(report, o.Result)
			} else if o.Err != nil {
				return c, o.Err
			}
		} else {
			dur := ""
			if o.Result != nil {
				dur = " " + o.Result.Duration.Round(time.Millisecond).String()
			}
			fmt.Fprintf(env.Stderr, "[%d/%d] %s %s%s\n", i+1, len(files), orDash(o.ID), o.Status(), dur)
		}
		if ctx.Err() != nil {
			break
		}
	}
	if !single {
		writeLibraryTable(report, outcomes)
		ran := 0
		for _, o := range outcomes {
			if o.Result != nil {
				ran++
			}
		}
		if ran == 0 && code == ExitOK {
			code = ExitUsage
			fmt.Fprintln(env.Stderr, "no document could run with the endpoints given (see the skipped ones above)")
		}
	}
	if err := writeReports(outcomes, single, *verdictOut, *traceOut, *sarifOut, *junitOut); err != nil {
		return ExitInternal, err
	}
	return code, nil
}

// runChecks are how runOne treats a document before running it.
type runChecks struct {
	single           bool // one document, not a library
	compat           bool // accept the public library's extensions
	allowUnmatchable bool // run despite unmatchable-target diagnostics
	tierExit         bool // exploited exits by its highest matched tier
}

// runOne loads and runs one document and maps its outcome to an exit code.
func runOne(ctx context.Context, env *Env, file string, opts attack.Options, checks runChecks) (attack.Outcome, int) {
	single := checks.single
	o := attack.Outcome{File: file}
	raw, diags := oatf.ReadFile(file)
	var doc *oatf.Document
	if raw != nil {
		doc, diags = oatf.ValidateOptions{Library: checks.compat}.LoadDocument(raw, diags)
	}
	if doc == nil {
		printDiagnostics(env.Stderr, raw, nil, oatf.Errors(diags))
		o.Err = fmt.Errorf("%s: invalid document", file)
		return o, ExitConfig
	}
	a := doc.Attack()
	o.ID, o.Name = a.Get("id").StringOr(""), a.Get("name").StringOr("")
	if len(doc.IndicatorRefs()) == 0 {
		o.Err = fmt.Errorf("%s: a document without indicators cannot be evaluated (OATF §11.4)", file)
		return o, ExitConfig
	}
	if err := attack.CheckEndpoints(doc, opts); err != nil {
		return ranOutcome(o, nil, err, single)
	}
	if unmatchable := attack.CheckTargets(doc); len(unmatchable) > 0 {
		// An indicator that can never match would make not_exploited
		// meaningless: refuse the document unless told to run it.
		if !checks.allowUnmatchable {
			for i := range unmatchable {
				unmatchable[i].Severity = oatf.SeverityError
			}
		}
		printDiagnostics(env.Stderr, doc, nil, unmatchable)
		if !checks.allowUnmatchable {
			o.Err = fmt.Errorf("%s: %s can never match (--allow-unmatchable runs it anyway)", file,
				plural(len(unmatchable), "indicator target"))
			return o, ExitConfig
		}
	}
	res, err := attack.Run(ctx, doc, opts)
	o, code := ranOutcome(o, res, err, single)
	if code == ExitFindings && checks.tierExit {
		switch res.Verdict.MaxTier {
		case "local_action":
			code = ExitLocalAction
		case "boundary_breach":
			code = ExitBoundaryBreach
		}
	}
	return o, code
}

// ranOutcome maps what attack.Run returned to an outcome and an exit code.
func ranOutcome(o attack.Outcome, res *attack.Result, err error, single bool) (attack.Outcome, int) {
	var epErr *attack.EndpointError
	var modeErr *attack.UnsupportedModeError
	switch {
	case errors.As(err, &epErr):
		o.Err = err
		if single {
			return o, ExitUsage
		}
		return o, ExitOK
	case errors.As(err, &modeErr):
		o.Err = err
		return o, ExitConfig
	case err != nil:
		o.Err = err
		return o, ExitUpstream
	}
	o.Result = res
	switch res.Verdict.Result {
	case oatf.Exploited:
		return o, ExitFindings
	case oatf.Partial:
		return o, ExitPartial
	case oatf.Error:
		if res.Error != "" {
			return o, ExitUpstream
		}
		return o, ExitConfig
	}
	if res.Failed() || res.TimedOut {
		return o, ExitUpstream
	}
	return o, ExitOK
}

// exitSeverity lists the exit codes of `attack run`, least severe first.
var exitSeverity = []int{ExitOK, ExitPartial, ExitFindings, ExitLocalAction, ExitBoundaryBreach, ExitUsage, ExitConfig, ExitUpstream, ExitInternal}

// worseExit returns the more severe of two exit codes: 5, 4, 3, 2, 9, 8,
// 1, 6, 0.
func worseExit(a, b int) int {
	if slices.Index(exitSeverity, b) > slices.Index(exitSeverity, a) {
		return b
	}
	return a
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func writeLibraryTable(w io.Writer, outcomes []attack.Outcome) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRESULT\tTIER\tMATCHED\tTIME\tNAME")
	counts := map[string]int{}
	for _, o := range outcomes {
		st := o.Status()
		counts[st]++
		tier, matched, dur := "-", "-", "-"
		if r := o.Result; r != nil {
			if r.Verdict.MaxTier != "" {
				tier = r.Verdict.MaxTier
			}
			matched = fmt.Sprintf("%d/%d", r.Verdict.Summary.Matched, len(r.Indicators))
			dur = r.Duration.Round(time.Millisecond).String()
		}
		name := o.Name
		if o.Err != nil {
			name += " (" + o.Err.Error() + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", orDash(o.ID), st, tier, matched, dur, strings.TrimSpace(name))
	}
	tw.Flush()
	fmt.Fprintf(w, "%d documents: %d exploited, %d partial, %d not exploited, %d error, %d skipped\n", len(outcomes),
		counts[oatf.Exploited], counts[oatf.Partial], counts[oatf.NotExploited], counts[oatf.Error], counts["skipped"])
}

// writeReports writes the requested report files.
func writeReports(outcomes []attack.Outcome, single bool, verdictOut, traceOut, sarifOut, junitOut string) error {
	write := func(path string, fn func(io.Writer) error) error {
		if path == "" {
			return nil
		}
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	err := write(verdictOut, func(w io.Writer) error {
		var docs []json.RawMessage
		for _, o := range outcomes {
			if o.Result == nil {
				continue
			}
			b, err := attack.VerdictJSON(o.Result)
			if err != nil {
				return err
			}
			docs = append(docs, b)
		}
		var out []byte
		switch {
		case single && len(docs) == 1:
			out = docs[0]
		default:
			var err error
			if out, err = json.MarshalIndent(docs, "", "  "); err != nil {
				return err
			}
		}
		_, err := w.Write(append(out, '\n'))
		return err
	})
	if err == nil {
		err = write(traceOut, func(w io.Writer) error {
			for _, o := range outcomes {
				if o.Result != nil {
					if err := attack.WriteJSONL(w, o.Result.Trace); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	if err == nil {
		err = write(sarifOut, func(w io.Writer) error { return attack.WriteSARIF(w, outcomes, "") })
	}
	if err == nil {
		err = write(junitOut, func(w io.Writer) error { return attack.WriteJUnit(w, outcomes) })
	}
	return err
}
