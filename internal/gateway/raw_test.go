//go:build integration

package gateway_test

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"testing"
	"time"
)

// rawSession speaks newline-delimited JSON-RPC to a process, for what a
// typed SDK cannot send: hostile bytes, and features the SDK lacks.
type rawSession struct {
	in    io.WriteCloser
	lines chan string
}

func startRaw(t *testing.T, cmd *exec.Cmd) *rawSession {
	t.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &rawSession{in: in, lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 8<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return s
}

func (s *rawSession) send(line string) { io.WriteString(s.in, line+"\n") }

// await returns the next line that is a response with the given id (JSON
// text), skipping notifications and other traffic.
func (s *rawSession) await(t *testing.T, id string) string {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				t.Fatalf("stream ended while waiting for the response to id %s", id)
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal([]byte(line), &m) == nil && m.Method == "" && string(m.ID) == id {
				return line
			}
		case <-deadline:
			t.Fatalf("no response to id %s", id)
		}
	}
}
