package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/agentwarden/warden/internal/oatf"
)

const attackUsage = "validate [--library-compat] FILE... | normalize [--library-compat] FILE | list [--library DIR]"

// runAttack implements `warden attack`: OATF attack documents.
func runAttack(_ context.Context, env *Env, args []string) (int, error) {
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
	var files []string
	err := filepath.WalkDir(*dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return ExitConfig, err
	}
	sort.Strings(files)
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
