package cli

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/pin"
	"github.com/agentwarden/warden/internal/transport"
)

// runManifest dispatches `warden manifest SUBCOMMAND`: signed tool
// manifests and the pin store (AASM P2, docs/pinning.md).
func runManifest(ctx context.Context, env *Env, args []string) (int, error) {
	if len(args) == 0 {
		return ExitUsage, errors.New("usage: warden manifest keygen|make|sign|verify|pins (see warden help manifest)")
	}
	switch args[0] {
	case "keygen":
		return runManifestKeygen(ctx, env, args[1:])
	case "make":
		return runManifestMake(ctx, env, args[1:])
	case "sign":
		return runManifestSign(ctx, env, args[1:])
	case "verify":
		return runManifestVerify(ctx, env, args[1:])
	case "pins":
		return runManifestPins(ctx, env, args[1:])
	}
	return ExitUsage, fmt.Errorf("unknown subcommand %q (want keygen, make, sign, verify or pins)", args[0])
}

// parseInterspersed parses flags that may come before, between or after
// the positional arguments, and returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, int, error) {
	var pos []string
	for {
		if code, err := parseFlags(fs, args); err != nil {
			return nil, code, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, ExitOK, nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

// keyList is a repeatable --key flag.
type keyList []string

func (k *keyList) String() string     { return strings.Join(*k, ",") }
func (k *keyList) Set(v string) error { *k = append(*k, v); return nil }

func runManifestKeygen(_ context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "manifest keygen", "--out PREFIX")
	out := fs.String("out", "", "write the private key to PREFIX.jwk (mode 0600) and the public key to PREFIX.pub.jwk (required)")
	if code, err := parseNoArgs(fs, args); err != nil {
		return code, err
	}
	if *out == "" {
		return ExitUsage, errors.New("--out PREFIX is required")
	}
	priv, pub, kid, err := pin.GenerateKey()
	if err != nil {
		return ExitInternal, err
	}
	privPath, pubPath := *out+".jwk", *out+".pub.jwk"
	// Never overwrite a key: losing the old private key would orphan every
	// manifest it signed.
	if err := writeNew(privPath, priv, 0o600); err != nil {
		return ExitConfig, err
	}
	if err := writeNew(pubPath, pub, 0o644); err != nil {
		os.Remove(privPath)
		return ExitConfig, err
	}
	fmt.Fprintf(env.Stdout, "kid %s\nprivate key: %s (keep it secret; sign with it)\npublic key:  %s (configure it in gateways)\n", kid, privPath, pubPath)
	return ExitOK, nil
}

// writeNew creates path with data; it fails if path exists.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeOut writes data to path, or to stdout when path is "".
func writeOut(env *Env, path string, data []byte) error {
	if path == "" {
		_, err := env.Stdout.Write(data)
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

func runManifestMake(ctx context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "manifest make", "--upstream NAME [--out FILE] (--from-url URL | -- CMD [ARGS...])")
	upstream := fs.String("upstream", "", "the upstream's name in the gateway configuration (required)")
	url := fs.String("from-url", "", "the server's streamable HTTP endpoint")
	out := fs.String("out", "", "write the unsigned manifest here (default stdout)")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	if code, err := parseFlags(fs, args); err != nil {
		return code, err
	}
	cmd := fs.Args()
	switch {
	case *upstream == "":
		return ExitUsage, errors.New("--upstream NAME is required: the manifest pins the tools of one upstream")
	case (*url == "") == (len(cmd) == 0):
		return ExitUsage, errors.New("give either --from-url URL or -- CMD [ARGS...]")
	}
	log := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var conn transport.Conn
	if *url != "" {
		conn = transport.NewHTTPClient(transport.HTTPClientOptions{URL: *url, Name: *upstream, Logger: log})
	} else {
		c, err := transport.Command(transport.CommandSpec{Path: cmd[0], Args: cmd[1:], Name: *upstream, Logger: log})
		if err != nil {
			return ExitUpstream, err
		}
		conn = c
	}
	defer conn.Close()
	fctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	defs, err := pin.FetchTools(fctx, conn)
	if err != nil {
		return ExitUpstream, fmt.Errorf("fetching the tools of %s: %w", *upstream, err)
	}
	m, err := pin.MakeManifest(*upstream, defs, time.Now())
	if err != nil {
		return ExitFindings, err
	}
	data, err := m.Marshal()
	if err != nil {
		return ExitInternal, err
	}
	if err := writeOut(env, *out, data); err != nil {
		return ExitConfig, err
	}
	fmt.Fprintf(env.Stderr, "%d tools of %s; review them, then: warden manifest sign --key KEY.jwk FILE\n", len(m.Tools), *upstream)
	return ExitOK, nil
}

func runManifestSign(_ context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "manifest sign", "--key PRIVATE.jwk [--out FILE] MANIFEST.json")
	keyPath := fs.String("key", "", "the private key made by warden manifest keygen (required)")
	out := fs.String("out", "", "write the signed manifest here (default stdout)")
	pos, code, err := parseInterspersed(fs, args)
	if err != nil {
		return code, err
	}
	if *keyPath == "" || len(pos) != 1 {
		return ExitUsage, errors.New("usage: warden manifest sign --key PRIVATE.jwk [--out FILE] MANIFEST.json")
	}
	key, kid, err := pin.LoadPrivateKey(*keyPath)
	if err != nil {
		return ExitConfig, err
	}
	data, err := os.ReadFile(pos[0])
	if err != nil {
		return ExitConfig, err
	}
	m, err := pin.ParseManifest(data)
	if err != nil {
		return ExitConfig, fmt.Errorf("%s: %w", pos[0], err)
	}
	tok, err := pin.SignManifest(m, key, kid)
	if err != nil {
		return ExitInternal, err
	}
	if err := writeOut(env, *out, []byte(tok+"\n")); err != nil {
		return ExitConfig, err
	}
	return ExitOK, nil
}

func runManifestVerify(_ context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "manifest verify", "FILE --key PUBLIC.jwk [--key PUBLIC.jwk...]")
	var keyPaths keyList
	fs.Var(&keyPaths, "key", "a public key that may have signed the manifest (repeatable; required)")
	pos, code, err := parseInterspersed(fs, args)
	if err != nil {
		return code, err
	}
	if len(keyPaths) == 0 || len(pos) != 1 {
		return ExitUsage, errors.New("usage: warden manifest verify FILE --key PUBLIC.jwk")
	}
	var keys []ed25519.PublicKey
	for _, p := range keyPaths {
		k, err := pin.LoadPublicKey(p)
		if err != nil {
			return ExitConfig, err
		}
		keys = append(keys, k)
	}
	if _, err := os.Stat(pos[0]); err != nil {
		return ExitConfig, err
	}
	m, err := pin.LoadManifest(pos[0], keys)
	if err != nil {
		return ExitFindings, err
	}
	fmt.Fprintf(env.Stdout, "valid: manifest of upstream %s, issued %s, %d tools\n", m.Upstream, m.IssuedAt.UTC().Format(time.RFC3339), len(m.Tools))
	for _, t := range m.Tools {
		fmt.Fprintf(env.Stdout, "  %s  %s\n", t.Hash, t.Name)
	}
	return ExitOK, nil
}

