package replay

// A2A replay behind warden: the A2A target reached through a gateway built
// in-process from a YAML configuration the way `warden gateway` builds it,
// its `gateway.a2a` section pointing at the agent, with the protections the
// A2A principles ask for switched on:
//
//	gateway.auth api_keys         a key for the principal "conform"          P1
//	card_keys, require_signed_card  when the target's card keys are known;
//	                              otherwise the first card seen is pinned    P2
//	delegation                    roots {conform: [read]}, keys of conform
//	                              and conform-agent-a, agent conform-target  P3
//	audit log                     every A2A message and refusal (JSONL)      P6
//	strict wire layer             always on                                  WF
//
//	probe ─► HTTP ─► Gateway.Handler on 127.0.0.1 ─► /a2a/target ─► agent
//	                                                 └─ card_url ─► forger ─► agent's card
//
// The configuration must name one MCP upstream (config validation asks for
// one); replay names an unused one that is never dialled.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/agentwarden/warden/internal/a2agw"
	"github.com/agentwarden/warden/internal/authn"
	"github.com/agentwarden/warden/internal/gateway"
)

// wardenA2AName is the name of the agent in the gateway: it is served at
// gateway.A2APath + wardenA2AName. The same agent is also served at
// wardenA2AConsentName with require_approval on the methods that send a
// message (AASM P5): the consent probe goes there, the other probes (whose
// control messages must be delivered) to the first.
const (
	wardenA2AName        = "target"
	wardenA2AConsentName = "target-consent"
)

// a2aWardenSpec is what the A2A gateway configuration names.
type a2aWardenSpec struct {
	URL, CardURL, CardKeys string // the agent: JSON-RPC endpoint, where warden reads its card, card keys (JWKS)
	PublicURL              string // where clients reach the gateway
	Dir                    string // the audit log's directory
	KeyHash                string // SHA-256 (hex) of the client's API key
	RootKeys, RelayKeys    string // JWKS files of the delegation chain's issuers
}

// wardenA2AConfig returns the gateway configuration replay puts in front
// of an A2A agent.
func wardenA2AConfig(s a2aWardenSpec) string {
	q := strconv.Quote
	var b strings.Builder
	b.WriteString("version: 1\ngateway:\n")
	fmt.Fprintf(&b, "  zero_trust: {public_url: %s}\n", q(s.PublicURL))
	fmt.Fprintf(&b, "  audit: {enabled: true, backend: jsonl, path: %s}\n", q(filepath.Join(s.Dir, "audit.jsonl")))
	fmt.Fprintf(&b, "  auth: {api_keys: {%s: %s}}\n", delegationRoot, q(s.KeyHash))
	fmt.Fprintf(&b, "  upstreams: [{name: unused, url: %s}]\n", q(s.PublicURL+"/unused-mcp"))
	b.WriteString("  a2a:\n")
	fmt.Fprintf(&b, "    - name: %s\n      url: %s\n      card_url: %s\n", wardenA2AName, q(s.URL), q(s.CardURL))
	if s.CardKeys != "" {
		fmt.Fprintf(&b, "      card_keys: [%s]\n      require_signed_card: true\n", q(s.CardKeys))
	}
	fmt.Fprintf(&b, "      delegation:\n        agent: %s\n        roots: {%s: [%s]}\n", delegationTarget, delegationRoot, grantedScope)
	fmt.Fprintf(&b, "        keys: {%s: %s, %s: %s}\n", delegationRoot, q(s.RootKeys), delegationRelay, q(s.RelayKeys))
	fmt.Fprintf(&b, "    - name: %s\n      url: %s\n      card_url: %s\n", wardenA2AConsentName, q(s.URL), q(s.CardURL))
	if s.CardKeys != "" {
		fmt.Fprintf(&b, "      card_keys: [%s]\n      require_signed_card: true\n", q(s.CardKeys))
	}
	b.WriteString("      require_approval: [SendMessage, SendStreamingMessage, message/send, message/stream]\n")
	return b.String()
}

// behindWardenA2A returns the A2A target t reached through an in-process
// gateway, with its key files and audit log under dir. stop may be called
// more than once.
func behindWardenA2A(t *Target, dir string, logger *slog.Logger) (*Target, func(), error) {
	if t.URL == "" {
		return nil, nil, fmt.Errorf("replay: A2A target %s has no URL", t.Name)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	// The forger sits between warden and the agent's card.
	s, err := newA2ASetup(t)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error, closers ...func()) (*Target, func(), error) {
		for _, c := range closers {
			c()
		}
		s.close()
		return nil, nil, err
	}
	rootKeys, relayKeys, err := s.writeKeys(dir)
	if err != nil {
		return fail(err)
	}
	// The listener starts first: the configuration names its URL (the card
	// warden serves points clients there).
	srv, serve, err := startingServer()
	if err != nil {
		return fail(err)
	}
	key := "conform-" + randomHex(16)
	yaml := wardenA2AConfig(a2aWardenSpec{URL: t.URL, CardURL: s.forger.url(), CardKeys: t.CardKeys,
		PublicURL: srv.URL, Dir: dir, KeyHash: authn.HashKey(key), RootKeys: rootKeys, RelayKeys: relayKeys})
	opts, g, err := newGateway(yaml, "conform-replay-a2a.yaml", logger)
	if err != nil {
		return fail(err, srv.Close)
	}
	serve(g.Handler())

	bt := *t
	bt.Name = t.Name + "+warden"
	bt.BehindWarden = true
	bt.URL = srv.URL + strings.TrimSuffix(gateway.A2APath, "/") + "/" + wardenA2AName
	bt.CardURL = bt.URL + a2agw.CardPath
	bt.Bearer = key
	bt.a2a = &a2aSetup{forger: s.forger, cardURL: bt.CardURL, root: s.root, relay: s.relay,
		consentURL: srv.URL + strings.TrimSuffix(gateway.A2APath, "/") + "/" + wardenA2AConsentName}
	if r, ok := opts.A2A[wardenA2AName].(interface{ RefreshCard(context.Context) error }); ok {
		bt.a2a.refresh = r.RefreshCard
	}
	card := "the first card seen is pinned"
	if t.CardKeys != "" {
		card = "the card must carry a signature by a key of " + filepath.Base(t.CardKeys) + ", and is pinned"
	}
	bt.Notes = append(append([]string(nil), t.Notes...),
		"behind warden (gateway.a2a): API key for the principal "+delegationRoot+"; "+card+
			"; delegation roots {"+delegationRoot+": ["+grantedScope+"]}, agent "+delegationTarget+
			"; audit log on; strict wire layer; the consent probe (P5) on a second mount whose message methods need approval")
	var once sync.Once
	return &bt, func() { once.Do(func() { srv.Close(); g.Close(); s.close() }) }, nil
}
