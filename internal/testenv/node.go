package testenv

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// StartNode runs the pinned Node 22 on script with the arguments args
// returns for a free loopback port, waits until something listens there,
// and returns the address (127.0.0.1:PORT). The process and its children
// get SIGTERM at cleanup. name names the server in a failure.
func StartNode(t testing.TB, name, script string, args func(port string) []string) string {
	t.Helper()
	node := Node22(t)
	addr := FreeLoopbackAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(node, append([]string{script}, args(port)...)...)
	cmd.Env = []string{"PATH=" + filepath.Dir(node) + ":" + os.Getenv("PATH")}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		cmd.Wait()
	})
	for deadline := time.Now().Add(20 * time.Second); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on %s: %v", name, addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
