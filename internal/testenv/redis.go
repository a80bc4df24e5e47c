package testenv

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Redis is a redis-server a test started on 127.0.0.1, in its own
// directory. It is killed at cleanup.
type Redis struct {
	URL  string // redis://127.0.0.1:PORT/0
	bin  string
	dir  string
	args []string
	cmd  *exec.Cmd
	done chan struct{}
}

// StartRedis starts Debian's redis-server (installed by make deps) on a
// free loopback port. aof says whether it keeps an append-only file
// (fsync always), so that a restart keeps its data; without it a restart
// comes back empty. extra arguments are appended.
func StartRedis(t testing.TB, aof bool, extra ...string) *Redis {
	t.Helper()
	bin := os.Getenv("WARDEN_REDIS_SERVER")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("redis-server"); err != nil {
			missing(t, "redis-server not found; run `make deps` (or set WARDEN_REDIS_SERVER)")
			return nil
		}
	}
	dir, err := os.MkdirTemp("", "wrd-redis-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	port := freePort(t)
	appendonly := "no"
	if aof {
		appendonly = "yes"
	}
	r := &Redis{URL: fmt.Sprintf("redis://127.0.0.1:%d/0", port), bin: bin, dir: dir}
	r.args = append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "",
		"--appendonly", appendonly, "--appendfsync", "always", "--dir", dir,
		"--logfile", filepath.Join(dir, "redis.log"), "--daemonize", "no", "--protected-mode", "yes"}, extra...)
	r.Start(t)
	t.Cleanup(r.Kill)
	return r
}

// Start runs the server (again) and waits until it answers PING.
func (r *Redis) Start(t testing.TB) {
	t.Helper()
	r.cmd = exec.Command(r.bin, r.args...)
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", r.bin, err)
	}
	r.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { cmd.Wait(); close(done) }(r.cmd, r.done)
	addr := r.URL[len("redis://") : len(r.URL)-len("/0")]
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if pong(addr) == nil {
			return
		}
		select {
		case <-r.done:
			log, _ := os.ReadFile(filepath.Join(r.dir, "redis.log"))
			t.Fatalf("redis-server exited: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server at %s not ready", r.URL)
		}
	}
}

// Kill sends SIGKILL to the server we started (by its pid) and waits.
func (r *Redis) Kill() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	select {
	case <-r.done:
		return
	default:
	}
	r.cmd.Process.Kill()
	<-r.done
}

func pong(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 7)
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != "+PONG\r\n" {
		return fmt.Errorf("PING: got %q", buf)
	}
	return nil
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
