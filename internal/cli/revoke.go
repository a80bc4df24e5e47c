package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/user"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/revoke"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// runRevoke is `warden token revoke`: it revokes one token (--jti), every
// token of a principal issued before now or --before (--sub), or a
// session's credentials (--session), through the gateway's admin API (AASM
// P8); with --list it shows the revocations in force. With a shared store
// (zero_trust.store: redis) a revocation made through one instance is
// refused by every instance.
func runRevoke(ctx context.Context, env *Env, args []string) (int, error) {
	fs := newFlags(env, "token revoke", "--jti ID | --sub SUBJECT [--before TIME] | --session ID | --list [--reason TEXT] [--as NAME] [--for DURATION] [--admin URL] [--data-dir DIR]")
	jti := fs.String("jti", "", "revoke the token with this `id` (its jti claim)")
	sub := fs.String("sub", "", "revoke every token of this `subject` issued before now (or --before)")
	session := fs.String("session", "", "revoke the credentials of the session with this `id` (Mcp-Session-Id)")
	list := fs.Bool("list", false, "list the revocations in force, newest first")
	before := fs.String("before", "", "with --sub: revoke the tokens issued before this RFC 3339 `time` instead of now")
	reason := fs.String("reason", "", "why, kept with the revocation and shown in every refusal it causes")
	as := fs.String("as", "", "who revokes, kept with the revocation (default: cli:<your user name>)")
	keep := fs.Duration("for", 0, "how long the revocation is kept; it must outlive the tokens it covers (default 24h)")
	admin := fs.String("admin", "http://"+defaultAdminAddr, "the gateway's admin `URL`")
	dataDir := fs.String("data-dir", "", "the gateway's data `dir`, where its admin token is (default: as the gateway's)")
	if code, err := parseNoArgs(fs, args); err != nil {
		return code, err
	}
	req := revoke.Request{Reason: *reason}
	n := 0
	for _, f := range []struct {
		value string
		kind  revoke.Kind
	}{{*jti, revoke.KindToken}, {*sub, revoke.KindSubject}, {*session, revoke.KindSession}} {
		if f.value != "" {
			req.Kind, req.ID = f.kind, f.value
			n++
		}
	}
	switch {
	case *list && n > 0, !*list && n != 1:
		return ExitUsage, errors.New("need exactly one of --jti ID, --sub SUBJECT, --session ID or --list")
	case *before != "" && req.Kind != revoke.KindSubject:
		return ExitUsage, errors.New("--before applies to --sub only")
	case *keep < 0:
		return ExitUsage, errors.New("--for must be positive")
	}
	if *before != "" {
		t, err := time.Parse(time.RFC3339, *before)
		if err != nil {
			return ExitUsage, fmt.Errorf("--before: %v", err)
		}
		req.Before = t
	}
	if *keep > 0 {
		req.For = keep.String()
	}
	dir := *dataDir
	if dir == "" {
		dir = zerotrust.DataDirFrom(env.Getenv)
	}
	token, err := approval.ReadToken(dir)
	if err != nil {
		return ExitConfig, fmt.Errorf("admin token: %v (is the gateway running with its admin listener, and --data-dir its data dir?)", err)
	}
	c := adminClient{base: strings.TrimSuffix(*admin, "/"), token: token}
	if *list {
		var rs []revoke.Revocation
		if code, err := c.do(ctx, http.MethodGet, "/v1/revocations", nil, &rs); err != nil {
			return code, err
		}
		if len(rs) == 0 {
			fmt.Fprintln(env.Stdout, "no revocations in force")
		}
		for _, r := range rs {
			printRevocation(env, r)
		}
		return ExitOK, nil
	}
	req.By = *as
	if req.By == "" {
		req.By = "cli:unknown"
		if u, err := user.Current(); err == nil {
			req.By = "cli:" + u.Username
		}
	}
	body, _ := json.Marshal(req)
	var got revoke.Revocation
	if code, err := c.do(ctx, http.MethodPost, "/v1/revocations", body, &got); err != nil {
		return code, err
	}
	fmt.Fprint(env.Stdout, "revoked: ")
	printRevocation(env, got)
	return ExitOK, nil
}

// printRevocation shows one revocation on one line.
func printRevocation(env *Env, r revoke.Revocation) {
	what := map[revoke.Kind]string{revoke.KindToken: "token", revoke.KindSubject: "subject", revoke.KindSession: "session"}[r.Kind]
	fmt.Fprintf(env.Stdout, "%s %s", what, r.ID)
	if r.Kind == revoke.KindSubject {
		fmt.Fprintf(env.Stdout, " (tokens issued before %s)", r.Before.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(env.Stdout, " by %s at %s, kept until %s", r.By, r.At.UTC().Format(time.RFC3339), r.Until.UTC().Format(time.RFC3339))
	if r.Reason != "" {
		fmt.Fprintf(env.Stdout, ": %s", r.Reason)
	}
	fmt.Fprintln(env.Stdout)
}
