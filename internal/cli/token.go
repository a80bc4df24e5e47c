package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentwarden/warden/internal/zerotrust"
)

// runToken dispatches `warden token SUBCOMMAND`: hash, issue, verify and
// inspect zero-trust invocation tokens.
func runToken(ctx context.Context, env *Env, args []string) (int, error) {
	if len(args) == 0 {
		return ExitUsage, errors.New("usage: warden token hash|issue|verify|inspect|sign|revoke (see warden help token)")
	}
	switch args[0] {
	case "hash":
		return runTokenHash(ctx, env, args[1:])
	case "issue":
		return runTokenIssue(ctx, env, args[1:])
	case "verify":
		return runTokenVerify(ctx, env, args[1:])
	case "inspect":
		return runTokenInspect(ctx, env, args[1:])
	case "sign":
		return runTokenSign(ctx, env, args[1:])
	case "revoke":
		return runRevoke(ctx, env, args[1:])
	}
	return ExitUsage, fmt.Errorf("unknown subcommand %q (want hash, issue, verify, inspect, sign or revoke)", args[0])
}

// runTokenHash prints the parameters_hash of a tool call's arguments: the
// lowercase hex SHA-256 of their RFC 8785 canonical form.
func runTokenHash(_ context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "token hash", "--params JSON|- [--canonical]")
	params := fs.String("params", "", "the tool call's `arguments` as JSON, or - to read them from stdin (absent: {})")
	canonical := fs.Bool("canonical", false, "also print the canonical form that was hashed")
	if code, err := parseNoArgs(fs, args); err != nil {
		return code, err
	}
	in, err := readArg(env, *params)
	if err != nil {
		return ExitUsage, err
	}
	hash, form, err := zerotrust.ParamsHash(in)
	if err != nil {
		return ExitUsage, fmt.Errorf("--params: %v", strings.TrimPrefix(err.Error(), "jsonrpc -32700: "))
	}
	fmt.Fprintln(env.Stdout, hash)
	if *canonical {
		fmt.Fprintln(env.Stdout, string(form))
	}
	return ExitOK, nil
}

// readArg returns v, or standard input when v is "-".
func readArg(env *Env, v string) ([]byte, error) {
	if v != "-" {
		return []byte(v), nil
	}
	return io.ReadAll(io.LimitReader(env.Stdin, 4<<20+1))
}

// runTokenIssue signs a token for one call with the active key.
func runTokenIssue(_ context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "token issue", "--sub USER --upstream NAME --tool TOOL --params JSON|- [--ttl D] [--dpop-jkt JKT] [--aud A] [--data-dir DIR]")
	sub := fs.String("sub", "", "the user the token is for (required)")
	upstream := fs.String("upstream", "", "the gateway upstream (gateway.upstreams[].name) the call goes to (required)")
	tool := fs.String("tool", "", "the canonical upstream tool it authorizes (required)")
	params := fs.String("params", "", "the approved `arguments` as JSON, or - for stdin (absent: {})")
	ttl := fs.Duration("ttl", zerotrust.MaxTTL, "lifetime, at most 30s")
	jkt := fs.String("dpop-jkt", "", "bind the token to this DPoP key thumbprint (cnf.jkt)")
	aud := fs.String("aud", zerotrust.DefaultAudience, "audience")
	iss := fs.String("iss", zerotrust.DefaultIssuer, "issuer")
	persona := fs.String("persona", "", "role of the presenter, checked at step 3a")
	class := fs.Int("classification", 0, "data classification 1..5 (0: none)")
	mode := fs.String("binding-mode", "", "ad-hoc, pre-defined or hybrid (default: hybrid with --schema, else ad-hoc)")
	schema := fs.String("schema", "", "hybrid (binding mode C): the tool's `inputSchema` as JSON, as its server declares it")
	keysDir := dataDirFlag(env, fs)
	if code, err := parseNoArgs(fs, args); err != nil {
		return code, err
	}
	if *sub == "" || *tool == "" {
		return ExitUsage, errors.New("--sub and --tool are required")
	}
	if *upstream == "" {
		return ExitUsage, errors.New("--upstream is required: a token authorizes a call on one upstream, named as in gateway.upstreams[].name")
	}
	if *jkt != "" && !isThumbprint(*jkt) {
		return ExitUsage, fmt.Errorf("--dpop-jkt %q is not a JWK thumbprint: want the RFC 7638 SHA-256 thumbprint of the client's DPoP public key, 43 base64url characters without padding", *jkt)
	}
	in, err := readArg(env, *params)
	if err != nil {
		return ExitUsage, err
	}
	var schemaHash string
	if *schema != "" {
		if schemaHash, err = zerotrust.SchemaHash([]byte(*schema)); err != nil {
			return ExitUsage, fmt.Errorf("--schema: %v", strings.TrimPrefix(err.Error(), "jsonrpc -32700: "))
		}
		if *mode == "" {
			*mode = zerotrust.BindingHybrid
		}
	}
	ring, code, err := loadRing(keysDir)
	if err != nil {
		return code, err
	}
	if len(ring.Keys()) == 0 {
		return ExitConfig, errors.New("no signing key: run 'warden keys generate' first")
	}
	tok, _, err := zerotrust.Issue(ring, zerotrust.IssueRequest{
		Sub: *sub, Upstream: *upstream, Tool: *tool, Arguments: in, TTL: *ttl, Aud: *aud, Iss: *iss,
		Persona: *persona, Classification: *class, DPoPJKT: *jkt, BindingMode: *mode, SchemaHash: schemaHash,
	})
	if err != nil {
		return ExitUsage, errors.New(strings.TrimPrefix(err.Error(), "arguments: jsonrpc -32700: "))
	}
	fmt.Fprintln(env.Stdout, tok)
	return ExitOK, nil
}

