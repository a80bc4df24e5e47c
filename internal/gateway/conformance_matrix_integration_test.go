//go:build integration

package gateway_test

// The conformance matrix: the official MCP conformance suite run against the
// go-sdk conformance peers directly and through warden, scenario by scenario,
// for each revision warden relays, in the suite's two modes:
//
//	server mode   suite ──HTTP──► everything-server                          direct
//	              suite ──HTTP──► warden ──HTTP or stdio──► everything-server through
//	client mode   everything-client ──HTTP──► suite's mock server            direct
//	              everything-client ──HTTP──► warden ──HTTP──► mock server   through
//
// Through warden a scenario must score what it scores directly, check by
// check. The differences that remain are listed in conformanceDifferences
// with their reasons (and in docs/conformance.md); any other is a failure.
// The table goes to the test log with testsum's REPORT prefix, so `make test`
// shows it even when everything passes.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/assemble"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/testenv"
)

// conformanceRevisions are the revisions of the matrix: the suite options
// of its server mode, and how many checks the go-sdk everything-server
// passes directly (per the pinned suite and server; a change means one of
// them changed, not warden).
var conformanceRevisions = []struct {
	revision  string
	stateless bool
	args      []string
	want      int
}{
	{"2025-06-18", false, []string{"--suite", "active"}, 28},
	{"2025-11-25", false, []string{"--suite", "active"}, 42},
	{"2026-07-28", true, []string{"--suite", "all"}, 115},
}

// conformanceDifference is a scenario that scores differently through
// warden, on purpose or until it is fixed. Empty fields match anything.
type conformanceDifference struct {
	mode, revision, upstream, scenario string
	kind                               differenceKind
	reason                             string
}

type differenceKind int

const (
	// stricter: warden refuses, on purpose, what the peer accepts. An
	// entry that no longer differs fails the test (the list must be true).
	stricter differenceKind = iota
	// unfixed: a known defect, shown in the table as one, that fails
	// nothing; its going away is reported (the entry is then stale).
	unfixed
)

// conformanceDifferences lists every difference between a scenario through
// warden and direct. docs/mcp-conformance.md lists them too.
var conformanceDifferences = []conformanceDifference{}

// conformanceNotRun are the suite's client scenarios the matrix leaves out,
// with the reason. They are named in the table.
var conformanceNotRun = map[string]string{
	"auth/": "warden authenticates clients itself and reaches its upstream with its own credentials: a client's OAuth token is never passed through (MCP forbids token passthrough), so the suite's authorization server is not the client's",
}

func (d conformanceDifference) matches(r matrixRow) bool {
	return (d.mode == "" || d.mode == r.mode) && (d.revision == "" || d.revision == r.revision) &&
		(d.upstream == "" || d.upstream == r.upstream) && (d.scenario == "" || d.scenario == r.scenario)
}

