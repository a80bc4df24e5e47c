package store

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// redisServer is a redis-server process started by a test, listening on a
// unix socket (or a loopback port) in its own directory, with AOF on. It
// never touches a system-wide instance.
type redisServer struct {
	bin, dir string
	args     []string
	url      string
	cmd      *exec.Cmd
	exited   chan struct{}
}

// redisServerBinary finds redis-server: $WARDEN_REDIS_SERVER, else PATH.
// Without it the test is skipped, or fails when WARDEN_REQUIRE_DEPS=1.
func redisServerBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("WARDEN_REDIS_SERVER"); p != "" {
		return p
	}
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p
	}
	if os.Getenv("WARDEN_REQUIRE_DEPS") == "1" {
		t.Fatal("redis-server not found (WARDEN_REDIS_SERVER unset, not on PATH) and WARDEN_REQUIRE_DEPS=1")
	}
	t.Skip("redis-server not found: run make deps")
	return ""
}

// startRedis starts a server on a unix socket in a fresh directory; with tcp
// it listens on 127.0.0.1 on a free port instead. extra arguments override
// the defaults. It is killed at cleanup.
func startRedis(t testing.TB, tcp bool, extra ...string) *redisServer {
	t.Helper()
	bin := redisServerBinary(t)
	// Unix socket paths are limited to ~108 bytes: keep the directory short.
	dir, err := os.MkdirTemp("", "wrd-redis-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	rs := &redisServer{bin: bin, dir: dir}
	rs.args = []string{
		"--save", "", "--appendonly", "yes", "--appendfsync", "always",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"),
		"--daemonize", "no", "--protected-mode", "yes",
	}
	if tcp {
		port := freePort(t)
		rs.args = append(rs.args, "--bind", "127.0.0.1", "--port", strconv.Itoa(port))
		rs.url = fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	} else {
		sock := filepath.Join(dir, "redis.sock")
		rs.args = append(rs.args, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700")
		rs.url = "unix://" + sock
	}
	rs.args = append(rs.args, extra...)
	rs.start(t)
	t.Cleanup(rs.kill)
	return rs
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

// start runs the server and waits until it answers PING.
func (rs *redisServer) start(t testing.TB) {
	t.Helper()
	rs.cmd = exec.Command(rs.bin, rs.args...)
	if err := rs.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", rs.bin, err)
	}
	rs.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		cmd.Wait()
		close(exited)
	}(rs.cmd, rs.exited)

	deadline := time.Now().Add(10 * time.Second)
	for {
		err := rs.ping()
		if err == nil {
			return
		}
		select {
		case <-rs.exited:
			log, _ := os.ReadFile(filepath.Join(rs.dir, "redis.log"))
			t.Fatalf("redis-server exited: %v\n%s", rs.cmd.ProcessState, log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server at %s not ready: %v", rs.url, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ping sends one PING on a fresh connection (no client retries, so
// polling for readiness stays quick).
func (rs *redisServer) ping() error {
	network, addr := "unix", strings.TrimPrefix(rs.url, "unix://")
	if strings.HasPrefix(rs.url, "redis://") {
		network, addr = "tcp", strings.TrimSuffix(strings.TrimPrefix(rs.url, "redis://"), "/0")
	}
	c, err := net.DialTimeout(network, addr, time.Second)
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

// kill sends SIGKILL to the server (by the pid we started) and waits.
func (rs *redisServer) kill() {
	if rs.cmd == nil || rs.cmd.Process == nil {
		return
	}
	rs.cmd.Process.Kill()
	<-rs.exited
}

func openRedisT(t testing.TB, url string) *Redis {
	t.Helper()
	r, err := OpenRedis(t.Context(), url)
	if err != nil {
		t.Fatalf("OpenRedis: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestRedisContract(t *testing.T) {
	rs := startRedis(t, false)
	testContract(t, func(t *testing.T) Store { return openRedisT(t, rs.url) })
}

func TestRedisContractTCP(t *testing.T) {
	rs := startRedis(t, true)
	testContract(t, func(t *testing.T) Store { return openRedisT(t, rs.url) })
}

// A fresh Redis's epoch begins when the store is opened, so a token issued
// after the gateway started and before its first consumption is not taken
// for one the store might have forgotten; a second store keeps the epoch.
func TestRedisEpochBeginsAtOpen(t *testing.T) {
	rs := startRedis(t, false)
	r := openRedisT(t, rs.url)
	opened := time.Now()
	// Kept: the first consumption must come in a later millisecond of the
	// real clock than the open (a real server, no bubble), so that an
	// epoch begun there, not at the open, would show.
	time.Sleep(20 * time.Millisecond) // a token issued after the open
	_, epoch, err := r.ConsumeSince(t.Context(), NSToken, "first", time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// The epoch is kept in whole milliseconds, rounded up (the safe way):
	// it may fall in the millisecond the open returned in, never later.
	if epoch.After(time.UnixMilli(ceilMilli(opened))) {
		t.Fatalf("epoch %v is after the millisecond the store was opened in (%v): tokens issued in between would be refused", epoch, opened)
	}
	again := openRedisT(t, rs.url)
	if _, e2, err := again.ConsumeSince(t.Context(), NSToken, "second", time.Now().Add(time.Hour)); err != nil || !e2.Equal(epoch) {
		t.Fatalf("a second store moved the epoch: %v, %v", e2, err)
	}
}

// The key layout is part of the operational contract (operators inspect
// and size it); check it and its expiry on the server.
func TestRedisKeyAndExpiry(t *testing.T) {
	rs := startRedis(t, false)
	r := openRedisT(t, rs.url)
	expires := time.Now().Add(time.Hour).Truncate(time.Second).Add(1500 * time.Microsecond)
	if ok, err := r.Consume(t.Context(), NSProof, "p1", expires); !ok || err != nil {
		t.Fatalf("Consume = (%v, %v)", ok, err)
	}
	at, err := r.client.PExpireTime(t.Context(), "warden:dpop:p1").Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := expires.UnixMilli() + 1; at.Milliseconds() != want {
		t.Errorf("PEXPIRETIME = %d, want %d (expiry rounded up to the millisecond)", at.Milliseconds(), want)
	}
}

// Consumed ids survive kill -9 and restart of a server with AOF, and while
// the server is down Consume errors instead of allowing.
func TestRedisSurvivesKillAndDeniesWhenDown(t *testing.T) {
	rs := startRedis(t, false)
	r := openRedisT(t, rs.url)
	ids := []string{"a", "b", "c"}
	for _, id := range ids {
		if !mustConsume(t, r, NSToken, id, time.Hour) {
			t.Fatalf("first Consume of %q: ok = false", id)
		}
	}

	rs.kill()
	for _, id := range []string{ids[0], "never-seen"} {
		ok, err := r.Consume(t.Context(), NSToken, id, time.Now().Add(time.Hour))
		if ok || err == nil {
			t.Fatalf("Consume(%q) with the server down = (%v, %v), want (false, error)", id, ok, err)
		}
	}
	if _, err := OpenRedis(t.Context(), rs.url); err == nil {
		t.Fatal("OpenRedis succeeded with the server down")
	}

	rs.start(t)
	for name, s := range map[string]*Redis{"old client": r, "new client": openRedisT(t, rs.url)} {
		for _, id := range ids {
			if mustConsume(t, s, NSToken, id, time.Hour) {
				t.Fatalf("%s: id %q consumed before kill -9 was accepted after restart", name, id)
			}
		}
	}
	if !mustConsume(t, r, NSToken, "after-restart", time.Hour) {
		t.Fatal("fresh id after restart: ok = false")
	}
}

func TestOpenRedisBadURL(t *testing.T) {
	for _, u := range []string{"", "http://127.0.0.1:1", "redis://127.0.0.1:1/0"} {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		r, err := OpenRedis(ctx, u)
		cancel()
		if err == nil {
			r.Close()
			t.Errorf("OpenRedis(%q) succeeded, want an error", u)
		}
	}
}
