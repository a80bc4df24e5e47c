package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/audit"
)

// runAudit is `warden audit verify|export`: checking and reading the
// gateway's hash-chained audit log.
func runAudit(ctx context.Context, env *Env, args []string) (int, error) {
	if len(args) == 0 {
		return ExitUsage, errors.New("usage: warden audit verify|export FILE (see warden help audit)")
	}
	sub := args[0]
	fs := newFlags(env, "audit "+sub, "FILE [--backend sqlite|jsonl] [--head SEQ:HASH] [--key PUB]... [--witness FILE] [--format jsonl|ocsf] [--integrity]")
	backend := fs.String("backend", "", "the log's `backend`: jsonl or sqlite (default: by the file's content, an SQLite database is sqlite)")
	head := fs.String("head", "", "verify: a head recorded earlier, `SEQ:HASH`; the log must contain it unchanged")
	var keyFiles fileList
	fs.Var(&keyFiles, "key", "verify: a public audit key (`PUB`, from warden keys audit); checks every checkpoint and names the unattested records; repeat for keys used before a rotation")
	witness := fs.String("witness", "", "verify: a witness `FILE` (gateway.audit.witness); the log must match every checkpoint in it")
	format := fs.String("format", "jsonl", "export: `jsonl` (the records) or ocsf (one OCSF event per record)")
	integrity := fs.Bool("integrity", false, "export --format ocsf: OCSF 1.9.0-dev events carrying each record's hash, previous hash and seq (the record_integrity profile)")
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
	kind := audit.Kind(*backend) // "": by the file's content (audit.DetectKind)
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
		opts := audit.VerifyOptions{Want: want}
		for _, f := range keyFiles {
			k, err := audit.LoadVerifyKey(f)
			if err != nil {
				return ExitUsage, fmt.Errorf("--key: %w", err)
			}
			opts.Keys = append(opts.Keys, k)
		}
		if *witness != "" {
			if opts.Witness, err = audit.ReadWitness(*witness); err != nil {
				return ExitUsage, fmt.Errorf("--witness: %w", err)
			}
		}
		rep, err := audit.VerifyWith(ctx, b, opts)
		if err != nil {
			return ExitInternal, err
		}
		return printVerify(env, path, rep, len(opts.Keys) > 0, *witness != ""), nil
	default: // export
		switch *format {
		case "jsonl":
			return exitOf(audit.Export(ctx, b, env.Stdout))
		case "ocsf":
			return exitOf(exportOCSF(ctx, b, env.Stdout, *integrity))
		}
		return ExitUsage, fmt.Errorf("--format %q: want jsonl or ocsf", *format)
	}
}

// printVerify reports rep and returns the exit code: ExitFindings when the
// log is broken, ExitPartial when it is intact but records after the last
// checkpoint are unattested (with keys), else ExitOK.
func printVerify(env *Env, path string, rep audit.Report, keys, witness bool) int {
	w := env.Stdout
	if rep.Problem != nil {
		fmt.Fprintf(w, "%s: BROKEN at %s (%d records read; the chain is intact up to seq %d)\n",
			path, rep.Problem, rep.Records, rep.Head.Seq)
		return ExitFindings
	}
	fmt.Fprintf(w, "%s: ok, %d records, head %d:%s\n", path, rep.Records, rep.Head.Seq, rep.Head.Hash)
	if !keys {
		if rep.Checkpoints > 0 {
			fmt.Fprintf(w, "  %d checkpoints, signatures not checked: pass --key to check them\n", rep.Checkpoints)
		}
		if witness {
			fmt.Fprintf(w, "  witness: the log matches its %d checkpoints (signatures not checked)\n", rep.Witnessed)
		}
		return ExitOK
	}
	if c := rep.LastCheckpoint; c != nil {
		fmt.Fprintf(w, "  attested: %d checkpoints verify; the last covers seq 1..%d (key %s, %s)\n",
			rep.Checkpoints, c.Seq, c.KeyID, c.Time.UTC().Format(time.RFC3339))
	}
	for _, s := range rep.Reopened {
		fmt.Fprintf(w, "  late: records %d..%d (%d) were attested only when the log was next opened: warden stopped without closing it, or someone else appended them\n",
			s.From, s.To, s.Count)
	}
	if witness {
		fmt.Fprintf(w, "  witness: the log matches its %d checkpoints\n", rep.Witnessed)
	}
	if s := rep.Unattested; s != nil {
		fmt.Fprintf(w, "  UNATTESTED: %d records after the last checkpoint, seq %d..%d: no signature covers them (written before a crash, or appended by someone without the key)\n",
			s.Count, s.From, s.To)
		return ExitPartial
	}
	return ExitOK
}

// fileList collects a repeated file flag.
type fileList []string

func (f *fileList) String() string { return strings.Join(*f, ",") }

func (f *fileList) Set(s string) error {
	*f = append(*f, s)
	return nil
}

func exitOf(err error) (int, error) {
	if err != nil {
		return ExitInternal, err
	}
	return ExitOK, nil
}