// isThumbprint reports whether s has the form of an RFC 7638 SHA-256
// thumbprint as cnf.jkt carries it: 32 bytes, base64url without padding.
func isThumbprint(s string) bool {
	b, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil && len(s) == 43 && len(b) == sha256.Size
}

// runTokenVerify checks a token against exactly one call. It exits 0 when
// the token authorizes the call, 1 naming the failed invariant when not.
func runTokenVerify(_ context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "token verify", "--token T|- --sub USER --upstream NAME --tool TOOL --params JSON [--session ID] [--data-dir DIR]")
	token := fs.String("token", "", "the token, or - for stdin (required)")
	sub := fs.String("sub", "", "the authenticated user (required)")
	upstream := fs.String("upstream", "", "the gateway upstream the call goes to (required)")
	tool := fs.String("tool", "", "the tool being called (required)")
	session := fs.String("session", "", "the client session the call arrives on, for a session-bound token")
	params := fs.String("params", "", "the call's `arguments` as JSON (absent: {})")
	aud := fs.String("aud", zerotrust.DefaultAudience, "expected audience")
	iss := fs.String("iss", zerotrust.DefaultIssuer, "expected issuer")
	persona := fs.String("persona", "", "when set, the role the token must name (step 3a)")
	skew := fs.Duration("skew", zerotrust.DefaultSkew, "tolerated clock skew")
	schema := fs.String("schema", "", "the tool's current `inputSchema` as JSON, for hybrid tokens")
	keysDir := dataDirFlag(env, fs)
	if code, err := parseNoArgs(fs, args); err != nil {
		return code, err
	}
	if *token == "" || *sub == "" || *upstream == "" || *tool == "" {
		return ExitUsage, errors.New("--token, --sub, --upstream and --tool are required")
	}
	if *token == "-" && *params == "-" {
		return ExitUsage, errors.New("only one of --token and --params can read stdin")
	}
	tok, err := readArg(env, *token)
	if err != nil {
		return ExitUsage, err
	}
	in, err := readArg(env, *params)
	if err != nil {
		return ExitUsage, err
	}
	ring, code, err := loadRing(keysDir)
	if err != nil {
		return code, err
	}
	var schemaHash string
	if *schema != "" {
		if schemaHash, err = zerotrust.SchemaHash([]byte(*schema)); err != nil {
			return ExitUsage, fmt.Errorf("--schema: %v", err)
		}
	}
	c, verr := zerotrust.Verify(ring, strings.TrimSpace(string(tok)), zerotrust.Expect{
		Sub: *sub, Upstream: *upstream, Tool: *tool, Session: *session, Arguments: in, Aud: *aud, Iss: *iss,
		Persona: *persona, Skew: *skew, SchemaHash: schemaHash,
	})
	if verr != nil {
		fmt.Fprintln(env.Stdout, verr.Error())
		return ExitFindings, nil
	}
	fmt.Fprintf(env.Stdout, "valid: signature, INV-1 identity-tool binding, INV-2 temporal validity, INV-3 parameter integrity (jti %s)\n", c.ID)
	fmt.Fprintln(env.Stdout, "not checked here: INV-4 single use (the jti is not consumed)")
	if c.Confirmation != nil {
		fmt.Fprintf(env.Stdout, "not checked here: INV-5 DPoP proof for cnf.jkt %s\n", c.Confirmation.JKT)
	}
	return ExitOK, nil
}

// runTokenInspect prints a token's header and claims without verifying them.
func runTokenInspect(_ context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "token inspect", "TOKEN|-")
	if code, err := parseFlags(fs, args); err != nil {
		return code, err
	}
	if fs.NArg() != 1 {
		return ExitUsage, errors.New("usage: warden token inspect TOKEN|-")
	}
	tok, err := readArg(env, fs.Arg(0))
	if err != nil {
		return ExitUsage, err
	}
	header, claims, err := zerotrust.Inspect(strings.TrimSpace(string(tok)))
	if err != nil {
		return ExitUsage, err
	}
	fmt.Fprintln(env.Stdout, "UNVERIFIED: decoded only; the signature, times and bindings were not checked.")
	for _, part := range []struct {
		name string
		raw  []byte
	}{{"header", header}, {"claims", claims}} {
		var buf bytes.Buffer
		if err := json.Indent(&buf, part.raw, "", "  "); err != nil {
			return ExitUsage, fmt.Errorf("%s: %v", part.name, err)
		}
		fmt.Fprintf(env.Stdout, "%s (unverified):\n%s\n", part.name, buf.Bytes())
	}
	return ExitOK, nil
}
