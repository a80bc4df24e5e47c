//go:build integration

package difftest

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStdioFraming: warden's own stdio listener (`warden gateway --stdio`)
// fed lines a stdio client might write, in front of each real SDK: CRLF, a
// message split over two writes, two messages on one line (joined directly,
// by CR, or by U+2028, which is no JSON white space), a BOM, trailing
// spaces. read_file, which --deny-tool denies, must never run; the
// legitimate safe_echo calls run exactly once each. The oracle is the
// SDK's handler runs.
func TestStdioFraming(t *testing.T) {
	build(t)
	echo := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"safe_echo","arguments":{"n":%d}}}`, id, id)
	}
	readFile := func(id int) string { return call(id, m("name", q("read_file")), m("arguments", argsRead)) }
	cases := []struct {
		name   string
		writes []string // written one after the other, 50 ms apart
		runs   int      // safe_echo runs it must cause
	}{
		{"crlf", []string{echo(101) + "\r\n"}, 1},
		{"split-in-two-writes", []string{echo(102)[:30], echo(102)[30:] + "\n"}, 1},
		{"split-before-newline", []string{echo(103), "\n"}, 1},
		{"trailing-spaces", []string{echo(104) + "  \t\n"}, 1},
		{"two-messages-on-one-line", []string{echo(105) + readFile(106) + "\n"}, 0},
		{"two-messages-cr", []string{echo(107) + "\r" + readFile(108) + "\n"}, 0},
		{"two-messages-line-separator", []string{echo(109) + "\u2028" + readFile(110) + "\n"}, 0},
		{"bom", []string{"\xef\xbb\xbf" + readFile(111) + "\n"}, 0},
		{"read_file-crlf", []string{readFile(112) + "\r\n"}, 0},
		{"blank-lines-then-message", []string{"\n\r\n  \n" + echo(113) + "\n"}, 1},
	}
	for _, u := range upstreams {
		t.Run(u.name, func(t *testing.T) {
			up := u.make(t)
			oraclePath := filepath.Join(t.TempDir(), "oracle.jsonl")
			args := []string{"gateway", "--stdio", "--deny-tool", "read_file", "--name", up.name, "--env", "DIFFTEST_ORACLE=" + oraclePath}
			for k, v := range up.env {
				args = append(args, "--env", k+"="+v)
			}
			cmd := exec.Command(wardenBin, append(append(args, "--"), up.command...)...)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			p := &plainPeer{t: t, up: up, oracle: &oracleReader{path: oraclePath}, cmd: cmd, stdin: stdin, answers: make(chan string, 64)}
			defer p.stop()
			go func() {
				sc := bufio.NewScanner(stdout)
				sc.Buffer(nil, 8<<20)
				for sc.Scan() {
					p.answers <- sc.Text()
				}
				close(p.answers)
			}()
			p.write(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"stdio","version":"1"}}}`)
			if !p.await(30*time.Second, `"init"`) {
				t.Fatalf("no answer to initialize; warden's log:\n%s", stderr.String())
			}
			p.write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			if !p.sync() {
				t.Fatalf("no answer to a ping; warden's log:\n%s", stderr.String())
			}
			if _, err := p.oracle.next(); err != nil {
				t.Fatal(err)
			}
			for _, c := range cases {
				for i, w := range c.writes {
					if i > 0 {
						time.Sleep(50 * time.Millisecond)
					}
					if _, err := io.WriteString(stdin, w); err != nil {
						t.Fatal(err)
					}
				}
				if c.runs > 0 {
					p.await(5*time.Second, idsOf(strings.Join(c.writes, ""))...)
				}
				if !p.sync() {
					t.Fatalf("%s: warden stopped answering; its log:\n%s", c.name, stderr.String())
				}
				recs, err := p.oracle.next()
				if err != nil {
					t.Fatal(err)
				}
				echoes := 0
				for _, r := range recs {
					switch {
					case r.Kind != "call":
					case r.call.Tool == "read_file":
						t.Errorf("%s: %s ran read_file %s, which the tool policy denies", c.name, up.name, r.call.Arguments)
					case r.call.Tool == "safe_echo":
						echoes++
					default:
						t.Errorf("%s: %s ran %s", c.name, up.name, r.call.Tool)
					}
				}
				if echoes != c.runs {
					t.Errorf("%s: safe_echo ran %d times on %s, want %d", c.name, echoes, up.name, c.runs)
				}
			}
		})
	}
}
