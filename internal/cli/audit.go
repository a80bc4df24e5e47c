package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/ocsf"
)

// runAudit is `warden audit verify|export`: checking and reading the
// gateway's hash-chained audit log.
func runAudit(ctx context.Context, env *Env, args []string) (int, error) {
	if len(args) == 0 {
		return ExitUsage, errors.New("usage: warden audit verify|export FILE (see warden help audit)")
	}
	sub := args[0]
	fs := newFlags(env, "audit "+sub, "FILE [--backend sqlite|jsonl] [--head SEQ:HASH] [--format jsonl|ocsf]")
	backend := fs.String("backend", "", "the log's `backend`: sqlite or jsonl (default: by the file name, .jsonl is jsonl)")
	head := fs.String("head", "", "verify: a head recorded earlier, `SEQ:HASH`; the log must contain it unchanged")
	format := fs.String("format", "jsonl", "export: `jsonl` (the records) or ocsf (one OCSF event per record)")
	if sub != "verify" && sub != "export" {
		return ExitUsage, fmt.Errorf("unknown subcommand %q: want verify or export", sub)
	}
	// Flags may come before or after FILE.
	if code, err := parseFlags(fs, args[1:]); err != nil {
		return code, err
	}
	if fs.NArg() == 0 {
		return ExitUsage, fmt.Errorf("usage: warden audit %s FILE", sub)
	}
	path := fs.Arg(0)
	if code, err := parseNoArgs(fs, fs.Args()[1:]); err != nil {
		return code, err
	}
	kind := audit.Kind(*backend)
	if kind == "" {
		kind = audit.KindSQLite
		if strings.HasSuffix(path, ".jsonl") {
			kind = audit.KindJSONL
		}
	}
	if _, err := os.Stat(path); err != nil {
		return ExitConfig, err // opening would create an empty log
	}
	b, err := audit.OpenBackend(kind, path)
	if err != nil {
		return ExitConfig, err
	}
	defer b.Close()
	switch sub {
	case "verify":
		var want audit.Anchor
		if *head != "" {
			seq, hash, ok := strings.Cut(*head, ":")
			n, err := strconv.ParseUint(seq, 10, 64)
			if !ok || err != nil || len(hash) != 64 {
				return ExitUsage, fmt.Errorf("--head %q: want SEQ:HASH, e.g. 42:<64 hex digits>", *head)
			}
			want = audit.Anchor{Seq: n, Hash: hash}
		}
		rep, err := audit.Verify(ctx, b, want)
		if err != nil {
			return ExitInternal, err
		}
		if rep.Problem != nil {
			fmt.Fprintf(env.Stdout, "%s: BROKEN at %s (%d records read; the chain is intact up to seq %d)\n",
				path, rep.Problem, rep.Records, rep.Head.Seq)
			return ExitFindings, nil
		}
		fmt.Fprintf(env.Stdout, "%s: ok, %d records, head %d:%s\n", path, rep.Records, rep.Head.Seq, rep.Head.Hash)
		return ExitOK, nil
	default: // export
		switch *format {
		case "jsonl":
			return exitOf(audit.Export(ctx, b, env.Stdout))
		case "ocsf":
			w := bufio.NewWriter(env.Stdout)
			enc := json.NewEncoder(w)
			enc.SetEscapeHTML(false)
			builder := ocsf.Builder{Profile: ocsf.ProfileStandard, Product: ocsf.Product{Name: "warden", VendorName: "agentwarden", Version: Version()}}
			_, err := b.Scan(ctx, func(r audit.Record) error {
				for _, ev := range builder.Events(ocsf.AuditCall(&r)) {
					if err := enc.Encode(ev); err != nil {
						return err
					}
				}
				return nil
			})
			if err == nil {
				err = w.Flush()
			}
			return exitOf(err)
		}
		return ExitUsage, fmt.Errorf("--format %q: want jsonl or ocsf", *format)
	}
}

func exitOf(err error) (int, error) {
	if err != nil {
		return ExitInternal, err
	}
	return ExitOK, nil
}
