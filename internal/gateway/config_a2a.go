package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentwarden/warden/internal/a2agw"
	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/authn"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/transport"
)

// A2APath is where the listener serves the A2A agents: A2APath/<name>, its
// agent card at A2APath/<name>/.well-known/agent-card.json.
const A2APath = "/a2a/"

// a2aHandlers builds the A2A gateways of gc (internal/a2agw), each with the
// listener's authentication and, when the audit log is on, its records.
//
// The agent card pins (AASM P2) live where the tool pins do when
// gateway.pinning is enabled: in its SQLite file, or in Redis, shared by
// every gateway on it. Without it they last as long as the process. The
// returned closer closes the pin store; it is nil with no A2A upstream.
func a2aHandlers(gc config.GatewayConfig, auth func(*http.Request) (string, *transport.AuthRefusal), rs *Records, flow func(config.A2AUpstream) a2agw.Flow, logger *slog.Logger) (_ map[string]http.Handler, _ io.Closer, err error) {
	if len(gc.A2A) == 0 {
		return nil, nil, nil
	}
	cardPins, closer, err := a2aPins(gc)
	if err != nil {
		return nil, nil, fmt.Errorf("gateway.pinning: agent card pins: %w", err)
	}
	out := map[string]http.Handler{}
	for i, a := range gc.A2A {
		opts := a2agw.Options{
			Name: a.Name, Upstream: a.URL, CardURL: a.CardURL,
			PublicURL:         publicBase(gc) + strings.TrimSuffix(A2APath, "/") + "/" + a.Name,
			Authenticate:      auth,
			AllowExtendedCard: a.AllowExtendedCard,
			RequireSignedCard: a.RequireSignedCard,
			Logger:            logger,
			Pins:              cardPins,
			Delegation: a2agw.DelegationOptions{Require: a.Delegation.Require, Agent: a.Delegation.Agent,
				MaxHops: a.Delegation.MaxHops, Roots: a.Delegation.Roots, Keys: map[string][]jose.JSONWebKey{}},
		}
		if len(a.Methods.Allow) > 0 || len(a.Methods.Deny) > 0 {
			opts.Methods = a.Methods
		}
		for _, f := range a.CardKeys {
			keys, err := authn.LoadJWKS(f)
			if err != nil {
				return nil, nil, errors.Join(fmt.Errorf("gateway.a2a[%d].card_keys: %w", i, err), closeIf(closer))
			}
			opts.CardKeys = append(opts.CardKeys, keys.Set.Keys...)
		}
		for issuer, f := range a.Delegation.Keys {
			keys, err := authn.LoadJWKS(f)
			if err != nil {
				return nil, nil, errors.Join(fmt.Errorf("gateway.a2a[%d].delegation.keys.%s: %w", i, issuer, err), closeIf(closer))
			}
			opts.Delegation.Keys[issuer] = keys.Set.Keys
		}
		if rs != nil && rs.Audit != nil {
			opts.Record = A2ARecord(rs.Audit)
		}
		if f := flow(a); f != nil {
			opts.Flow = f
		}
		h, err := a2agw.New(opts)
		if err != nil {
			return nil, nil, errors.Join(fmt.Errorf("gateway.a2a[%d]: %w", i, err), closeIf(closer))
		}
		out[a.Name] = h
	}
	return out, closer, nil
}

// a2aPins opens the agent card pin store of gc (see a2aHandlers).
func a2aPins(gc config.GatewayConfig) (a2agw.PinStore, io.Closer, error) {
	if !gc.Pinning.Enabled {
		return &a2agw.MemoryPins{}, nil, nil
	}
	switch gc.PinStore() {
	case config.StoreMemory:
		return &a2agw.MemoryPins{}, nil, nil
	case config.StoreRedis:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p, err := a2agw.OpenRedisPins(ctx, gc.ZeroTrust.RedisURL)
		if err != nil {
			return nil, nil, err
		}
		return p, p, nil
	}
	path, err := pinStorePath(gc)
	if err != nil {
		return nil, nil, err
	}
	p, err := a2agw.OpenSQLitePins(path)
	if err != nil {
		return nil, nil, err
	}
	return p, p, nil
}

// closeIf closes c when it is not nil.
func closeIf(c io.Closer) error {
	if c == nil {
		return nil
	}
	return c.Close()
}

// A2ARecord returns an a2agw.Options.Record that writes each A2A message
// into the gateway's audit log before it leaves: the same chain as MCP's,
// so a bridge operation is audited in both domains.
func A2ARecord(l *audit.Log) func(context.Context, a2agw.Event) error {
	return func(ctx context.Context, e a2agw.Event) error {
		r := audit.Record{Time: time.Now(), Actor: e.Principal, Upstream: "a2a:" + e.Upstream, Method: e.Method,
			RequestID: e.ID.Raw(), Tool: e.TaskID, Decision: audit.Allow, Direction: e.Direction}
		if e.Decision == "deny" {
			r.Decision, r.Stage, r.Rule, r.Reason = audit.Deny, e.Stage, e.Rule, e.Reason
		}
		_, err := l.Append(context.WithoutCancel(ctx), r)
		return err
	}
}