// runManifestPins lists or decides on the pins of a SQLite pin store,
// offline (a running gateway picks decisions up at its next tools/list).
func runManifestPins(ctx context.Context, env *Env, args []string) (int, error) {
	action := "list"
	if len(args) > 0 && (args[0] == "approve" || args[0] == "reject" || args[0] == "list") {
		action, args = args[0], args[1:]
	}
	usage := "[list] --store FILE [--upstream NAME] | approve|reject --store FILE [--approver NAME] UPSTREAM TOOL HASH"
	fs := newFlags(env, "manifest pins", usage)
	storePath := fs.String("store", "", "the gateway's SQLite pin store (required)")
	upstream := fs.String("upstream", "", "list: only this upstream")
	approver := fs.String("approver", "", "approve, reject: who decides (default $USER)")
	pos, code, err := parseInterspersed(fs, args)
	if err != nil {
		return code, err
	}
	if *storePath == "" {
		return ExitUsage, errors.New("--store FILE is required")
	}
	if action == "list" && len(pos) != 0 || action != "list" && len(pos) != 3 {
		return ExitUsage, errors.New("usage: warden manifest pins " + usage)
	}
	// Opening would create a missing file: a typo must not show an empty store.
	if _, err := os.Stat(*storePath); err != nil {
		return ExitConfig, err
	}
	st, err := pin.OpenSQLite(*storePath)
	if err != nil {
		return ExitConfig, err
	}
	defer st.Close()
	if action == "list" {
		return listPins(ctx, env, st, *upstream, *storePath)
	}
	who := *approver
	if who == "" {
		who = env.Getenv("USER")
	}
	if strings.TrimSpace(who) == "" {
		return ExitUsage, errors.New("--approver NAME is required ($USER is not set)")
	}
	up, tool, hash := pos[0], pos[1], pos[2]
	if action == "approve" {
		r, err := st.Approve(ctx, up, tool, hash, who, time.Now().UTC())
		if err != nil {
			return decisionCode(err), err
		}
		fmt.Fprintf(env.Stdout, "approved: %s/%s is pinned to %s by %s\n", up, tool, r.Hash, who)
		return ExitOK, nil
	}
	if _, err := st.Reject(ctx, up, tool, hash, who, time.Now().UTC()); err != nil {
		return decisionCode(err), err
	}
	fmt.Fprintf(env.Stdout, "rejected: %s/%s stays blocked; definition %s will not be offered again\n", up, tool, hash)
	return ExitOK, nil
}

