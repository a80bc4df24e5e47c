//go:build unix

package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

func init() {
	testChildren["env"] = childEnv
	testChildren["stderr"] = childStderr
	testChildren["polite"] = childPolite
	testChildren["term"] = childTerm
	testChildren["stubborn"] = childStubborn
	testChildren["grandchild"] = childGrandchild
	testChildren["sleep"] = func() int { time.Sleep(time.Minute); return 0 } // kept: a child that outlives the test unless killed
}

// Child modes. Those that handle signals announce "ready" once their handlers
// are installed, so that the test never signals a child still starting up.

// childEnv writes one notification whose params map each variable in its
// environment to its value, then exits.
func childEnv() int {
	vars := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	params, _ := json.Marshal(vars)
	fmt.Printf(`{"jsonrpc":"2.0","method":"env","params":%s}`+"\n", params)
	return 0
}

// childStderr writes a short line, a blank line and a 100 KiB line to stderr,
// and a notification to stdout, then exits.
func childStderr() int {
	fmt.Fprint(os.Stderr, "first line from the child\r\n\n")
	fmt.Fprint(os.Stderr, "long:"+strings.Repeat("x", 100<<10)+"\n")
	fmt.Fprint(os.Stderr, "last line, no newline")
	fmt.Println(`{"jsonrpc":"2.0","method":"stdout"}`)
	return 0
}

func childReady() {
	fmt.Printf(`{"jsonrpc":"2.0","method":"ready","params":{"pid":%d}}`+"\n", os.Getpid())
}

// onTermMarker makes SIGTERM create the file named by $WARDEN_TEST_MARKER
// and exit with code 7.
func onTermMarker() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	go func() {
		<-ch
		os.WriteFile(os.Getenv("WARDEN_TEST_MARKER"), []byte("SIGTERM"), 0o600)
		os.Exit(7)
	}()
}

// childPolite exits when stdin ends; SIGTERM leaves a marker.
func childPolite() int {
	onTermMarker()
	childReady()
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// childTerm ignores the end of stdin and exits on SIGTERM, leaving a marker.
func childTerm() int {
	onTermMarker()
	childReady()
	io.Copy(io.Discard, os.Stdin)
	time.Sleep(time.Minute) // kept: the child's own behaviour, it lives until SIGTERM
	return 0
}

// childStubborn ignores the end of stdin and SIGTERM.
func childStubborn() int {
	signal.Ignore(syscall.SIGTERM)
	childReady()
	io.Copy(io.Discard, os.Stdin)
	time.Sleep(time.Minute) // kept: the child's own behaviour, it lives until SIGKILL
	return 0
}

// childGrandchild starts a grandchild that sleeps (in its own process group,
// which it inherits), announces its pid, then behaves as
// $WARDEN_TEST_LEADER says: "polite" or "stubborn".
func childGrandchild() int {
	exe, _ := os.Executable()
	gc := exec.Command(exe)
	gc.Env = append(os.Environ(), testChildEnv+"=sleep")
	if err := gc.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "starting the grandchild:", err)
		return 1
	}
	if os.Getenv("WARDEN_TEST_LEADER") == "stubborn" {
		signal.Ignore(syscall.SIGTERM)
	}
	fmt.Printf(`{"jsonrpc":"2.0","method":"ready","params":{"grandchild":%d}}`+"\n", gc.Process.Pid)
	io.Copy(io.Discard, os.Stdin)
	if os.Getenv("WARDEN_TEST_LEADER") == "stubborn" {
		time.Sleep(time.Minute) // kept: the child's own behaviour, it outlives its stdin
	}
	return 0
}

