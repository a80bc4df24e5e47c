package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMain lets a test run this binary as a floor relay, as the floors
// section runs the bench binary.
func TestMain(m *testing.M) {
	if kind := os.Getenv("BENCH_TEST_FLOOR"); kind != "" {
		os.Exit(runFloor(kind, "", "", os.Args[1:]))
	}
	if ms := os.Getenv("BENCH_TEST_BURN_MS"); ms != "" {
		burnAndReport(ms)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestParseStatCPU(t *testing.T) {
	// utime 150 and stime 25 ticks; the command name holds ") " itself.
	line := "4242 (we) ird name) S 1 4242 4242 0 -1 4194560 100 0 0 0 150 25 0 0 20 0 3 0 100 1000 10 18446744073709551615\n"
	got, err := parseStatCPU("stat", []byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if want := 175 * clockTick; got != want {
		t.Errorf("CPU = %v, want %v", got, want)
	}
	if _, err := parseStatCPU("stat", []byte("4242 (short) S 1 2")); err == nil || !strings.Contains(err.Error(), "fields") {
		t.Errorf("a truncated stat line: err = %v, want one about its fields", err)
	}
}

func TestProcCPUGrowsWithWork(t *testing.T) {
	before, err := procCPU(0)
	if err != nil {
		t.Fatal(err)
	}
	for start := cpuTime(); cpuTime()-start < 100*time.Millisecond; {
	}
	after, err := procCPU(0)
	if err != nil {
		t.Fatal(err)
	}
	if d := after - before; d < 50*time.Millisecond {
		t.Errorf("after 100 ms of work /proc/self/stat moved by %v", d)
	}
	if _, err := procCPU(1 << 30); err == nil {
		t.Error("a pid that does not exist: no error")
	}
}

// burnAndReport burns ms of CPU (plus 5 ms, between two 10 ms ticks),
// prints the CPU time getrusage(2) gives this process, in nanoseconds, and
// waits for its stdin to close, idle, so that the parent reads its CPU
// while it is alive.
func burnAndReport(ms string) {
	n, _ := strconv.Atoi(ms)
	for cpuTime() < time.Duration(n)*time.Millisecond+5*time.Millisecond {
	}
	fmt.Println(int64(cpuTime()))
	io.Copy(io.Discard, os.Stdin)
}

// The CPU a busy child process burns is what procCPU and procSched read
// from outside, within a millisecond of what the child itself reports;
// /proc/PID/stat's ticks are 10 ms apart and cannot be that close.
func TestProcCPUNanosecondsOfABusyChild(t *testing.T) {
	if !clockWorks() {
		t.Skip("this kernel does not let a process read another's CPU clock: " + cpuAccounting())
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "BENCH_TEST_BURN_MS=200")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil {
		t.Fatalf("the child printed %q", line)
	}
	reported := time.Duration(n)
	if reported < 205*time.Millisecond {
		t.Fatalf("the child reports %v, less than it was asked to burn", reported)
	}
	const tolerance = time.Millisecond
	got, err := procCPU(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if d := got - reported; d < -tolerance || d > 2*tolerance+reported/100 {
		t.Errorf("procCPU read %v of the child, which reports %v", got, reported)
	}
	run, _, err := procSched(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	// schedstat counts live threads only: a Go runtime keeps its threads.
	if d := run - reported; d < -tolerance-reported/100 || d > 2*tolerance+reported/100 {
		t.Errorf("schedstat's run time of the child is %v, which reports %v", run, reported)
	}
}

func TestParseSchedstat(t *testing.T) {
	run, wait, err := parseSchedstat("schedstat", []byte("8305757 2178002 2\n"))
	if err != nil || run != 8305757 || wait != 2178002 {
		t.Errorf("run %d, wait %d, err %v: want 8305757, 2178002", run, wait, err)
	}
	if _, _, err := parseSchedstat("task/7/schedstat", []byte("1 2\n")); err == nil || !strings.Contains(err.Error(), "task/7/schedstat: 2 fields") {
		t.Errorf("two fields: err = %v, want one naming the file and the count", err)
	}
}

// The byte-pipe floor passes every byte both ways unchanged and exits when
// its client closes stdin.
func TestFloorStdioRelaysBytes(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "cat")
	cmd.Env = append(os.Environ(), "BENCH_TEST_FLOOR=stdio")
	in, _ := cmd.StdinPipe()
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 1<<20)
	rand.Read(data)
	go func() { in.Write(data); in.Close() }()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("floor exited: %v", err)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the floor did not exit after its stdin closed")
	}
	if !bytes.Equal(out.Bytes(), data) {
		t.Errorf("relayed %d bytes, not the %d sent", out.Len(), len(data))
	}
}

// The HTTP floor forwards a request and streams the answer; it refuses to
// listen anywhere but loopback.
func TestFloorHTTP(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s %s\n\n", r.URL.Path, body)
	}))
	defer up.Close()
	if err := floorHTTP("0.0.0.0:0", up.URL); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("listen on 0.0.0.0: err = %v, want a refusal", err)
	}
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	go floorHTTP(addr, up.URL)
	var resp *http.Response
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err = http.Post("http://"+addr+"/mcp", "application/json", strings.NewReader(`{"id":1}`))
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	if want := "data: /mcp {\"id\":1}\n"; line != want {
		t.Errorf("through the floor: %q, want %q", line, want)
	}
}