// decisionCode maps an Approve/Reject error: naming the wrong tool or hash
// is a usage error; anything else is the store's.
func decisionCode(err error) int {
	if errors.Is(err, pin.ErrNoPending) || errors.Is(err, pin.ErrHashMismatch) || errors.Is(err, pin.ErrApprover) {
		return ExitUsage
	}
	return ExitConfig
}

func listPins(ctx context.Context, env *Env, st pin.Store, upstream, storePath string) (int, error) {
	recs, err := st.Pins(ctx, upstream)
	if err != nil {
		return ExitConfig, err
	}
	pend, err := st.Pendings(ctx, upstream)
	if err != nil {
		return ExitConfig, err
	}
	w := env.Stdout
	if len(recs) == 0 {
		fmt.Fprintln(w, "no pins")
	}
	last := ""
	for _, r := range recs {
		if r.Upstream != last {
			fmt.Fprintf(w, "upstream %s\n", r.Upstream)
			last = r.Upstream
		}
		src := string(r.Source)
		if r.Approver != "" {
			src += " by " + r.Approver
		}
		seen := ""
		if r.Definition == nil {
			seen = "  (not seen yet)"
		}
		fmt.Fprintf(w, "  %s  %-24s %s %s%s\n", r.Hash, r.Tool, src, r.At.UTC().Format(time.RFC3339), seen)
	}
	if len(pend) == 0 {
		return ExitOK, nil
	}
	fmt.Fprintf(w, "\n%d waiting for a decision:\n", len(pend))
	for _, p := range pend {
		state := "pending"
		if p.Rejected {
			state = "rejected by " + p.Decider + " " + p.Decided.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "\n%s/%s: %s, %s (seen %s)\n", p.Upstream, p.Tool, p.Kind, state, p.Seen.UTC().Format(time.RFC3339))
		if p.OldHash != "" {
			fmt.Fprintf(w, "  pinned %s\n", p.OldHash)
		}
		fmt.Fprintf(w, "  now    %s\n", p.NewHash)
		fmt.Fprintf(w, "  approve: warden manifest pins approve --store %s %s %s %s\n", storePath, p.Upstream, p.Tool, p.NewHash)
		io.WriteString(w, indent(p.Diff(), "    "))
	}
	return ExitOK, nil
}

func indent(s, prefix string) string {
	if s == "" {
		return ""
	}
	return prefix + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+prefix) + "\n"
}
