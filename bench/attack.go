package main

// The OATF rows (issue 7): validating the shared scenario library, pattern
// indicator evaluations, and a full library run against aimock with the
// warden binary, as a user runs it.

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/agentwarden/warden/internal/attack"
	"github.com/agentwarden/warden/internal/oatf"
	"github.com/agentwarden/warden/internal/testenv"
)

// sharedDir is $WARDEN_SHARED_DIR, or ../shared next to the module.
func sharedDir() string {
	if d := os.Getenv(testenv.EnvSharedDir); d != "" {
		return d
	}
	wd, _ := os.Getwd()
	return filepath.Join(filepath.Dir(wd), "shared")
}

func benchAttack(ctx context.Context, add func(Result), rounds int) {
	dir := filepath.Join(sharedDir(), "oatf", "scenarios")
	var files []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		add(Result{Name: "oatf: validate the scenario library", Note: "not measured: no scenario library under " + dir})
		return
	}
	data := make([][]byte, len(files))
	for i, f := range files {
		data[i], _ = os.ReadFile(f)
	}
	// Parse, validate and normalize every document; the median of rounds.
	var times []float64
	for range max(rounds, 5) {
		start := time.Now()
		for i, f := range files {
			raw, diags := oatf.Parse(f, data[i])
			if doc, _ := (oatf.ValidateOptions{Library: true}).LoadDocument(raw, diags); doc == nil {
				add(Result{Name: "oatf: validate the scenario library", Note: f + " does not load"})
				return
			}
		}
		times = append(times, float64(time.Since(start).Microseconds())/1000)
	}
	ms := median(times)
	add(target(Result{Name: fmt.Sprintf("oatf: validate the scenario library (%d documents)", len(files)), Value: ms,
		Unit: "ms", Target: "< 200 ms"}, ms < 200))

	benchPatternIndicator(ctx, add)

	// A full library run against aimock, with the binary.
	node, aimockBin, err := testenv.Paths()
	if err != nil {
		add(Result{Name: "oatf: library run against aimock", Note: "not measured: " + err.Error() + " (run make deps)"})
		return
	}
	base, stop, err := startAimock(ctx, node, aimockBin)
	if err != nil {
		add(Result{Name: "oatf: library run against aimock", Note: "not measured: " + err.Error()})
		return
	}
	defer stop()
	bin := buildWarden()
	defer os.RemoveAll(filepath.Dir(bin))
	start := time.Now()
	cmd := exec.CommandContext(ctx, bin, "attack", "run", "--library", dir, "--mcp-url", base+"/mcp",
		"--agui-url", base+"/agui", "--a2a-url", base+"/a2a", "--max-session", "10s", "--grace-period", "200ms")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run() // a library run's exit code is its worst verdict
	secs := time.Since(start).Seconds()
	counts := libraryCounts(out.String())
	add(Result{Name: fmt.Sprintf("oatf: library run against aimock (%d documents)", len(files)), Value: secs, Unit: "s",
		Note: "warden attack run --library against one aimock process (MCP, AG-UI and A2A endpoints); outcomes: " + counts})
}

// benchPatternIndicator evaluates one regex pattern indicator against one
// tools/call message on one goroutine: evaluations per second per core.
func benchPatternIndicator(ctx context.Context, add func(Result)) {
	raw, diags := oatf.Parse("b.yaml", []byte(`oatf: "0.1"
attack:
  id: B-001
  execution:
    mode: mcp_server
    state: {tools: []}
  indicators:
    - protocol: mcp
      target: "arguments.to"
      pattern:
        regex: "(audit-review|data-archive|compliance-gateway)"
`))
	doc, _ := oatf.ValidateOptions{}.LoadDocument(raw, diags)
	msg, err := attack.DecodeJSON([]byte(`{"name":"send_email","arguments":{"to":"audit-review@compliance-gateway.com","subject":"Q4","body":"Revenue: $12.4M"}}`))
	if doc == nil || err != nil {
		add(Result{Name: "oatf: pattern indicator evaluations per core", Note: "not measured: the benchmark document does not load"})
		return
	}
	ind := doc.Attack().Get("indicators").Items[0]
	ev := oatf.NewEvaluator(oatf.EvalOptions{})
	const n = 200000
	start := time.Now()
	for range n {
		if ev.Evaluate(ctx, ind, msg).Result != oatf.Matched {
			add(Result{Name: "oatf: pattern indicator evaluations per core", Note: "not measured: the indicator did not match"})
			return
		}
	}
	rate := n / time.Since(start).Seconds()
	add(target(Result{Name: "oatf: pattern indicator evaluations per core", Value: rate, Unit: "evals/s",
		Target: ">= 200,000/s"}, rate >= 200000))
}

// libraryCounts returns the summary line of a library run
// ("47 documents: 0 exploited, …").
func libraryCounts(out string) string {
	re := regexp.MustCompile(`(?m)^\d+ documents: .*$`)
	if m := re.FindAllString(out, -1); len(m) > 0 {
		return m[len(m)-1]
	}
	return "no summary line in the output"
}

// startAimock runs aimock with the attack tests' configuration on a
// loopback port and returns its base URL.
func startAimock(ctx context.Context, node, bin string) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	cfg, err := filepath.Abs(filepath.Join("internal", "attack", "testdata", "aimock", "aimock.json"))
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(node, bin, "-c", cfg, "-p", port, "--host", "127.0.0.1")
	cmd.Env = []string{"PATH=" + filepath.Dir(node) + ":" + os.Getenv("PATH")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		cmd.Wait()
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return "http://" + addr, stop, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			stop()
			return "", nil, fmt.Errorf("aimock did not listen on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