// Every appended record is in the file, whole, once, when the appenders
// have returned.
func TestGroupFileKeepsEveryRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "floor.log")
	g, err := openGroupFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const n, each = 8, 50
	var wg sync.WaitGroup
	var mu sync.Mutex
	seq := uint64(0)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ack := make(chan error, 1)
			for range each {
				mu.Lock()
				seq++
				s := seq
				mu.Unlock()
				if err := g.append(encodeFloorRecord(nil, s, time.Now()), ack); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	// Read before close: an append returned only after its record was
	// written and synced.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g.close()
	// The file grows in zeroed steps: the records end at the first zero,
	// and no zero may sit between them.
	data = bytes.TrimRight(data, "\x00")
	seen := map[uint64]bool{}
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var rec struct {
			Seq uint64 `json:"seq"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %d: %v: %q", i+1, err, line)
		}
		if seen[rec.Seq] {
			t.Errorf("line %d: seq %d twice", i+1, rec.Seq)
		}
		seen[rec.Seq] = true
	}
	if len(seen) != n*each {
		t.Errorf("%d records in the file, want %d", len(seen), n*each)
	}
}

// The report shows a row's rounds, says why a row was not measured, and
// says when a target is not met.
func TestMarkdownRows(t *testing.T) {
	rep := &report{Date: "now", Go: "go", CPUs: 2, Results: []Result{
		spread(Result{Name: "spread row", Unit: "µs"}, []float64{3, 1, 2}),
		{Name: "skipped row", Unit: "calls/s", Target: "≥ 1.5", Skipped: "npm is not installed"},
		judge(Result{Name: "missed row", Value: 2, Unit: "×", Target: "≤ 1.0"}, false, "the pipe copies bytes"),
		judge(Result{Name: "met row", Value: 1, Unit: "×", Target: "≤ 1.0", Note: "fine"}, true, "unused"),
		target(Result{Name: "old missed row", Value: 2, Unit: "×", Target: "≤ 1.0"}, false),
	}}
	md := markdown(rep, 3, 10, 8, 100)
	for _, want := range []string{
		"| spread row | 2.00 µs (1.00–3.00) |  |  |",
		"| skipped row | — | ≥ 1.5 |  |",
		"- skipped row: not measured in this run: npm is not installed.",
		"| missed row | 2.00 × | ≤ 1.0 | **no** |",
		"- missed row: target not met: the pipe copies bytes.",
		"- met row: fine.",
		"- old missed row: target not met.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	// The header says how the separate-process rows read CPU and when a
	// row gets no verdict.
	for _, want := range []string{"utime + stime from /proc/PID/stat, in 10 ms ticks", noisyThresholds, "median of the rounds with their min–max"} {
		if !strings.Contains(md, want) {
			t.Errorf("the report's header lacks %q", want)
		}
	}
	rep.CPUAccounting = cpuAccounting()
	if md := markdown(rep, 3, 10, 8, 100); !strings.Contains(md, "A relay's CPU is "+cpuAccounting()) {
		t.Errorf("the report's header does not name the run's CPU accounting %q", cpuAccounting())
	}
	if strings.Contains(md, "unused") {
		t.Error("a met target's row carries the reason it would not be met")
	}
	data, _ := json.Marshal(rep.Results[0])
	var back Result
	json.Unmarshal(data, &back)
	if back.Min == nil || *back.Min != 1 || *back.Max != 3 || back.Value != 2 {
		t.Errorf("results.json row %s: min, median, max not 1, 2, 3", data)
	}
}

// Without the peers installed, and with no deps.sh to install them, the
// bridge rows are skipped with a reason that names what is missing.
func TestPeersMissingGiveAReason(t *testing.T) {
	deps := t.TempDir()
	t.Setenv("WARDEN_DEPS_DIR", deps)
	for _, v := range []string{"WARDEN_NODE22", "WARDEN_MCP_PROXY_BIN", "WARDEN_SUPERGATEWAY_BIN"} {
		t.Setenv(v, "")
	}
	t.Chdir(t.TempDir()) // no scripts/deps.sh here
	node, _, _, reason := peerPaths()
	if node != "" || !strings.Contains(reason, "not installed") || !strings.Contains(reason, filepath.Join(deps, "mcp-proxy")) {
		t.Errorf("node %q, reason %q: want no paths and a reason naming the missing mcp-proxy", node, reason)
	}
}

func TestParseProcStatAndPressure(t *testing.T) {
	stat := "cpu  100 5 50 1000 7 1 2 3 0 0\ncpu0 50 2 25 500 3 0 1 1 0 0\n"
	total, busy, steal, iowait, err := parseProcStat([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	// busy: user 100 + nice 5 + system 50 + irq 1 + softirq 2; idle and
	// iowait are not busy, steal is not ours to count as busy.
	if total != 1168*clockTick || busy != 158*clockTick || steal != 3*clockTick || iowait != 7*clockTick {
		t.Errorf("total %v busy %v steal %v iowait %v", total, busy, steal, iowait)
	}
	if _, _, _, _, err := parseProcStat([]byte("intr 1 2 3\n")); err == nil || !strings.Contains(err.Error(), `want "cpu"`) {
		t.Errorf("no cpu line: err = %v", err)
	}
	p, err := parsePressure([]byte("some avg10=43.65 avg60=26.14 avg300=18.51 total=34818801882\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"))
	if err != nil || p != 34818801882*time.Microsecond {
		t.Errorf("pressure %v, err %v", p, err)
	}
	if _, err := parsePressure([]byte("full total=1\n")); err == nil {
		t.Error("no some line: no error")
	}
}

// A busy child counts as the bench's own CPU, not as other processes'
// noise: the tree's CPU grows by what the child burns.
func TestTreeCPUCountsChildren(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	before, err := treeCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "BENCH_TEST_BURN_MS=300")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	alive, err := treeCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d := alive - before; d < 300*time.Millisecond {
		t.Errorf("the tree's CPU grew by %v while a child burned 300 ms", d)
	}
	in.Close()
	cmd.Wait()
	reaped, err := treeCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Reaped, the child counts in this process's cutime, in 10 ms ticks.
	if d := reaped - before; d < 290*time.Millisecond {
		t.Errorf("once the child was reaped the tree's CPU had grown by %v, want about 300 ms", d)
	}
	s, err := readHost()
	if err != nil {
		t.Fatal(err)
	}
	if s.total <= 0 || s.busy <= 0 || s.ours <= 0 {
		t.Errorf("host sample %+v", s)
	}
}

// The host's activity becomes shares of the machine's CPU time; a target
// row measured on a noisy host gets no verdict, met or not, and says why;
// on a quiet host the verdict stands.
func TestNoisyHostWithholdsVerdicts(t *testing.T) {
	sample := func(total, busy, steal, ours, pressure time.Duration) hostSample {
		return hostSample{total: total, busy: busy, steal: steal, ours: ours, pressure: pressure, load1: 1}
	}
	var quiet, noisy, stolen hostNoise
	// 2 CPUs for 1 s: 2 s of CPU time; the bench used 1.5 s, others 0.1 s.
	quiet.add(sample(0, 0, 0, 0, 0), sample(2*time.Second, 1600*time.Millisecond, 0, 1500*time.Millisecond, 300*time.Millisecond), time.Second)
	noisy.add(sample(0, 0, 0, 0, 0), sample(2*time.Second, 1900*time.Millisecond, 0, 1400*time.Millisecond, 900*time.Millisecond), time.Second)
	stolen.add(sample(0, 0, 0, 0, 0), sample(2*time.Second, 1500*time.Millisecond, 100*time.Millisecond, 1500*time.Millisecond, 0), time.Second)
	if h := quiet.noise(); h.OthersCPUPct != 5 || h.noisy() != "" || h.CPUPressurePct == nil || *h.CPUPressurePct != 30 {
		t.Errorf("quiet host: %+v, noisy %q", h, h.noisy())
	}
	if h := noisy.noise(); h.OthersCPUPct != 25 || !strings.Contains(h.noisy(), "25%") {
		t.Errorf("others at 25%%: %+v, noisy %q", h, h.noisy())
	}
	if h := stolen.noise(); h.StealPct != 5 || !strings.Contains(h.noisy(), "steal") {
		t.Errorf("steal at 5%%: %+v, noisy %q", h, h.noisy())
	}
	var both hostNoise
	both.merge(quiet)
	both.merge(noisy)
	if h := both.noise(); h.OthersCPUPct != 15 || h.Seconds != 2 {
		t.Errorf("two windows merged: %+v", h)
	}

	var rows []Result
	keep := func(r Result) { rows = append(rows, r) }
	missed := judge(Result{Name: "ratio", Value: 1.6, Unit: "×", Target: "≤ 1.3", Note: "paired by round"}, false, "warden decodes")
	met := judge(Result{Name: "other ratio", Value: 0.9, Unit: "×", Target: "≤ 1.0"}, true, "")
	plain := Result{Name: "cpu", Value: 200, Unit: "µs"}
	add := withHost(keep, noisy.noise())
	add(plain)
	add(missed)
	add(met)
	for _, r := range rows[1:] {
		if r.Met != nil || r.Verdict != "noisy host" || !strings.HasPrefix(r.Note, "no verdict, noisy host: other processes used 25%") {
			t.Errorf("noisy host, row %q: met %v verdict %q note %q", r.Name, r.Met, r.Verdict, r.Note)
		}
		if r.Host == nil || r.Host.OthersCPUPct != 25 {
			t.Errorf("row %q carries host %+v", r.Name, r.Host)
		}
	}
	if !strings.HasSuffix(rows[1].Note, "; paired by round") || strings.Contains(rows[1].Note, "target not met") {
		t.Errorf("a withheld row's note: %q", rows[1].Note)
	}
	if rows[0].Verdict != "" || !strings.Contains(rows[0].Note, "host during these rows: other processes 25.0% of the CPU") {
		t.Errorf("the first row: verdict %q note %q", rows[0].Verdict, rows[0].Note)
	}
	md := markdown(&report{Results: rows}, 5, 10, 8, 100)
	if !strings.Contains(md, "| ratio | 1.60 × | ≤ 1.3 | noisy host |") {
		t.Errorf("the report does not show the withheld verdict:\n%s", md)
	}
	data, _ := json.Marshal(rows[1])
	if !strings.Contains(string(data), `"verdict":"noisy host"`) || strings.Contains(string(data), `"met"`) || !strings.Contains(string(data), `"others_cpu_pct":25`) {
		t.Errorf("results.json row: %s", data)
	}

	rows = nil
	add = withHost(keep, quiet.noise())
	add(missed)
	add(met)
	if rows[0].Met == nil || *rows[0].Met || !strings.HasPrefix(rows[0].Note, "target not met: warden decodes") || rows[0].Verdict != "" {
		t.Errorf("quiet host, missed: met %v note %q", rows[0].Met, rows[0].Note)
	}
	if rows[1].Met == nil || !*rows[1].Met {
		t.Errorf("quiet host, met: met %v", rows[1].Met)
	}
}

func TestBalancedRounds(t *testing.T) {
	for _, c := range []struct{ rounds, n, want int }{{5, 5, 5}, {5, 2, 6}, {5, 3, 6}, {3, 5, 3}, {1, 2, 1}, {6, 3, 6}, {5, 0, 5}} {
		if got := balanced(c.rounds, c.n); got != c.want {
			t.Errorf("balanced(%d, %d) = %d, want %d", c.rounds, c.n, got, c.want)
		}
	}
}
