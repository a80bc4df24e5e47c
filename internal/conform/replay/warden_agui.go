package replay

// Replay of an AG-UI agent behind warden (gateway.agui, internal/aguigw):
//
//	probe ─► HTTP POST RunAgentInput ─► Gateway.Handler on 127.0.0.1 /agui/target ─► agent
//	      ◄── SSE, each event checked (wire, prompt integrity, security) ◄──┘
//
// with the protections the AG-UI probes meet: the strict wire layer on the
// input and on every event (WF: a broken stream is ended with a RUN_ERROR of
// warden's), and the security processor, whose default for injected
// instructions in untrusted content (tool results in the input, the agent's
// text) is quarantine (P4).

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/agentwarden/warden/internal/gateway"
)

// wardenAGUIName is the mount replay puts the agent under: /agui/target.
const wardenAGUIName = "target"

// wardenAGUIConfig is the gateway configuration in front of the AG-UI
// agent at url, with the audit log under dir. publicURL is the listener's.
func wardenAGUIConfig(url, publicURL, dir string) string {
	q := strconv.Quote
	var b strings.Builder
	b.WriteString("version: 1\ngateway:\n")
	fmt.Fprintf(&b, "  audit: {enabled: true, backend: jsonl, path: %s}\n", q(filepath.Join(dir, "audit.jsonl")))
	fmt.Fprintf(&b, "  upstreams: [{name: unused, url: %s}]\n", q(publicURL+"/unused-mcp"))
	fmt.Fprintf(&b, "  agui:\n    - name: %s\n      url: %s\n", wardenAGUIName, q(url))
	return b.String()
}

// behindWardenAGUI returns the AG-UI target t reached through an in-process
// gateway, with its audit log under dir. stop may be called more than once.
func behindWardenAGUI(t *Target, dir string, logger *slog.Logger) (*Target, func(), error) {
	if t.URL == "" {
		return nil, nil, fmt.Errorf("replay: AG-UI target %s has no URL", t.Name)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	// The listener starts first: the configuration names its URL.
	srv, serve, err := startingServer()
	if err != nil {
		return nil, nil, err
	}
	_, g, err := newGateway(wardenAGUIConfig(t.URL, srv.URL, dir), "conform-replay-agui.yaml", logger)
	if err != nil {
		srv.Close()
		return nil, nil, err
	}
	serve(g.Handler())

	bt := *t
	bt.Name = t.Name + "+warden"
	bt.BehindWarden = true
	bt.URL = srv.URL + gateway.AGUIPath + wardenAGUIName
	bt.Notes = append(append([]string(nil), t.Notes...),
		"behind warden (gateway.agui): strict wire layer on the input and every event; "+
			"security processor with its defaults (injected instructions in tool results and agent text quarantined); audit log on")
	var once sync.Once
	return &bt, func() { once.Do(func() { srv.Close(); g.Close() }) }, nil
}