// TestConformanceMatrix runs the matrix and prints its table.
func TestConformanceMatrix(t *testing.T) {
	if raceEnabled {
		t.Skip("the conformance matrix (some 40 runs of the suite, a minute or two) runs in the plain test run; under the race detector it would only add minutes")
	}
	node := testenv.Node22(t)
	suite := testenv.ConformanceJS(t)
	server := testenv.GoEverythingServer(t)
	client := testenv.GoEverythingClient(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	clientScenarios := listClientScenarios(t, node, suite)

	var (
		mu   sync.Mutex
		rows []matrixRow
		errs []string
		wg   sync.WaitGroup
		sem  = make(chan struct{}, 4) // suite runs at a time: they mostly wait
	)
	run := func(row matrixRow, direct, through func() (suiteResult, error)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			var d, w suiteResult
			var derr, werr error
			d, derr = direct()
			if derr == nil {
				w, werr = through()
			}
			if err := errors.Join(derr, werr); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("%s %s %s %s: %v", row.mode, row.revision, row.upstream, row.scenario, err))
				mu.Unlock()
				return
			}
			split := row.split(d, w)
			if row.mode == "client" && len(split) == 1 && len(split[0].differences()) > 0 {
				// Client scenarios time the client's reconnections, and a
				// loaded machine can upset that (sse-retry: warden's own
				// standalone GET reaching the suite late passes for an
				// early reconnection). One more run through warden, shown
				// in the table.
				if again, err := through(); err == nil {
					retry := row.split(d, again)
					if len(retry) == 1 && len(retry[0].differences()) == 0 {
						retry[0].note = "2nd run; the 1st differed: " + strings.Join(split[0].differences(), "; ")
						split = retry
					}
				}
			}
			mu.Lock()
			rows = append(rows, split...)
			mu.Unlock()
		}()
	}

	for _, rev := range conformanceRevisions {
		args := append([]string{"--spec-version", rev.revision}, rev.args...)
		serverLeg := func(upstream, url string, direct func() (suiteResult, error)) {
			run(matrixRow{mode: "server", revision: rev.revision, upstream: upstream}, direct, func() (suiteResult, error) {
				return runSuite(node, suite, append([]string{"server", "--url", url}, args...), nil)
			})
		}
		// A direct run is shared by the upstreams that put the same server
		// behind warden.
		directURL := startEverythingServer(t, server, rev.stateless)
		directRun := sharedRun(func() (suiteResult, error) {
			direct, err := runSuite(node, suite, append([]string{"server", "--url", directURL}, args...), nil)
			if err == nil && (direct.passed != rev.want || direct.failed != 0) {
				err = fmt.Errorf("the server alone scored %d passed, %d failed; want %d passed: the suite or server changed", direct.passed, direct.failed, rev.want)
			}
			return direct, err
		})
		serverLeg("http", startGateway(t, upstreamYAML("url: "+startEverythingServer(t, server, rev.stateless))), directRun)
		serverLeg("stdio", startGateway(t, upstreamYAML(fmt.Sprintf("command: [%q]", server))), directRun)
		if !rev.stateless {
			// A stateless server (no Mcp-Session-Id) at a stateful
			// revision: warden must not make it look stateful.
			directURL := startEverythingServer(t, server, true)
			serverLeg("http/stateless", startGateway(t, upstreamYAML("url: "+startEverythingServer(t, server, true))),
				func() (suiteResult, error) {
					return runSuite(node, suite, append([]string{"server", "--url", directURL}, args...), nil)
				})
		}

		for _, scenario := range clientScenarios[rev.revision] {
			args := []string{"client", "--scenario", scenario, "--spec-version", rev.revision}
			run(matrixRow{mode: "client", revision: rev.revision, upstream: "http", scenario: scenario},
				func() (suiteResult, error) {
					return runSuite(node, suite, append(args, "--command", client), nil)
				},
				func() (suiteResult, error) {
					return runSuite(node, suite, append(args, "--command", self), []string{envClientThroughWarden + "=" + client})
				})
		}
	}
	wg.Wait()
	for _, e := range errs {
		t.Error(e)
	}
	reportMatrix(t, rows)

	// warden's own DNS-rebinding protection holds on every leg that has
	// the scenario, whatever the server does.
	rebinding := 0
	for _, r := range rows {
		if r.mode != "server" || r.scenario != "dns-rebinding-protection" {
			continue
		}
		rebinding++
		for _, c := range r.through {
			if c.Status != "SUCCESS" {
				t.Errorf("%s %s: through warden, dns-rebinding-protection %s: %s %s", r.revision, r.upstream, c.key, c.Status, c.ErrorMessage)
			}
		}
	}
	if rebinding != 5 {
		t.Errorf("dns-rebinding-protection ran on %d legs, want 5 (2025-11-25 with three upstreams, 2026-07-28 with two)", rebinding)
	}
}

func upstreamYAML(upstream string) string {
	return "version: 1\ngateway:\n  upstreams:\n    - name: everything\n      " + upstream + "\n"
}

// sharedRun runs f once, for the first caller, and gives every caller its
// result.
func sharedRun(f func() (suiteResult, error)) func() (suiteResult, error) {
	var once sync.Once
	var res suiteResult
	var err error
	return func() (suiteResult, error) {
		once.Do(func() { res, err = f() })
		return res, err
	}
}

// matrixRow is one scenario of one leg, with its checks directly and
// through warden.
type matrixRow struct {
	mode, revision, upstream, scenario string
	direct, through                    []suiteCheck
	note                               string // how the row came about, if not by one run each
}

// split makes one row per scenario of the two results.
func (r matrixRow) split(direct, through suiteResult) []matrixRow {
	names := map[string]bool{}
	for s := range direct.scenarios {
		names[s] = true
	}
	for s := range through.scenarios {
		names[s] = true
	}
	var out []matrixRow
	for s := range names {
		row := r
		row.scenario, row.direct, row.through = s, direct.scenarios[s], through.scenarios[s]
		out = append(out, row)
	}
	return out
}

