package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/user"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// runApprove is `warden approve list|show|allow|deny`: a person's channel
// to the calls the gateway holds for approval, through its admin API.
func runApprove(ctx context.Context, env *Env, args []string) (int, error) {
	if len(args) == 0 {
		return ExitUsage, errors.New("usage: warden approve list|show ID|allow ID|deny ID (see warden help approve)")
	}
	sub := args[0]
	fs := newFlags(env, "approve "+sub, "[ID] [--admin URL] [--data-dir DIR] [--as NAME] [--reason TEXT]")
	admin := fs.String("admin", "http://"+defaultAdminAddr, "the gateway's admin `URL`")
	dataDir := fs.String("data-dir", "", "the gateway's data `dir`, where its admin token is (default: as the gateway's)")
	as := fs.String("as", "", "the approver `name` recorded with the decision (default: cli:<your user name>)")
	reason := fs.String("reason", "", "why, recorded with the decision")
	var id string
	rest := args[1:]
	if sub != "list" {
		if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
			return ExitUsage, fmt.Errorf("usage: warden approve %s ID", sub)
		}
		id, rest = rest[0], rest[1:]
	}
	if code, err := parseFlags(fs, rest); err != nil {
		return code, err
	}
	dir := *dataDir
	if dir == "" {
		dir = zerotrust.DataDirFrom(env.Getenv)
	}
	token, err := approval.ReadToken(dir)
	if err != nil {
		return ExitConfig, fmt.Errorf("admin token: %v (is the gateway running with hold_for_approval, and --data-dir its data dir?)", err)
	}
	c := adminClient{base: strings.TrimSuffix(*admin, "/"), token: token}
	switch sub {
	case "list":
		var list []approval.View
		if code, err := c.do(ctx, http.MethodGet, "/v1/approvals", nil, &list); err != nil {
			return code, err
		}
		if len(list) == 0 {
			fmt.Fprintln(env.Stdout, "no calls are waiting for approval")
			return ExitOK, nil
		}
		for _, v := range list {
			printView(env, v)
		}
	case "show":
		var v approval.View
		if code, err := c.do(ctx, http.MethodGet, "/v1/approvals/"+id, nil, &v); err != nil {
			return code, err
		}
		printView(env, v)
	case "allow", "deny":
		approver := *as
		if approver == "" {
			approver = "cli:unknown"
			if u, err := user.Current(); err == nil {
				approver = "cli:" + u.Username
			}
		}
		body, _ := json.Marshal(map[string]string{"approver": approver, "reason": *reason})
		if code, err := c.do(ctx, http.MethodPost, "/v1/approvals/"+id+"/"+sub, body, nil); err != nil {
			return code, err
		}
		verb := map[string]string{"allow": "approved", "deny": "denied"}[sub]
		fmt.Fprintf(env.Stdout, "%s %s as %s\n", id, verb, approver)
	default:
		return ExitUsage, fmt.Errorf("unknown subcommand %q (want list, show, allow or deny)", sub)
	}
	return ExitOK, nil
}

// printView shows a held call with its arguments exactly as hashed: the
// canonical bytes, not a re-indented rendering of them.
func printView(env *Env, v approval.View) {
	fmt.Fprintf(env.Stdout, "%s  %s/%s for %s, expires in %s\n    arguments %s\n    parameters_hash %s\n",
		v.ID, v.Upstream, v.Tool, v.Subject, time.Until(v.Expires).Round(time.Second), v.Arguments, v.ParametersHash)
}

const defaultAdminAddr = "127.0.0.1:8788"

type adminClient struct{ base, token string }

// do calls the admin API and decodes its JSON answer into out.
func (c adminClient) do(ctx context.Context, method, path string, body []byte, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return ExitUsage, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ExitUpstream, fmt.Errorf("admin API: %v", err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		json.Unmarshal(data, &e)
		if resp.StatusCode == http.StatusNotFound {
			return ExitFindings, errors.New(e.Error)
		}
		return ExitUpstream, fmt.Errorf("admin API: %s: %s", resp.Status, e.Error)
	}
	if out != nil {
		return ExitOK, json.Unmarshal(data, out)
	}
	return ExitOK, nil
}
