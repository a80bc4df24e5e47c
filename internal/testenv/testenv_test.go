package testenv

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// recorder stands in for the testing.TB given to a lookup, recording a Skip
// or Fatal instead of ending the real test.
type recorder struct {
	testing.TB
	skipped, fatal string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Skip(args ...any)          { r.skipped = fmt.Sprint(args...); runtime.Goexit() }
func (r *recorder) Skipf(f string, a ...any)  { r.skipped = fmt.Sprintf(f, a...); runtime.Goexit() }
func (r *recorder) Fatal(args ...any)         { r.fatal = fmt.Sprint(args...); runtime.Goexit() }
func (r *recorder) Fatalf(f string, a ...any) { r.fatal = fmt.Sprintf(f, a...); runtime.Goexit() }

// call runs fn with a recorder on its own goroutine, as Skip and Fatal end
// the goroutine they are called on.
func call(t *testing.T, fn func(testing.TB) string) (*recorder, string) {
	r := &recorder{TB: t}
	var got string
	done := make(chan struct{})
	go func() {
		defer close(done)
		got = fn(r)
	}()
	<-done
	return r, got
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestDepFromEnvVar(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "node")
	touch(t, bin)
	t.Setenv(EnvNode22, bin)
	r, got := call(t, Node22)
	if r.skipped != "" || r.fatal != "" || got != bin {
		t.Errorf("Node22 = %q (skip %q, fatal %q), want %q", got, r.skipped, r.fatal, bin)
	}
}

func TestDepFromDepsDir(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvDepsDir, dir)
	for _, tc := range []struct {
		env string
		fn  func(testing.TB) string
		rel string
	}{
		{EnvNode22, Node22, "node22/node_modules/node-linux-" + nodeArch() + "/bin/node"},
		{EnvEverythingBin, EverythingServer, "everything/node_modules/.bin/mcp-server-everything"},
		{EnvConformanceJS, ConformanceJS, "conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"},
		{EnvGoEverythingServer, GoEverythingServer, "bin/everything-server"},
		{EnvGoEverythingClient, GoEverythingClient, "bin/everything-client"},
	} {
		t.Setenv(tc.env, "")
		want := filepath.Join(dir, filepath.FromSlash(tc.rel))
		touch(t, want)
		r, got := call(t, tc.fn)
		if r.skipped != "" || r.fatal != "" || got != want {
			t.Errorf("%s unset: got %q (skip %q, fatal %q), want %q", tc.env, got, r.skipped, r.fatal, want)
		}
	}
}

func TestMissingDepSkipsOrFails(t *testing.T) {
	missingPath := filepath.Join(t.TempDir(), "nope")
	t.Setenv(EnvGoEverythingServer, missingPath)

	t.Setenv(EnvRequireDeps, "")
	r, _ := call(t, GoEverythingServer)
	if r.fatal != "" || !strings.Contains(r.skipped, "make deps") || !strings.Contains(r.skipped, missingPath) {
		t.Errorf("without %s: skip %q, fatal %q; want a skip naming the path and `make deps`",
			EnvRequireDeps, r.skipped, r.fatal)
	}

	t.Setenv(EnvRequireDeps, "1")
	r, _ = call(t, GoEverythingServer)
	if r.skipped != "" || !strings.Contains(r.fatal, "make deps") || !strings.Contains(r.fatal, EnvRequireDeps) {
		t.Errorf("with %s=1: skip %q, fatal %q; want a failure", EnvRequireDeps, r.skipped, r.fatal)
	}

	// An empty deps folder: the default location is reported.
	t.Setenv(EnvGoEverythingServer, "")
	t.Setenv(EnvDepsDir, t.TempDir())
	r, _ = call(t, GoEverythingServer)
	if !strings.Contains(r.fatal, filepath.Join("bin", "everything-server")) {
		t.Errorf("empty deps folder: fatal %q; want it to name bin/everything-server", r.fatal)
	}
}

func TestModuleRoot(t *testing.T) {
	root := ModuleRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !declaresModule(data, ModulePath) {
		t.Errorf("ModuleRoot = %s, whose go.mod does not declare %s", root, ModulePath)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "testenv")); err != nil {
		t.Errorf("ModuleRoot = %s: %v", root, err)
	}
}

func TestDeclaresModule(t *testing.T) {
	for _, tc := range []struct {
		gomod string
		want  bool
	}{
		{"module github.com/agentwarden/warden\n\ngo 1.26\n", true},
		{"// c\nmodule \"github.com/agentwarden/warden\"\n", true},
		{"module github.com/agentwarden/warden/tools\n", false},
		{"module example.com/x // github.com/agentwarden/warden\n", false},
		{"", false},
	} {
		if got := declaresModule([]byte(tc.gomod), ModulePath); got != tc.want {
			t.Errorf("declaresModule(%q) = %v, want %v", tc.gomod, got, tc.want)
		}
	}
}

func TestSharedDir(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvSharedDir, dir)
	if r, got := call(t, SharedDir); got != dir {
		t.Errorf("SharedDir with %s set = %q (skip %q, fatal %q), want %q", EnvSharedDir, got, r.skipped, r.fatal, dir)
	}
	t.Setenv(EnvSharedDir, filepath.Join(dir, "missing"))
	if r, _ := call(t, SharedDir); r.fatal == "" {
		t.Errorf("SharedDir with %s naming a missing folder did not fail (skip %q)", EnvSharedDir, r.skipped)
	}
}

func TestFreeLoopbackAddr(t *testing.T) {
	addr := FreeLoopbackAddr(t)
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" || port == "0" {
		t.Fatalf("FreeLoopbackAddr = %q (%v), want 127.0.0.1:PORT", addr, err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listening on %s: %v", addr, err)
	}
	l.Close()
}
