package gateway_test

import (
	"bufio"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/transport"
)

// TestFidelity replays the scripts in testdata/fidelity. Each script is a
// txtar file whose "script" section is a sequence of lines:
//
//	c> MESSAGE   the client sends MESSAGE (raw bytes, one line)
//	c< MESSAGE   the client must receive exactly MESSAGE next
//	u> MESSAGE   the upstream sends MESSAGE
//	u< MESSAGE   the upstream must receive exactly MESSAGE next
//	# ...        a comment
//
// Both sides use warden's stdio stream framing over in-memory pipes, so the
// scripts cover the decoder, the relay and the pipeline together. The
// upstream's tool policy denies get_*, and the client side refuses nesting
// deeper than 8.
func TestFidelity(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "fidelity", "*.txtar"))
	if len(files) == 0 {
		t.Fatal("no fidelity scripts")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var script string
			for _, f := range ar.Files {
				if f.Name == "script" {
					script = string(f.Data)
				}
			}
			if script == "" {
				t.Fatal("no script section")
			}
			runScript(t, script)
		})
	}
}

// pipeEnd is one side of a line-oriented pipe pair as the test sees it.
type pipeEnd struct {
	w     io.WriteCloser
	lines chan string
}

func newPipeEnd(r io.Reader, w io.WriteCloser) *pipeEnd {
	p := &pipeEnd{w: w, lines: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	return p
}

func runScript(t *testing.T, script string) {
	deny, _ := config.CompilePattern("get_*")
	// The test's client talks to the gateway's client-side stream.
	cIn, gwCIn := io.Pipe()
	gwCOut, cOut := io.Pipe()
	clientConn := transport.NewStream(cIn, cOut, cIn, transport.StreamOptions{ReplyInvalid: true, Name: "client", Limits: jsonrpc.Limits{MaxDepth: 8}})
	client := newPipeEnd(gwCOut, gwCIn)
	// The test's upstream talks to the gateway's upstream-side stream.
	uIn, gwUIn := io.Pipe()
	gwUOut, uOut := io.Pipe()
	upConn := transport.NewStream(uIn, uOut, uIn, transport.StreamOptions{Name: "upstream"})
	upstream := newPipeEnd(gwUOut, gwUIn)

	g, err := gateway.New(gateway.Options{Upstreams: []gateway.Upstream{{
		Name: "up",
		Dial: func(context.Context, bool) (transport.Conn, error) { return upConn, nil },
		Pipeline: gateway.NewPipeline(gateway.MethodPolicy{},
			gateway.ToolPolicy{List: config.List{Deny: []config.Pattern{deny}}}),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.ServeConn(ctx, clientConn, "up", "", false); close(done) }()
	defer func() { cancel(); gwCIn.Close(); gwUIn.Close(); <-done }()

	for n, line := range strings.Split(script, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		op, msg, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("line %d: %q: want OP MESSAGE", n+1, line)
		}
		switch op {
		case "c>":
			io.WriteString(client.w, msg+"\n")
		case "u>":
			io.WriteString(upstream.w, msg+"\n")
		case "c<":
			expectLine(t, n+1, "client", client, msg)
		case "u<":
			expectLine(t, n+1, "upstream", upstream, msg)
		default:
			t.Fatalf("line %d: unknown op %q", n+1, op)
		}
	}
	// Nothing else may arrive on either side.
	for _, side := range []struct {
		name string
		p    *pipeEnd
	}{{"client", client}, {"upstream", upstream}} {
		select {
		case extra := <-side.p.lines:
			t.Errorf("%s received an unexpected message after the script: %s", side.name, extra)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func expectLine(t *testing.T, n int, side string, p *pipeEnd, want string) {
	t.Helper()
	select {
	case got, ok := <-p.lines:
		if !ok {
			t.Fatalf("line %d: %s stream ended; want %s", n, side, want)
		}
		if got != want {
			t.Fatalf("line %d: %s received\n  %s\nwant\n  %s", n, side, got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("line %d: %s received nothing; want %s", n, side, want)
	}
}