// differences lists the checks whose status differs, or that ran on one
// side only. A scenario that ran no check differs from everything.
func (r matrixRow) differences() []string {
	var out []string
	if len(r.direct) == 0 {
		out = append(out, "no check ran directly")
	}
	if len(r.through) == 0 {
		out = append(out, "no check ran through warden")
	}
	through := map[string]suiteCheck{}
	for _, c := range r.through {
		through[c.key] = c
	}
	for _, d := range r.direct {
		w, ok := through[d.key]
		delete(through, d.key)
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: %s directly, not run through warden", d.key, d.Status))
		case w.Status != d.Status:
			out = append(out, fmt.Sprintf("%s: %s directly, %s through warden (%s)", d.key, d.Status, w.Status, w.ErrorMessage))
		}
	}
	for _, w := range through {
		out = append(out, fmt.Sprintf("%s: not run directly, %s through warden (%s)", w.key, w.Status, w.ErrorMessage))
	}
	sort.Strings(out)
	return out
}

func score(checks []suiteCheck) string {
	passed, failed := 0, 0
	for _, c := range checks {
		switch c.Status {
		case "SUCCESS":
			passed++
		case "FAILURE":
			failed++
		}
	}
	return fmt.Sprintf("%d/%d", passed, failed)
}

// reportMatrix prints the table (passed/failed checks per scenario) and
// fails every difference that is not listed.
func reportMatrix(t *testing.T, rows []matrixRow) {
	// Server mode first, then client mode; within each by revision,
	// upstream and scenario.
	sortKey := func(r matrixRow) string {
		return fmt.Sprint(r.mode != "server", " ", r.revision, " ", r.upstream, " ", r.scenario)
	}
	sort.Slice(rows, func(i, j int) bool { return sortKey(rows[i]) < sortKey(rows[j]) })
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, "REPORT "+format+"\n", args...) }
	line("conformance: the MCP conformance suite through warden against direct (checks passed/failed)")
	const row = "%-6s  %-10s  %-14s  %-45s  %-7s  %-7s  %s"
	line(row, "mode", "revision", "upstream", "scenario", "direct", "warden", "verdict")
	same, listed, unfixedN, differ := 0, 0, 0, 0
	for _, r := range rows {
		diffs := r.differences()
		i := slices.IndexFunc(conformanceDifferences, func(d conformanceDifference) bool { return d.matches(r) })
		verdict := "same"
		switch {
		case len(diffs) == 0 && i >= 0 && conformanceDifferences[i].kind == unfixed:
			verdict = "same (listed as unfixed: drop the entry)"
			t.Logf("%s %s %s %s: equal now; its conformanceDifferences entry is stale", r.mode, r.revision, r.upstream, r.scenario)
			same++
		case len(diffs) == 0 && i >= 0:
			verdict = "SAME BUT LISTED"
			t.Errorf("%s %s %s %s: listed as different (%s) but scores the same: drop the entry", r.mode, r.revision, r.upstream, r.scenario, conformanceDifferences[i].reason)
			differ++
		case len(diffs) == 0:
			same++
			if r.note != "" {
				verdict = "same (" + r.note + ")"
				t.Logf("%s %s %s %s: %s", r.mode, r.revision, r.upstream, r.scenario, r.note)
			}
		case i >= 0 && conformanceDifferences[i].kind == unfixed:
			verdict = "UNFIXED: " + conformanceDifferences[i].reason
			unfixedN++
		case i >= 0 && conformanceDifferences[i].kind == stricter:
			verdict = "stricter: " + conformanceDifferences[i].reason
			listed++
		default:
			verdict = "DIFFERS"
			differ++
			t.Errorf("%s %s %s %s: through warden differs from direct:\n  %s", r.mode, r.revision, r.upstream, r.scenario, strings.Join(diffs, "\n  "))
		}
		if len(diffs) > 0 && i >= 0 {
			t.Logf("%s %s %s %s (listed):\n  %s", r.mode, r.revision, r.upstream, r.scenario, strings.Join(diffs, "\n  "))
		}
		line(row, r.mode, r.revision, r.upstream, r.scenario, score(r.direct), score(r.through), verdict)
	}
	for prefix, why := range conformanceNotRun {
		line(row, "client", "all", "http", prefix+"*", "-", "-", "not run through warden: "+why)
	}
	line("conformance: %d scenario runs: %d same, %d deliberately stricter, %d unfixed (listed), %d differ", len(rows), same, listed, unfixedN, differ)
	fmt.Print(b.String())
	if len(rows) == 0 {
		t.Error("the matrix ran no scenario")
	}
}

// suiteResult is what one run of the suite reported.
type suiteResult struct {
	passed, failed int                     // the server mode's Total line
	scenarios      map[string][]suiteCheck // scenario → its checks, in order
}

