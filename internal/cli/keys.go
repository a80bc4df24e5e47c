package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/authn"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// runKeys dispatches `warden keys SUBCOMMAND`: the signing keys of
// zero-trust invocation tokens, clients' keys, API keys and the audit key.
func runKeys(ctx context.Context, env *Env, args []string) (int, error) {
	if len(args) == 0 {
		return ExitUsage, errors.New("usage: warden keys generate|list|jwks|client|api-key|audit (see warden help keys)")
	}
	switch args[0] {
	case "generate":
		return runKeysGenerate(ctx, env, args[1:])
	case "list":
		return runKeysList(ctx, env, args[1:])
	case "jwks":
		return runKeysJWKS(ctx, env, args[1:])
	case "client":
		return runKeysClient(ctx, env, args[1:])
	case "api-key":
		return runKeysAPIKey(ctx, env, args[1:])
	case "audit":
		return runKeysAudit(ctx, env, args[1:])
	}
	return ExitUsage, fmt.Errorf("unknown subcommand %q (want generate, list, jwks, client, api-key or audit)", args[0])
}

// dataDirFlag adds --data-dir to fs and returns a function that resolves it
// to the key directory.
func dataDirFlag(env *Env, fs *flag.FlagSet) func() (string, error) {
	dir := fs.String("data-dir", "", "warden's data directory (default $WARDEN_DATA_DIR, else the per-user data directory)")
	return func() (string, error) {
		d := *dir
		if d == "" {
			d = zerotrust.DataDirFrom(env.Getenv)
		}
		if d == "" {
			return "", errors.New("no data directory: set WARDEN_DATA_DIR or pass --data-dir")
		}
		return zerotrust.KeysDir(d), nil
	}
}

// loadRing parses no flags; it loads the key ring or maps the failure to
// ExitConfig.
func loadRing(keysDir func() (string, error)) (*zerotrust.KeyRing, int, error) {
	dir, err := keysDir()
	if err != nil {
		return nil, ExitUsage, err
	}
	ring, err := zerotrust.LoadKeyRing(dir)
	if err != nil {
		return nil, ExitConfig, err
	}
	return ring, ExitOK, nil
}

func runKeysGenerate(_ context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "keys generate", "[--alg EdDSA|ES256] [--data-dir DIR]")
	alg := fs.String("alg", zerotrust.AlgEdDSA, "signature algorithm: EdDSA (Ed25519) or ES256 (P-256)")
	keysDir := dataDirFlag(env, fs)
	if code, err := parseNoArgs(fs, args); err != nil {
		return code, err
	}
	if *alg != zerotrust.AlgEdDSA && *alg != zerotrust.AlgES256 {
		return ExitUsage, fmt.Errorf("--alg %q (want %s or %s)", *alg, zerotrust.AlgEdDSA, zerotrust.AlgES256)
	}
	ring, code, err := loadRing(keysDir)
	if err != nil {
		return code, err
	}
	k, err := ring.Rotate(*alg)
	if err != nil {
		return ExitInternal, err
	}
	fmt.Fprintln(env.Stdout, k.Kid)
	return ExitOK, nil
}

func runKeysList(_ context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "keys list", "[--data-dir DIR]")
	keysDir := dataDirFlag(env, fs)
	if code, err := parseNoArgs(fs, args); err != nil {
		return code, err
	}
	ring, code, err := loadRing(keysDir)
	if err != nil {
		return code, err
	}
	keys := ring.Keys()
	if len(keys) == 0 {
		dir, _ := keysDir()
		fmt.Fprintf(env.Stdout, "no keys in %s; run 'warden keys generate'\n", dir)
		return ExitOK, nil
	}
	for _, k := range keys {
		state := "active"
		if !k.Active {
			state = "retired, verifies until " + k.Expires.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(env.Stdout, "%s  %-5s  created %s  %s\n", k.Kid, k.Alg, k.Created.UTC().Format(time.RFC3339), state)
	}
	return ExitOK, nil
}

func runKeysJWKS(_ context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "keys jwks", "[--data-dir DIR]")
	keysDir := dataDirFlag(env, fs)
	if code, err := parseNoArgs(fs, args); err != nil {
		return code, err
	}
	ring, code, err := loadRing(keysDir)
	if err != nil {
		return code, err
	}
	fmt.Fprintf(env.Stdout, "%s\n", ring.PublicJWKS())
	return ExitOK, nil
}

// runKeysAPIKey makes a local API key for the listener (gateway.auth): the
// key for the client, once, and the line for the configuration, which holds
// only its SHA-256.
func runKeysAPIKey(_ context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "keys api-key", "--name NAME")
	name := fs.String("name", "", "the principal the key identifies (required)")
	if code, err := parseNoArgs(fs, args); err != nil {
		return code, err
	}
	if *name == "" || strings.ContainsAny(*name, ": \t\n\"'") {
		return ExitUsage, errors.New("--name is required: a plain name such as ci-bot")
	}
	key := "wk_" + rand.Text() + rand.Text()
	fmt.Fprintf(env.Stdout, "key (give it to the client; it is not stored anywhere):\n  %s\n\n", key)
	fmt.Fprintf(env.Stdout, "configuration (gateway.auth.api_keys):\n  %s: %s\n", *name, authn.HashKey(key))
	return ExitOK, nil
}

// runKeysAudit makes the Ed25519 key that signs the audit log's
// checkpoints (gateway.audit.signing_key): apart from the token keys, so
// that a verifier needs only its public half.
func runKeysAudit(_ context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "keys audit", "--out FILE")
	out := fs.String("out", "", "write the private JWK to `FILE` (mode 0600) and the public one to FILE.pub")
	if code, err := parseNoArgs(fs, args); err != nil {
		return code, err
	}
	if *out == "" {
		return ExitUsage, errors.New("usage: warden keys audit --out FILE")
	}
	priv, pub, kid, err := audit.GenerateKey()
	if err != nil {
		return ExitInternal, err
	}
	// O_EXCL: an audit key is not replaced by accident; the checkpoints it
	// signed verify only with it.
	f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return ExitUsage, fmt.Errorf("--out: %w", err)
	}
	_, err = f.Write(append(priv, '\n'))
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		return ExitInternal, err
	}
	if err := os.WriteFile(*out+".pub", append(pub, '\n'), 0o644); err != nil {
		return ExitInternal, err
	}
	fmt.Fprintf(env.Stdout, "audit key %s\nprivate key: %s (mode 0600; gateway.audit.signing_key)\npublic key:  %s.pub (warden audit verify --key %s.pub)\n",
		kid, *out, *out, *out)
	return ExitOK, nil
}
