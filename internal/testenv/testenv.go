// Package testenv locates the external programs that warden's integration
// tests run against, and other facts about the test environment.
//
// It is meant for tests only. The programs are installed by `make deps`
// (scripts/deps.sh) into the cache folder .cache/deps at the module root
// (or $WARDEN_DEPS_DIR), and each can be pointed elsewhere with its own
// environment variable:
//
//	Node22             WARDEN_NODE22                Node 22 (the conformance suite needs >= 22)
//	EverythingServer   WARDEN_EVERYTHING_BIN        npm @modelcontextprotocol/server-everything
//	ConformanceJS      WARDEN_CONFORMANCE_JS        npm @modelcontextprotocol/conformance, run with Node22
//	GoEverythingServer WARDEN_GO_EVERYTHING_SERVER  go-sdk conformance/everything-server
//	GoEverythingClient WARDEN_GO_EVERYTHING_CLIENT  go-sdk conformance/everything-client
//	Aimock             WARDEN_AIMOCK_BIN            npm @copilotkit/aimock (AG-UI, A2A, MCP mock)
//	TypeScriptSDK      WARDEN_MCP_SDK               npm @modelcontextprotocol/sdk (its package.json)
//	AGUISDK            WARDEN_AGUI_SDK              npm @ag-ui/client, @ag-ui/encoder, @ag-ui/core (client's package.json)
//	Otelcol            WARDEN_OTELCOL               OpenTelemetry Collector built with ocb (StartOtelcol runs it)
//
// When a program cannot be found the test is skipped with a message saying
// to run `make deps`, unless WARDEN_REQUIRE_DEPS=1 (set by `make test` and
// CI), in which case it fails: there a missing dependency is a broken setup,
// not a reason to silently test less.
//
//	func TestThroughGateway(t *testing.T) {
//		srv := testenv.GoEverythingServer(t)
//		addr := testenv.FreeLoopbackAddr(t)
//		cmd := exec.Command(srv, "-http="+addr)
//		...
//	}
package testenv

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// ModulePath is the module whose root ModuleRoot finds.
const ModulePath = "github.com/agentwarden/warden"

// Environment variables read by this package.
const (
	EnvRequireDeps        = "WARDEN_REQUIRE_DEPS"
	EnvDepsDir            = "WARDEN_DEPS_DIR"
	EnvNode22             = "WARDEN_NODE22"
	EnvEverythingBin      = "WARDEN_EVERYTHING_BIN"
	EnvConformanceJS      = "WARDEN_CONFORMANCE_JS"
	EnvGoEverythingServer = "WARDEN_GO_EVERYTHING_SERVER"
	EnvGoEverythingClient = "WARDEN_GO_EVERYTHING_CLIENT"
	EnvSharedDir          = "WARDEN_SHARED_DIR"
	EnvAimockBin          = "WARDEN_AIMOCK_BIN"
	EnvMCPSDK             = "WARDEN_MCP_SDK"
	EnvAGUISDK            = "WARDEN_AGUI_SDK"
)

// dep describes one program installed by scripts/deps.sh.
type dep struct {
	name string // for messages
	env  string // overriding environment variable
	rel  string // path below the deps folder
}

var (
	node22 = dep{"Node 22", EnvNode22,
		"node22/node_modules/node-linux-" + nodeArch() + "/bin/node"}
	everything = dep{"@modelcontextprotocol/server-everything", EnvEverythingBin,
		"everything/node_modules/.bin/mcp-server-everything"}
	conformance = dep{"@modelcontextprotocol/conformance", EnvConformanceJS,
		"conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"}
	goEverything = dep{"go-sdk conformance everything-server", EnvGoEverythingServer,
		"bin/everything-server"}
	goEverythingClient = dep{"go-sdk conformance everything-client", EnvGoEverythingClient,
		"bin/everything-client"}
	aimock = dep{"@copilotkit/aimock", EnvAimockBin, "aimock/node_modules/.bin/aimock"}
	mcpSDK = dep{"@modelcontextprotocol/sdk", EnvMCPSDK,
		"mcp-sdk/node_modules/@modelcontextprotocol/sdk/package.json"}
	aguiSDK = dep{"@ag-ui/client", EnvAGUISDK,
		"ag-ui/node_modules/@ag-ui/client/package.json"}
)

// Node22 returns the path of a Node 22 executable.
func Node22(t testing.TB) string { t.Helper(); return find(t, node22) }

// EverythingServer returns the path of the mcp-server-everything executable
// (an npm bin script; it finds node through PATH, so run it with a PATH
// whose first node is Node22's directory, or run it as
// `Node22(t) <path>`).
func EverythingServer(t testing.TB) string { t.Helper(); return find(t, everything) }

// ConformanceJS returns the path of the conformance suite's entry script,
// to be run as `Node22(t) ConformanceJS(t) server --url ...`.
func ConformanceJS(t testing.TB) string { t.Helper(); return find(t, conformance) }

// GoEverythingServer returns the path of the go-sdk conformance
// everything-server executable (`-http=127.0.0.1:PORT`, `-stateless=false`).
func GoEverythingServer(t testing.TB) string { t.Helper(); return find(t, goEverything) }

