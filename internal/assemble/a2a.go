package assemble

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentwarden/warden/internal/a2agw"
	"github.com/agentwarden/warden/internal/authn"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/secproc"
	"github.com/agentwarden/warden/internal/taint"
	"github.com/agentwarden/warden/internal/transport"
)

// a2aHandlers builds the A2A gateways of gc (internal/a2agw), each with the
// listener's authentication and, when the audit log is on, its records.
//
// The agent card pins (AASM P2) live where the tool pins do when
// gateway.pinning is enabled: in its SQLite file, or in Redis, shared by
// every gateway on it. Without it they last as long as the process. The
// returned closer closes the pin store, which is provided to l; it is nil
// with no A2A upstream.
func a2aHandlers(gc config.GatewayConfig, auth func(*http.Request) (string, *transport.AuthRefusal), rs *gateway.Records, flow func(config.A2AUpstream) a2agw.Flow, logger *slog.Logger, l *lifecycle) (map[string]http.Handler, io.Closer, error) {
	if len(gc.A2A) == 0 {
		return nil, nil, nil
	}
	cardPins, closer, err := a2aPins(gc)
	if err != nil {
		return nil, nil, fmt.Errorf("gateway.pinning: agent card pins: %w", err)
	}
	l.provide(closer)
	out := map[string]http.Handler{}
	for i, a := range gc.A2A {
		opts := a2agw.Options{
			Name: a.Name, Upstream: a.URL, CardURL: a.CardURL,
			PublicURL:             publicBase(gc) + strings.TrimSuffix(gateway.A2APath, "/") + "/" + a.Name,
			Authenticate:          auth,
			AllowExtendedCard:     a.AllowExtendedCard,
			AllowInternalWebhooks: a.AllowInternalWebhooks,
			RequireSignedCard:     a.RequireSignedCard,
			Logger:                logger,
			Pins:                  cardPins,
			// gateway.limits bounds A2A messages as it does MCP's.
			Limits: jsonrpc.Limits{MaxBytes: gc.Limits.MaxMessageBytes, MaxDepth: gc.Limits.MaxDepth},
			Delegation: a2agw.DelegationOptions{Require: a.Delegation.Require, Agent: a.Delegation.Agent,
				MaxHops: a.Delegation.MaxHops, Roots: a.Delegation.Roots, Keys: map[string][]jose.JSONWebKey{}},
		}
		if len(a.Methods.Allow) > 0 || len(a.Methods.Deny) > 0 {
			opts.Methods = a.Methods
		}
		for _, f := range a.CardKeys {
			keys, err := authn.LoadJWKS(f)
			if err != nil {
				return nil, nil, fmt.Errorf("gateway.a2a[%d].card_keys: %w", i, err)
			}
			opts.CardKeys = append(opts.CardKeys, keys.Set.Keys...)
		}
		for issuer, f := range a.Delegation.Keys {
			keys, err := authn.LoadJWKS(f)
			if err != nil {
				return nil, nil, fmt.Errorf("gateway.a2a[%d].delegation.keys.%s: %w", i, issuer, err)
			}
			opts.Delegation.Keys[issuer] = keys.Set.Keys
		}
		if rs != nil && rs.Audit != nil {
			opts.Record = gateway.A2ARecord(rs.Audit)
		}
		if f := flow(a); f != nil {
			opts.Flow = f
		}
		h, err := a2agw.New(opts)
		if err != nil {
			return nil, nil, fmt.Errorf("gateway.a2a[%d]: %w", i, err)
		}
		out[a.Name] = h
	}
	return out, closer, nil
}

// aguiHandlers builds the AG-UI gateways of gc.AGUI, their headers'
// secrets resolved now, with gateway.security's processor when it is on.
func aguiHandlers(gc config.GatewayConfig, auth func(*http.Request) (string, *transport.AuthRefusal), rs *gateway.Records, logger *slog.Logger) (map[string]http.Handler, error) {
	specs := make([]gateway.AGUISpec, len(gc.AGUI))
	for i, a := range gc.AGUI {
		var err error
		if a.Headers, err = a.ResolvedHeaders(os.LookupEnv); err != nil {
			return nil, fmt.Errorf("gateway.agui[%d]: %w", i, err)
		}
		specs[i] = gateway.AGUISpec{Name: a.Name, URL: a.URL, Headers: a.Headers, Actions: a.Actions, MaxHeldBytes: a.MaxHeldBytes,
			Limits: jsonrpc.Limits{MaxBytes: gc.Limits.MaxMessageBytes, MaxDepth: gc.Limits.MaxDepth}}
	}
	if len(specs) == 0 {
		return nil, nil
	}
	var proc *secproc.Processor
	if gc.Security.Enabled {
		var err error
		if proc, err = securityProcessor(gc); err != nil {
			return nil, err
		}
	}
	return gateway.AGUIHandlers(proc, specs, auth, rs, logger)
}

// taintFrom returns the taint stage of gc, or nil when tracking is off or
// nothing could be a sink (no classification, no sink tools, no A2A
// agents): then answers are not even fingerprinted. canHold says whether
// the zero-trust stage holds calls for a person.
func taintFrom(gc config.GatewayConfig, canHold bool) *gateway.Taint {
	t := gc.Taint
	if t.Disabled || (len(gc.ZeroTrust.Classification) == 0 && len(t.SinkTools) == 0 && len(gc.A2A) == 0) {
		return nil
	}
	action := secproc.RequireApproval
	switch t.Action {
	case "deny":
		action = secproc.Deny
	case "flag":
		action = secproc.Flag
	}
	return &gateway.Taint{Tracker: taint.New(taint.Config{MinMatch: t.MinMatch, TTL: t.TTL}), Action: action,
		Sinks: t.SinkTools, CanHold: canHold}
}
