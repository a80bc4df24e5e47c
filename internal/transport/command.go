//go:build unix

package transport

// A CommandConn runs an upstream MCP server as a child process and speaks
// newline-delimited JSON-RPC with it over the child's stdin and stdout.
//
//	warden                              child process group (pgid = child pid)
//	Write ─► stream ─► stdin pipe ────► server ─┬─ grandchildren (npx ─► node)
//	Read  ◄─ stream ◄─ stdout pipe ◄──── server  │
//	Logger ◄─ logStderr ◄─ stderr pipe ◄─ server ┘
//
// Shutdown (Close), each wait bounded by ShutdownTimeout:
//
//	close stdin ─► wait: leader exited and group empty? ─ yes ─► done
//	                 │ no
//	              SIGTERM group ─► wait again ─ yes ─► done
//	                 │ no
//	              SIGKILL group ─► wait for the leader
//
// The child's stdio are os.Pipe files handed to it directly, so cmd.Wait
// returns when the child exits and never waits on, or closes, the read ends
// warden is still reading.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// DefaultPassEnv lists the variables a child inherits from warden's own
// environment when CommandSpec.PassEnv is nil: enough to find programs and
// pick a locale, nothing that usually holds a secret.
var DefaultPassEnv = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TZ", "TMPDIR"}

// DefaultShutdownTimeout is each step's wait in Close when
// CommandSpec.ShutdownTimeout is 0.
const DefaultShutdownTimeout = 2 * time.Second

// After SIGKILL, Close waits up to killWait for the child to be reaped; then,
// up to stderrGrace for its last stderr lines. Neither depends on the child's
// behaviour, only on the machine's load.
const (
	killWait    = time.Second
	stderrGrace = 100 * time.Millisecond
)

// maxStderrLine is the longest stderr line logged in one record; the rest of
// a longer line is dropped and the record marked truncated.
const maxStderrLine = 4 << 10

// CommandSpec describes an upstream server to run as a child process. The
// zero value of each optional field is the safe setting.
type CommandSpec struct {
	// Path is the program to run; without a slash it is looked up in
	// warden's PATH.
	Path string
	// Args are the arguments after the program name.
	Args []string
	// Dir is the child's working directory; "" means warden's.
	Dir string
	// Env sets variables in the child's environment explicitly. It wins
	// over a variable of the same name passed by PassEnv.
	Env map[string]string
	// PassEnv names the variables copied from warden's own environment,
	// where set. Nil means DefaultPassEnv; an empty, non-nil slice passes
	// none. The child never receives warden's whole environment, so secrets
	// held there do not leak to the servers it runs.
	PassEnv []string
	// Limits bound each message the child writes.
	Limits jsonrpc.Limits
	// Logger receives the child's stderr, one Info record per line with
	// attributes "upstream" (Name), "stream" ("stderr") and "line", and the
	// stream's records about invalid output. Nil means slog.Default().
	Logger *slog.Logger
	// Name identifies the upstream in log records.
	Name string
	// ShutdownTimeout is how long Close waits after each step (closing
	// stdin, SIGTERM) before the next. 0 means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
}

// CommandConn is a Conn to a child process started by Command. Read returns
// the messages the child writes on stdout and io.EOF once stdout closes (the
// child exited, and no grandchild holds its stdout open); Write writes to the
// child's stdin. Invalid output from the child is logged and dropped, never
// answered; a request whose answer it may have been is not left waiting:
// Read returns an error answer in its place (StreamOptions.AnswerLost).
type CommandConn struct {
	// Immutable after Command.
	cmd     *exec.Cmd
	pid     int
	name    string
	log     *slog.Logger
	timeout time.Duration
	stream  Conn     // on stdin and stdout; its Close closes stdin only
	stdout  *os.File // read end; closed by Close once the group is gone
	stderr  *os.File // read end; closed by Close once the group is gone

	exited     chan struct{} // closed when cmd.Wait has returned
	waitErr    error         // cmd.Wait's result; read after exited is closed
	stderrDone chan struct{} // closed when logStderr has returned

	closeOnce sync.Once
	closeErr  error // the result of shutdown; read after closeOnce
}

var _ Pusher = (*CommandConn)(nil)

