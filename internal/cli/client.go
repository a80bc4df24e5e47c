package cli

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentwarden/warden/internal/zerotrust"
)

// runKeysClient creates a client key pair for Tier 3 signatures: the
// private JWK (0600) to sign with, and FILE.pub to pin in
// gateway.zero_trust.client_keys.
func runKeysClient(_ context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "keys client", "--out FILE [--alg EdDSA|ES256]")
	out := fs.String("out", "", "write the private JWK to `FILE` and the public one to FILE.pub")
	alg := fs.String("alg", "EdDSA", "EdDSA (Ed25519) or ES256 (P-256)")
	if code, err := parseFlags(fs, args); err != nil {
		return code, err
	}
	if *out == "" || fs.NArg() > 0 {
		return ExitUsage, errors.New("usage: warden keys client --out FILE [--alg EdDSA|ES256]")
	}
	var key crypto.Signer
	var err error
	switch *alg {
	case "EdDSA":
		_, key, err = ed25519.GenerateKey(rand.Reader)
	case "ES256":
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		return ExitUsage, fmt.Errorf("--alg %q: want EdDSA or ES256", *alg)
	}
	if err != nil {
		return ExitInternal, err
	}
	priv, _ := json.Marshal(&jose.JSONWebKey{Key: key, Algorithm: *alg})
	pub, _ := json.Marshal(&jose.JSONWebKey{Key: key.Public(), Algorithm: *alg})
	if err := os.WriteFile(*out, append(priv, '\n'), 0o600); err != nil {
		return ExitInternal, err
	}
	if err := os.WriteFile(*out+".pub", append(pub, '\n'), 0o644); err != nil {
		return ExitInternal, err
	}
	fmt.Fprintf(env.Stdout, "private key: %s (keep it; mode 0600)\npublic key:  %s.pub (pin it in gateway.zero_trust.client_keys)\n", *out, *out)
	return ExitOK, nil
}

// runTokenSign prints the client signature (Tier 3) of the invocation a
// token grants: its jti, tool and parameters_hash, signed with the client's
// private key.
func runTokenSign(_ context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "token sign", "--key FILE --token TOKEN|-")
	keyFile := fs.String("key", "", "the client's private JWK (from warden keys client)")
	token := fs.String("token", "", "the invocation token to sign for, or - for stdin")
	if code, err := parseFlags(fs, args); err != nil {
		return code, err
	}
	if *keyFile == "" || *token == "" || fs.NArg() > 0 {
		return ExitUsage, errors.New("usage: warden token sign --key FILE --token TOKEN|-")
	}
	raw, err := readArg(env, *token)
	if err != nil {
		return ExitUsage, err
	}
	_, claimsJSON, err := zerotrust.Inspect(strings.TrimSpace(string(raw)))
	if err != nil {
		return ExitUsage, fmt.Errorf("--token: %v", err)
	}
	var claims zerotrust.Claims
	if err := json.Unmarshal(claimsJSON, &claims); err != nil {
		return ExitUsage, fmt.Errorf("--token: claims: %v", err)
	}
	data, err := os.ReadFile(*keyFile)
	if err != nil {
		return ExitUsage, err
	}
	var jwk jose.JSONWebKey
	if err := jwk.UnmarshalJSON(data); err != nil || jwk.IsPublic() {
		return ExitUsage, fmt.Errorf("--key %s: not a private JWK", *keyFile)
	}
	signer, ok := jwk.Key.(crypto.Signer)
	if !ok {
		return ExitUsage, fmt.Errorf("--key %s: unsupported key type %T", *keyFile, jwk.Key)
	}
	if k, isEd := jwk.Key.(ed25519.PrivateKey); isEd {
		signer = k
	}
	sig, err := zerotrust.SignInvocation(signer, zerotrust.Invocation{JTI: claims.ID, Tool: claims.Tool, ParametersHash: claims.ParametersHash})
	if err != nil {
		return ExitInternal, err
	}
	fmt.Fprintln(env.Stdout, sig)
	return ExitOK, nil
}