type suiteCheck struct {
	key                            string // ID/Name#n: unique within the scenario
	ID, Name, Status, ErrorMessage string
}

var (
	suiteTotal = regexp.MustCompile(`Total: (\d+) passed, (\d+) failed`)
	resultDir  = regexp.MustCompile(`^(server-)?(.+)-\d{4}-\d{2}-\d{2}T[0-9-]+Z$`)
)

// runSuite runs the suite with args, plus an output folder, and reads the
// checks of every scenario it ran. It fails when the suite wrote no checks.
func runSuite(node, suite string, args, env []string) (suiteResult, error) {
	out, err := os.MkdirTemp("", "warden-conformance-")
	if err != nil {
		return suiteResult{}, err
	}
	defer os.RemoveAll(out)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a failure guard
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append(append([]string{suite}, args...), "--output-dir", out)...)
	cmd.Dir = out
	cmd.Env = append(append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0"), env...)
	output, runErr := cmd.CombinedOutput()
	res := suiteResult{scenarios: map[string][]suiteCheck{}}
	if m := suiteTotal.FindSubmatch(output); m != nil {
		fmt.Sscan(string(m[1]), &res.passed)
		fmt.Sscan(string(m[2]), &res.failed)
	}
	files, _ := filepath.Glob(filepath.Join(out, "*", "checks.json"))
	if len(files) == 0 {
		return res, fmt.Errorf("the suite wrote no checks (exit: %v):\n%s", runErr, tail(output, 30))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return res, err
		}
		var checks []suiteCheck
		if err := json.Unmarshal(data, &checks); err != nil {
			return res, fmt.Errorf("%s: %v", f, err)
		}
		m := resultDir.FindStringSubmatch(filepath.Base(filepath.Dir(f)))
		if m == nil {
			return res, fmt.Errorf("unexpected result folder %s", filepath.Dir(f))
		}
		seen := map[string]int{}
		for i := range checks {
			c := &checks[i]
			k := c.ID + "/" + c.Name
			c.key = fmt.Sprintf("%s#%d", k, seen[k])
			seen[k]++
		}
		res.scenarios[m[2]] = checks
	}
	return res, nil
}

var listedScenario = regexp.MustCompile(`^\s+- (\S+) \[([^\]]*)\]$`)

// listClientScenarios asks the suite for its client scenarios, by revision,
// without those conformanceNotRun leaves out.
func listClientScenarios(t *testing.T, node, suite string) map[string][]string {
	t.Helper()
	out, err := exec.Command(node, suite, "list").Output()
	if err != nil {
		t.Fatalf("conformance list: %v", err)
	}
	byRevision := map[string][]string{}
	inClient := false
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		l := sc.Text()
		if strings.HasSuffix(l, ":") {
			inClient = strings.HasPrefix(l, "Client scenarios")
			continue
		}
		m := listedScenario.FindStringSubmatch(l)
		if !inClient || m == nil {
			continue
		}
		skip := false
		for prefix := range conformanceNotRun {
			skip = skip || strings.HasPrefix(m[1], prefix)
		}
		if skip {
			continue
		}
		for _, rev := range strings.Split(m[2], ",") {
			byRevision[rev] = append(byRevision[rev], m[1])
		}
	}
	if len(byRevision["2026-07-28"]) == 0 {
		t.Fatalf("conformance list named no client scenario for 2026-07-28:\n%s", out)
	}
	return byRevision
}

// envClientThroughWarden, set to the everything-client's path, turns this
// test binary into the client mode's --command for the through-warden leg:
// it starts warden with the suite's URL (its last argument) as its upstream,
// runs the client against warden, and exits with the client's status.
const envClientThroughWarden = "WARDEN_TEST_CONFORMANCE_CLIENT"

func init() {
	if client := os.Getenv(envClientThroughWarden); client != "" && len(os.Args) == 2 {
		os.Exit(clientThroughWarden(client, os.Args[1]))
	}
}

func clientThroughWarden(client, upstream string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "warden wrapper:", err)
		return 1
	}
	cfg, err := config.Parse([]byte(fmt.Sprintf("version: 1\ngateway:\n  upstreams:\n    - name: suite\n      url: %q\n", upstream)), "conformance.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		return fail(err)
	}
	opts, err := assemble.FromConfig(cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return fail(err)
	}
	g, err := gateway.New(opts)
	if err != nil {
		return fail(err)
	}
	defer g.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	srv := &http.Server{Handler: g.Handler()}
	go srv.Serve(l)
	defer srv.Close()

	cmd := exec.Command(client, "http://"+l.Addr().String()+"/mcp")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		return fail(err)
	}
	return 0
}