// Command starts spec's program in a process group of its own, with an
// environment made only of the PassEnv variables and Env, and returns a Conn
// on its stdin and stdout. The caller must Close it, which stops the child.
func Command(spec CommandSpec) (*CommandConn, error) {
	if spec.Path == "" {
		return nil, errors.New("transport: command: empty Path")
	}
	env, err := commandEnv(spec)
	if err != nil {
		return nil, err
	}
	var files []*os.File // every pipe end, closed on failure
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		if r, w, err = os.Pipe(); err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	stdinR, stdinW, err1 := pipe()
	stdoutR, stdoutW, err2 := pipe()
	stderrR, stderrW, err3 := pipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		closeAll()
		return nil, fmt.Errorf("transport: command %s: %w", spec.Name, err)
	}

	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Dir = spec.Dir
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, fmt.Errorf("transport: command %s: %w", spec.Name, err)
	}
	// The child holds its own copies of these ends now.
	stdinR.Close()
	stdoutW.Close()
	stderrW.Close()

	log := spec.Logger
	if log == nil {
		log = slog.Default()
	}
	timeout := spec.ShutdownTimeout
	if timeout <= 0 {
		timeout = DefaultShutdownTimeout
	}
	c := &CommandConn{
		cmd:     cmd,
		pid:     cmd.Process.Pid,
		name:    spec.Name,
		log:     log,
		timeout: timeout,
		stream: NewStream(stdoutR, stdinW, stdinW, StreamOptions{
			Limits:     spec.Limits,
			Logger:     log,
			Name:       spec.Name,
			AnswerLost: true,
		}),
		stdout:     stdoutR,
		stderr:     stderrR,
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
	}
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	go c.logStderr()
	return c, nil
}

// commandEnv builds the child's environment: the PassEnv variables that are
// set in warden's environment, then Env. The result is never nil, because a
// nil exec.Cmd.Env would hand the child warden's whole environment.
func commandEnv(spec CommandSpec) ([]string, error) {
	pass := spec.PassEnv
	if pass == nil {
		pass = DefaultPassEnv
	}
	vars := make(map[string]string, len(pass)+len(spec.Env))
	for _, name := range pass {
		if err := checkEnvName(name); err != nil {
			return nil, fmt.Errorf("transport: command %s: PassEnv: %w", spec.Name, err)
		}
		if v, ok := os.LookupEnv(name); ok {
			vars[name] = v
		}
	}
	for name, v := range spec.Env {
		if err := checkEnvName(name); err != nil {
			return nil, fmt.Errorf("transport: command %s: Env: %w", spec.Name, err)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return nil, fmt.Errorf("transport: command %s: Env: value of %q contains a NUL byte", spec.Name, name)
		}
		vars[name] = v
	}
	env := make([]string, 0, len(vars))
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, name+"="+vars[name])
	}
	return env, nil
}

func checkEnvName(name string) error {
	if name == "" || strings.ContainsAny(name, "=\x00") {
		return fmt.Errorf("invalid variable name %q", name)
	}
	return nil
}

// Pid returns the child's process id, which is also its process group id.
func (c *CommandConn) Pid() int { return c.pid }

// Wait blocks until the child has exited and returns its status as
// exec.Cmd.Wait reports it: nil for exit code 0, an *exec.ExitError otherwise.
// It does not stop the child; Close does. Safe to call from any goroutine,
// any number of times.
func (c *CommandConn) Wait() error {
	<-c.exited
	return c.waitErr
}

// ExitCode returns the child's exit code once it has exited, and -1 while it
// runs or when a signal ended it. Safe to call from any goroutine.
func (c *CommandConn) ExitCode() int {
	select {
	case <-c.exited:
		return c.cmd.ProcessState.ExitCode()
	default:
		return -1
	}
}

// Read returns the next valid message the child wrote on stdout. It returns
// io.EOF once stdout has closed, ErrClosed after Close, and ctx.Err() when ctx
// ends first. One goroutine at a time may call Read.
func (c *CommandConn) Read(ctx context.Context) (*jsonrpc.Message, error) {
	return c.stream.Read(ctx)
}

// Push implements Pusher: the messages the child writes are handed to
// deliver on the goroutine that reads its stdout.
func (c *CommandConn) Push(deliver func(*jsonrpc.Message)) bool {
	return c.stream.(Pusher).Push(deliver)
}

// Discarded implements Discarder: the invalid lines the child wrote on
// stdout, which were dropped.
func (c *CommandConn) Discarded() (int64, string) {
	return c.stream.(Discarder).Discarded()
}