// GoEverythingClient returns the path of the go-sdk conformance
// everything-client executable: the client the conformance suite runs in
// client mode (`conformance client --command PATH`; it takes the server URL
// as its last argument and the scenario from MCP_CONFORMANCE_SCENARIO).
func GoEverythingClient(t testing.TB) string { t.Helper(); return find(t, goEverythingClient) }

// Aimock returns the path of the aimock executable (an npm bin script; run
// it as `Node22(t) <path> -c CONFIG -p PORT`). It binds 127.0.0.1 by
// default.
func Aimock(t testing.TB) string { t.Helper(); return find(t, aimock) }

// TypeScriptSDK returns the node_modules folder that holds the TypeScript
// MCP SDK (@modelcontextprotocol/sdk) and its dependencies: a CommonJS
// script run with Node22 finds the SDK with this folder in NODE_PATH.
// WARDEN_MCP_SDK names the SDK's package.json.
func TypeScriptSDK(t testing.TB) string {
	t.Helper()
	p := find(t, mcpSDK)
	// p is NODE_MODULES/@modelcontextprotocol/sdk/package.json.
	return filepath.Dir(filepath.Dir(filepath.Dir(p)))
}

// AGUISDK returns the node_modules folder that holds the AG-UI TypeScript
// SDK (@ag-ui/client, @ag-ui/encoder, @ag-ui/core): a CommonJS script run
// with Node22 finds it with this folder in NODE_PATH. WARDEN_AGUI_SDK
// names @ag-ui/client's package.json.
func AGUISDK(t testing.TB) string {
	t.Helper()
	p := find(t, aguiSDK)
	// p is NODE_MODULES/@ag-ui/client/package.json.
	return filepath.Dir(filepath.Dir(filepath.Dir(p)))
}

// Paths returns the paths of Node 22 and aimock for programs that are not
// tests (the bench), or why one is missing.
func Paths() (node, aimockBin string, err error) {
	var problem string
	if node, problem = lookup(node22); problem != "" {
		return "", "", errors.New("Node 22: " + problem)
	}
	if aimockBin, problem = lookup(aimock); problem != "" {
		return "", "", errors.New("@copilotkit/aimock: " + problem)
	}
	return node, aimockBin, nil
}

// RequireDeps reports whether missing dependencies fail tests rather than
// skip them (WARDEN_REQUIRE_DEPS=1).
func RequireDeps() bool { return os.Getenv(EnvRequireDeps) == "1" }

func find(t testing.TB, d dep) string {
	t.Helper()
	p, problem := lookup(d)
	if problem == "" {
		return p
	}
	missing(t, d.name+": "+problem+"; run `make deps` (or set "+d.env+")")
	return ""
}

// lookup returns d's path, or a description of why there is none.
func lookup(d dep) (path, problem string) {
	if p := os.Getenv(d.env); p != "" {
		if !isFile(p) {
			return "", d.env + "=" + p + " does not exist"
		}
		return p, ""
	}
	dir, err := depsDir()
	if err != nil {
		return "", err.Error()
	}
	p := filepath.Join(dir, filepath.FromSlash(d.rel))
	if !isFile(p) {
		return "", p + " does not exist"
	}
	return p, ""
}

func missing(t testing.TB, msg string) {
	t.Helper()
	if RequireDeps() {
		t.Fatalf("%s (%s=1)", msg, EnvRequireDeps)
	}
	t.Skip(msg)
}

// depsDir is $WARDEN_DEPS_DIR, or .cache/deps at the module root.
func depsDir() (string, error) {
	if d := os.Getenv(EnvDepsDir); d != "" {
		return d, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ".cache", "deps"), nil
}

// ModuleRoot returns the directory holding warden's go.mod, found by walking
// up from the working directory (a test's working directory is its package
// directory).
func ModuleRoot(t testing.TB) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && declaresModule(data, ModulePath) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: no go.mod of " + ModulePath + " above " + wd)
		}
		dir = parent
	}
}

// declaresModule reports whether go.mod data declares the module path, so
// that nested modules (tools/, testdata) are walked past.
func declaresModule(data []byte, path string) bool {
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "module" && strings.Trim(f[1], `"`) == path {
			return true
		}
	}
	return false
}

// nodeArch is the suffix of the node-linux-* npm package for this machine.
func nodeArch() string {
	if runtime.GOARCH == "amd64" {
		return "x64"
	}
	return runtime.GOARCH
}

// SharedDir returns the project's shared folder: $WARDEN_SHARED_DIR, or the
// folder "shared" next to the module root (../shared). A fresh clone (as in
// CI) has no such folder, so when it is missing the test is skipped, even
// under WARDEN_REQUIRE_DEPS=1; it fails only when WARDEN_SHARED_DIR names a
// folder that does not exist.
func SharedDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv(EnvSharedDir); d != "" {
		if !isDir(d) {
			t.Fatalf("%s=%s is not a directory", EnvSharedDir, d)
		}
		return d
	}
	d := filepath.Join(filepath.Dir(ModuleRoot(t)), "shared")
	if !isDir(d) {
		t.Skipf("shared folder %s not found (set %s)", d, EnvSharedDir)
	}
	return d
}

// FreeLoopbackAddr returns "127.0.0.1:PORT" for a port that was free a
// moment ago. Another process may take it before the caller binds it; where
// the code under test can listen on ":0" and report its address, prefer that.
func FreeLoopbackAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: listen on loopback: %v", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return addr
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