// startChild runs the test binary in the given child mode; Close is
// registered as cleanup.
func startChild(t *testing.T, mode string, spec CommandSpec) *CommandConn {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	spec.Path = exe
	if spec.Env == nil {
		spec.Env = map[string]string{}
	}
	spec.Env[testChildEnv] = mode
	// A -race child otherwise sleeps a second before exiting.
	spec.Env["GORACE"] = "atexit_sleep_ms=0"
	if spec.Name == "" {
		spec.Name = mode
	}
	c, err := Command(spec)
	if err != nil {
		t.Fatalf("Command: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readReady reads the child's "ready" notification and returns its params.
func readReady(t *testing.T, c Conn) map[string]int {
	t.Helper()
	m := mustRead(t, c)
	var p map[string]int
	if m.Method != "ready" || json.Unmarshal(m.Params, &p) != nil {
		t.Fatalf("want the ready notification, got %s", m.Raw)
	}
	return p
}

func TestContractCommand(t *testing.T) {
	newPair := func(t *testing.T) (Conn, Conn) {
		rec := &logRecorder{} // keeps the shutdown warnings out of the test output
		c := startChild(t, "echo", CommandSpec{ShutdownTimeout: 200 * time.Millisecond, Logger: rec.logger()})
		return c, c
	}
	testConnContract(t, newPair)
	testPushContract(t, newPair)
}

func TestCommandEnvAllowlist(t *testing.T) {
	const canary = "canary-5b0c1e9e-not-for-children"
	t.Setenv("WARDEN_TEST_SECRET", canary)
	t.Setenv("LANG", "C.UTF-8") // on the default allowlist

	childVars := func(t *testing.T, spec CommandSpec) map[string]string {
		c := startChild(t, "env", spec)
		m := mustRead(t, c)
		var vars map[string]string
		if err := json.Unmarshal(m.Params, &vars); err != nil {
			t.Fatalf("env params: %v", err)
		}
		return vars
	}
	assertNoCanary := func(t *testing.T, vars map[string]string) {
		for k, v := range vars {
			if k == "WARDEN_TEST_SECRET" || strings.Contains(v, canary) {
				t.Errorf("warden's environment leaked to the child: %s=%s", k, v)
			}
		}
	}

	t.Run("Default", func(t *testing.T) {
		vars := childVars(t, CommandSpec{Env: map[string]string{"EXTRA": "set-by-spec"}})
		assertNoCanary(t, vars)
		if vars["PATH"] != os.Getenv("PATH") {
			t.Errorf("PATH = %q, want warden's %q", vars["PATH"], os.Getenv("PATH"))
		}
		if vars["LANG"] != "C.UTF-8" {
			t.Errorf("LANG = %q, want it passed through", vars["LANG"])
		}
		if vars["EXTRA"] != "set-by-spec" {
			t.Errorf("EXTRA = %q, want the Env entry", vars["EXTRA"])
		}
		for k := range vars {
			if k != testChildEnv && k != "GORACE" && k != "EXTRA" && !slices.Contains(DefaultPassEnv, k) {
				t.Errorf("child has %s, which is neither allowlisted nor in Env", k)
			}
		}
	})

	t.Run("EmptyPassEnvPassesNothing", func(t *testing.T) {
		// A nil exec.Cmd.Env would mean warden's whole environment.
		vars := childVars(t, CommandSpec{PassEnv: []string{}})
		assertNoCanary(t, vars)
		if len(vars) != 2 || vars[testChildEnv] != "env" || vars["GORACE"] == "" {
			t.Errorf("child environment = %v, want only the Env entries", vars)
		}
	})

	t.Run("EnvOverridesPassEnv", func(t *testing.T) {
		vars := childVars(t, CommandSpec{
			PassEnv: []string{"LANG", "WARDEN_TEST_UNSET_VAR"},
			Env:     map[string]string{"LANG": "fr_FR.UTF-8"},
		})
		if vars["LANG"] != "fr_FR.UTF-8" {
			t.Errorf("LANG = %q, want Env to win", vars["LANG"])
		}
		if _, ok := vars["WARDEN_TEST_UNSET_VAR"]; ok {
			t.Error("an unset PassEnv variable reached the child")
		}
	})

	t.Run("BadNames", func(t *testing.T) {
		for _, spec := range []CommandSpec{
			{Path: "true", Env: map[string]string{"A=B": "x"}},
			{Path: "true", Env: map[string]string{"": "x"}},
			{Path: "true", Env: map[string]string{"A": "x\x00y"}},
			{Path: "true", PassEnv: []string{"PATH=/evil"}},
		} {
			if c, err := Command(spec); err == nil {
				c.Close()
				t.Errorf("Command(%+v) accepted a bad environment", spec)
			}
		}
	})
}

func TestCommandStderrToLogger(t *testing.T) {
	rec := &logRecorder{}
	c := startChild(t, "stderr", CommandSpec{Name: "up1", Logger: rec.logger()})
	if m := mustRead(t, c); m.Method != "stdout" {
		t.Fatalf("stdout carried %s, want only the child's notification", m.Raw)
	}
	if r := awaitRead(t, readAsync(context.Background(), c), "at exit"); !errors.Is(r.err, io.EOF) {
		t.Fatalf("Read after the child exited: err=%v, want io.EOF", r.err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	// Close returned, so every stderr line has been logged.
	var lines []string
	for _, r := range rec.all() {
		if r.Message != "upstream stderr" {
			continue
		}
		if r.attrs["upstream"] != "up1" || r.attrs["stream"] != "stderr" {
			t.Errorf("stderr record attrs = %v, want upstream=up1 stream=stderr", r.attrs)
		}
		line := r.attrs["line"]
		if r.attrs["truncated"] == "true" {
			if len(line) > maxStderrLine || !strings.HasPrefix(line, "long:xxx") {
				t.Errorf("truncated record holds %d bytes starting %.20q, want at most %d", len(line), line, maxStderrLine)
			}
			line = "long:(truncated)"
		}
		lines = append(lines, line)
	}
	want := []string{"first line from the child", "long:(truncated)", "last line, no newline"}
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Errorf("stderr records = %q, want %q", lines, want)
	}
}

func TestCommandReadEOFAndExitCode(t *testing.T) {
	c := startChild(t, "env", CommandSpec{})
	mustRead(t, c)
	if r := awaitRead(t, readAsync(context.Background(), c), "at exit"); !errors.Is(r.err, io.EOF) {
		t.Fatalf("Read after the child exited: err=%v, want io.EOF", r.err)
	}
	if err := c.Wait(); err != nil || c.ExitCode() != 0 {
		t.Fatalf("Wait = %v, ExitCode = %d; want nil, 0", err, c.ExitCode())
	}
	if c.Pid() <= 0 {
		t.Fatalf("Pid = %d", c.Pid())
	}
}

func TestCommandInvalidOutputDropped(t *testing.T) {
	rec := &logRecorder{}
	c := startChild(t, "echo", CommandSpec{Logger: rec.logger()})
	// The echo child sends the bad line back; it must be dropped, not
	// answered (the answer would come back as a response).
	bad := &jsonrpc.Message{Raw: []byte(`{"jsonrpc":`)}
	if err := c.Write(context.Background(), bad); err != nil {
		t.Fatal(err)
	}
	good := `{"jsonrpc":"2.0","method":"notifications/ping"}`
	if err := c.Write(context.Background(), contractMsg(t, good)); err != nil {
		t.Fatal(err)
	}
	if m := mustRead(t, c); string(m.Raw) != good {
		t.Fatalf("Read = %s, want %s", m.Raw, good)
	}
	if len(rec.warnings()) != 1 {
		t.Fatalf("warnings = %v, want one for the invalid line", rec.warnings())
	}
}

// TestCommandInvalidOutputAnswersLostCalls: the echo child writes back what
// the test writes, so the test makes it write what a broken server would.
// A call whose answer the child spoiled is answered at once with warden's
// error, not left to the request timeout; log noise on stdout fails nothing.
func TestCommandInvalidOutputAnswersLostCalls(t *testing.T) {
	c := startChild(t, "echo", CommandSpec{Logger: (&logRecorder{}).logger(), Name: "broken"})
	ctx := context.Background()
	// send makes the child write line; a valid one comes back as a message.
	send := func(line string, valid bool) {
		t.Helper()
		m := &jsonrpc.Message{Raw: []byte(line)}
		if valid {
			m = contractMsg(t, line)
		}
		if err := c.Write(ctx, m); err != nil {
			t.Fatal(err)
		}
		if valid {
			mustRead(t, c)
		}
	}
	call := func(id int) {
		t.Helper()
		m := contractMsg(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}`, id))
		if err := c.Write(ctx, m); err != nil {
			t.Fatal(err)
		}
		mustRead(t, c) // the echo: a request from the child, to ignore
	}
	lost := func(id, rule string) {
		t.Helper()
		m := mustRead(t, c)
		var d struct{ Stage, Rule string }
		if m.Kind != jsonrpc.KindResponse || m.ID.Raw() != id || m.Error == nil || m.Error.Code != jsonrpc.CodeUpstreamInvalid ||
			json.Unmarshal(m.Error.Data, &d) != nil || d.Stage != "upstream" || d.Rule != RuleInvalidOutput ||
			!strings.Contains(m.Error.Message, `upstream "broken"`) || !strings.Contains(m.Error.Message, "rule "+rule) {
			t.Fatalf("got %s; want the invalid-output answer to %s, naming rule %s", m.Raw, id, rule)
		}
	}

	call(1)
	call(2)
	// An answer to 1 that the strict decoder refuses: 1 fails, 2 waits.
	send(`{"jsonrpc":"2.0","id":1,"result":{"a":1,"a":2}}`, false)
	lost("1", "duplicate-key")
	// Log noise, and an invalid notification, answer nothing.
	send(`server listening on port 8080`, false)
	send(`{"jsonrpc":"2.0","method":"notifications/message","params":{"a":1,"a":2}}`, false)
	answer := `{"jsonrpc":"2.0","id":2,"result":{}}`
	send(answer, false)
	if m := mustRead(t, c); string(m.Raw) != answer {
		t.Fatalf("got %s, want 2's own answer %s", m.Raw, answer)
	}

	// Broken output that names no request: every pending call fails,
	// except one the client cancelled (it expects no answer).
	call(3)
	call(4)
	call(5)
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`, true)
	send(`{"jsonrpc":"2.0","result":{"content":[`, false)
	got := []string{}
	for range 2 {
		m := mustRead(t, c)
		got = append(got, m.ID.Raw())
		if m.Error == nil || m.Error.Code != jsonrpc.CodeUpstreamInvalid {
			t.Fatalf("got %s, want an invalid-output answer", m.Raw)
		}
	}
	if slices.Sort(got); !slices.Equal(got, []string{"3", "4"}) {
		t.Fatalf("answered %v, want the pending 3 and 4", got)
	}
	assertBlocked(t, readAsync(ctx, c), 50*time.Millisecond)
}

// TestCommandOversizeLineAnswersLostCalls: an answer over the size limit
// whose id comes last (as the TypeScript SDK writes it) fails the pending
// calls at once; one whose id comes first fails only its own.
func TestCommandOversizeLineAnswersLostCalls(t *testing.T) {
	c := startChild(t, "echo", CommandSpec{Logger: (&logRecorder{}).logger(), Name: "big", Limits: jsonrpc.Limits{MaxBytes: 512}})
	ctx := context.Background()
	for _, id := range []int{1, 2} {
		m := contractMsg(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}`, id))
		if err := c.Write(ctx, m); err != nil {
			t.Fatal(err)
		}
		mustRead(t, c)
	}
	big := strings.Repeat("x", 1024)
	if err := c.Write(ctx, &jsonrpc.Message{Raw: []byte(`{"jsonrpc":"2.0","id":2,"result":{"text":"` + big + `"}}`)}); err != nil {
		t.Fatal(err)
	}
	if m := mustRead(t, c); m.ID.Raw() != "2" || m.Error == nil || m.Error.Code != jsonrpc.CodeUpstreamInvalid || !strings.Contains(m.Error.Message, "rule size") {
		t.Fatalf("got %s, want 2 failed by the size rule", m.Raw)
	}
	if err := c.Write(ctx, &jsonrpc.Message{Raw: []byte(`{"result":{"text":"` + big + `"},"jsonrpc":"2.0","id":1}`)}); err != nil {
		t.Fatal(err)
	}
	if m := mustRead(t, c); m.ID.Raw() != "1" || m.Error == nil || m.Error.Code != jsonrpc.CodeUpstreamInvalid || !strings.Contains(m.Error.Message, "naming no request") {
		t.Fatalf("got %s, want 1 failed as the possible owner of the answer", m.Raw)
	}
	// The line was read to its end: the stream is still in step.
	note := `{"jsonrpc":"2.0","method":"notifications/ping"}`
	if err := c.Write(ctx, contractMsg(t, note)); err != nil {
		t.Fatal(err)
	}
	if m := mustRead(t, c); string(m.Raw) != note {
		t.Fatalf("got %s, want %s", m.Raw, note)
	}
}

func TestCommandStartFailure(t *testing.T) {
	if _, err := Command(CommandSpec{Path: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Fatal("Command of a missing program succeeded")
	}
	if _, err := Command(CommandSpec{}); err == nil {
		t.Fatal("Command with an empty Path succeeded")
	}
}

// exitSignal returns the signal that ended the process, or 0.
func exitSignal(err error) syscall.Signal {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return ws.Signal()
		}
	}
	return 0
}

func TestCommandShutdown(t *testing.T) {
	tests := []struct {
		mode     string
		timeout  time.Duration
		minTime  time.Duration // Close must have waited this long
		maxTime  time.Duration
		marker   bool // SIGTERM was received
		exitCode int
		signal   syscall.Signal
	}{
		// Exits when stdin closes: no signal, and no waiting for the timeout.
		{mode: "polite", timeout: 5 * time.Second, maxTime: 5 * time.Second, exitCode: 0},
		// Exits on SIGTERM, after the first timeout.
		{mode: "term", timeout: 500 * time.Millisecond, minTime: 500 * time.Millisecond,
			maxTime: closeBound(500 * time.Millisecond), marker: true, exitCode: 7},
		// Ignores SIGTERM: SIGKILL after the second timeout.
		{mode: "stubborn", timeout: 500 * time.Millisecond, minTime: time.Second,
			maxTime: closeBound(500 * time.Millisecond), exitCode: -1, signal: syscall.SIGKILL},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "sigterm")
			c := startChild(t, tt.mode, CommandSpec{
				Env:             map[string]string{"WARDEN_TEST_MARKER": marker},
				ShutdownTimeout: tt.timeout,
			})
			readReady(t, c)

			start := time.Now()
			errs := make(chan error, 3)
			for range 3 { // concurrent Closes all wait for the one shutdown
				go func() { errs <- c.Close() }()
			}
			for range 3 {
				if err := <-errs; err != nil {
					t.Errorf("Close: %v", err)
				}
			}
			elapsed := time.Since(start)
			if elapsed < tt.minTime || elapsed > tt.maxTime {
				t.Errorf("Close took %v, want between %v and %v", elapsed, tt.minTime, tt.maxTime)
			}
			select {
			case <-c.exited:
			default:
				t.Fatal("Close returned with the child still running")
			}
			_, statErr := os.Stat(marker)
			if got := statErr == nil; got != tt.marker {
				t.Errorf("child received SIGTERM: %v, want %v", got, tt.marker)
			}
			if c.ExitCode() != tt.exitCode {
				t.Errorf("ExitCode = %d, want %d", c.ExitCode(), tt.exitCode)
			}
			if sig := exitSignal(c.Wait()); sig != tt.signal {
				t.Errorf("ended by signal %v, want %v", sig, tt.signal)
			}
			if c.groupAlive() {
				t.Error("process group still alive after Close")
			}
		})
	}
}

// closeBound is the longest Close may take with ShutdownTimeout d, plus room
// for a loaded machine.
func closeBound(d time.Duration) time.Duration {
	return 2*d + killWait + stderrGrace + 2*time.Second
}

// processGone reports whether pid has ended: it no longer exists, or it is a
// zombie waiting for a reaper that is not the test's business.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// The state follows the parenthesised command name.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

func TestCommandCloseEndsGrandchildren(t *testing.T) {
	for _, leader := range []string{"polite", "stubborn"} {
		t.Run(leader, func(t *testing.T) {
			const timeout = 200 * time.Millisecond
			c := startChild(t, "grandchild", CommandSpec{
				Env:             map[string]string{"WARDEN_TEST_LEADER": leader},
				ShutdownTimeout: timeout,
			})
			gc := readReady(t, c)["grandchild"]
			if gc <= 0 || processGone(gc) {
				t.Fatalf("grandchild %d not running", gc)
			}
			t.Cleanup(func() { syscall.Kill(gc, syscall.SIGKILL) })

			start := time.Now()
			if err := c.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if elapsed := time.Since(start); elapsed > closeBound(timeout) {
				t.Errorf("Close took %v", elapsed)
			}
			// The grandchild was signalled before Close returned; its reaper
			// (not warden) may take a moment, which no event shows: poll.
			deadline := time.Now().Add(2 * time.Second)
			for !processGone(gc) {
				if time.Now().After(deadline) {
					t.Fatalf("grandchild %d survived Close", gc)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