// Write writes msg.Raw and a newline to the child's stdin. Writes from
// several goroutines are serialized, each message whole; Close unblocks a
// Write stuck on a child that does not read. It returns ErrClosed after Close.
func (c *CommandConn) Write(ctx context.Context, msg *jsonrpc.Message) error {
	return c.stream.Write(ctx, msg)
}

// Close stops the child: it closes stdin and waits up to ShutdownTimeout for
// the child to exit and its process group to empty; then sends SIGTERM to the
// group and waits as long again; then sends SIGKILL to the group and waits for
// the child. Read and Write return ErrClosed from the start of Close.
//
// Close returns within twice ShutdownTimeout plus killWait and stderrGrace
// (1.1s), after the child's last stderr lines have been logged. Its error is
// nil once the child is gone, whatever its exit status (see Wait). Close may
// be called from any goroutine, any number of times; every call waits for the
// first to finish and returns its result.
func (c *CommandConn) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.shutdown() })
	return c.closeErr
}

func (c *CommandConn) shutdown() error {
	c.stream.Close() // closes stdin: the polite request to exit
	if !c.waitGone(c.timeout) {
		c.log.Warn("transport: upstream still running after stdin closed; sending SIGTERM to its process group",
			"upstream", c.name, "pid", c.pid)
		c.signalGroup(syscall.SIGTERM)
		if !c.waitGone(c.timeout) {
			c.log.Warn("transport: upstream still running after SIGTERM; sending SIGKILL to its process group",
				"upstream", c.name, "pid", c.pid)
			c.signalGroup(syscall.SIGKILL)
		}
	}
	var err error
	select {
	case <-c.exited:
	case <-time.After(killWait):
		err = fmt.Errorf("transport: command %s: pid %d still running after SIGKILL", c.name, c.pid)
	}

	// With the group gone nothing writes stderr any more: let logStderr log
	// what is left, unless a process that left the group still holds it.
	select {
	case <-c.stderrDone:
	case <-time.After(stderrGrace):
	}
	c.stderr.Close()
	c.stdout.Close() // ends the stream's reader goroutine
	<-c.stderrDone
	return err
}

// waitGone waits up to d for the child to exit and every other process of
// its group to end, and reports whether they did.
func (c *CommandConn) waitGone(d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	select {
	case <-c.exited:
	case <-deadline.C:
		return false
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for c.groupAlive() {
		select {
		case <-tick.C:
		case <-deadline.C:
			return false
		}
	}
	return true
}

// groupAlive reports whether any process remains in the child's group.
func (c *CommandConn) groupAlive() bool {
	err := syscall.Kill(-c.pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// signalGroup sends sig to the child's process group. It is a no-op once the
// group is empty, so that a recycled group id is never signalled.
func (c *CommandConn) signalGroup(sig syscall.Signal) {
	select {
	case <-c.exited:
		if !c.groupAlive() {
			return
		}
	default:
	}
	if err := syscall.Kill(-c.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		c.log.Warn("transport: could not signal upstream", "upstream", c.name, "pid", c.pid,
			"signal", sig.String(), "error", err)
	}
}

// logStderr logs each line the child writes on stderr, at most maxStderrLine
// bytes of it, until stderr ends or Close closes it.
func (c *CommandConn) logStderr() {
	defer close(c.stderrDone)
	r := bufio.NewReaderSize(c.stderr, maxStderrLine)
	for {
		text, truncated, err := readBoundedLine(r)
		if text != "" || truncated {
			attrs := []any{"upstream", c.name, "stream", "stderr", "line", text}
			if truncated {
				attrs = append(attrs, "truncated", true)
			}
			c.log.Info("upstream stderr", attrs...)
		}
		if err != nil {
			return
		}
	}
}

// readBoundedLine returns the next line from r without its line ending. A
// line longer than r's buffer is read to its end but only its first
// buffer-full is returned, with truncated set. err is set when r ends or
// fails; text then holds what came before.
func readBoundedLine(r *bufio.Reader) (text string, truncated bool, err error) {
	chunk, err := r.ReadSlice('\n')
	text = string(bytes.TrimRight(chunk, "\r\n"))
	for errors.Is(err, bufio.ErrBufferFull) {
		truncated = true
		_, err = r.ReadSlice('\n')
	}
	return text, truncated, err
}
