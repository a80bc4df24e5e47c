package config

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentwarden/warden/internal/secproc"
)

var update = flag.Bool("update", false, "rewrite testdata/bad/*.golden from the current output (then read every diff)")

// TestBadConfigs loads each testdata/bad/*.yaml and compares the rendered
// problems with the .golden file next to it.
func TestBadConfigs(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 16 {
		t.Fatalf("found %d bad configs, want at least 16", len(files))
	}
	for _, file := range files {
		file = filepath.ToSlash(file)
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			cfg, err := Load(file)
			if err == nil {
				t.Fatalf("Load succeeded, want problems")
			}
			if cfg != nil {
				t.Errorf("Load returned a Config along with problems")
			}
			var ps *Problems
			if !errors.As(err, &ps) {
				t.Fatalf("Load error is %T, want *Problems: %v", err, err)
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(file, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("problems differ from %s (-want +got):\n%s", golden, diff)
			}
		})
	}
}

// TestExamples proves every shipped example loads cleanly.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("found %d examples, want at least demo.yaml and multi.yaml", len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			if _, err := Load(file); err != nil {
				t.Fatalf("Load(%s):\n%v", file, err)
			}
		})
	}

	demo, err := Load("../../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := demo.Gateway.DefaultUpstreamName(); got != "demo" {
		t.Errorf("demo: default upstream %q, want demo", got)
	}
	u := demo.Gateway.Upstreams[0]
	if want := []string{"warden", "demo-server", "--root", "./demo-data"}; !slices.Equal(u.Command, want) || u.Transport() != TransportStdio {
		t.Errorf("demo upstream: command %q transport %q, want %q over stdio", u.Command, u.Transport(), want)
	}

	multi, err := Load("../../examples/multi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var transports []string
	for _, u := range multi.Gateway.Upstreams {
		transports = append(transports, u.Name+"="+u.Transport())
	}
	if want := []string{"everything=stdio", "docs=http"}; !slices.Equal(transports, want) {
		t.Errorf("multi upstreams %q, want %q", transports, want)
	}
	docs, _ := multi.Gateway.Upstream("docs")
	if got := docs.Headers["Authorization"]; got != "Bearer ${env:DOCS_MCP_TOKEN}" {
		t.Errorf("Parse expanded or changed a reference: Authorization = %q", got)
	}
}

// TestDefaults checks that a minimal file gets every documented default.
func TestDefaults(t *testing.T) {
	cfg, err := Parse([]byte("version: 1\ngateway:\n  upstreams:\n    - name: a\n      command: [a]\n"), "min.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	// Written out literally, not as Default(), so that a changed default
	// fails here and is noticed in docs/config.md too.
	want := &Config{
		Version: 1,
		Log:     LogConfig{Level: "info", Format: "text"},
		Gateway: GatewayConfig{
			Listen: ListenConfig{Addr: "127.0.0.1:8787", Path: "/mcp"},
			Limits: LimitsConfig{
				MaxMessageBytes:    4194304,
				MaxDepth:           64,
				RequestTimeout:     5 * time.Minute,
				SessionIdleTimeout: 30 * time.Minute,
				DrainTimeout:       10 * time.Second,

				MaxSessions:             4096,
				MaxSessionsPerPrincipal: 256,
				MaxChildrenPerUpstream:  64,
				HeaderTimeout:           10 * time.Second,
				BodyTimeout:             30 * time.Second,
			},
			Upstreams: []Upstream{{
				Name:            "a",
				Command:         []string{"a"},
				ShutdownTimeout: 2 * time.Second,
			}},
			ZeroTrust: ZeroTrustConfig{Store: "sqlite", Skew: 5 * time.Second, StoreTimeout: 500 * time.Millisecond},
			Admin:     AdminConfig{Addr: "127.0.0.1:8788"},
			Audit:     AuditConfig{},
		},
		Telemetry: TelemetryConfig{Capture: "redacted", Propagate: true,
			Spans: ExporterConfig{Exporter: "none"}, OCSF: ExporterConfig{Exporter: "none", Profile: "standard"}},
	}
	if diff := cmp.Diff(want, cfg, cmpopts.IgnoreUnexported(Config{}, Pattern{})); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	u := cfg.Gateway.Upstreams[0]
	if u.PassEnv != nil {
		t.Errorf("PassEnv = %q, want nil (the transport's default set)", u.PassEnv)
	}
	if cfg.Gateway.DefaultUpstreamName() != "a" {
		t.Errorf("DefaultUpstreamName = %q, want the only upstream", cfg.Gateway.DefaultUpstreamName())
	}
	if !cfg.Gateway.Listen.Loopback() {
		t.Errorf("default listen address %q is not loopback", cfg.Gateway.Listen.Addr)
	}
	if ok, rule := u.Tools.Permits("anything"); !ok {
		t.Errorf("empty tool list denies: %s", rule)
	}

	// An explicitly empty pass_env is not the default.
	cfg, err = Parse([]byte("version: 1\ngateway:\n  upstreams:\n    - name: a\n      command: [a]\n      pass_env: []\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if pe := cfg.Gateway.Upstreams[0].PassEnv; pe == nil || len(pe) != 0 {
		t.Errorf("pass_env: [] decoded as %#v, want an empty non-nil slice", pe)
	}
}

// TestAllProblemsAtOnce proves Validate does not stop at the first problem.
func TestAllProblemsAtOnce(t *testing.T) {
	src := `version: 2
log:
  format: xml
gateway:
  listen:
    path: mcp
  upstreams:
    - name: Demo
      command: [warden, demo-server]
    - name: files
      url: "http://127.0.0.1:18081/mcp"
      dir: /srv
`
	cfg, err := Parse([]byte(src), "five.yaml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	err = cfg.Validate()
	var ps *Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Validate returned %v, want *Problems", err)
	}
	type at struct {
		path string
		line int
	}
	var got []at
	for _, p := range *ps {
		got = append(got, at{p.Path, p.Line})
		if p.File != "five.yaml" || p.Column == 0 || p.Message == "" {
			t.Errorf("incomplete problem %+v", p)
		}
	}
	want := []at{
		{"version", 1},
		{"log.format", 3},
		{"gateway.listen.path", 6},
		{"gateway.upstreams[0].name", 8},
		{"gateway.upstreams[1].dir", 12},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(at{})); diff != "" {
		t.Errorf("problems (-want +got):\n%s\nall:\n%v", diff, err)
	}
}

// TestScalars pins how each kind of field reads YAML scalars.
func TestScalars(t *testing.T) {
	const head = "version: 1\ngateway:\n  upstreams:\n    - name: a\n      command: [a]\n"
	tests := []struct {
		name, src string
		wantErr   string // substring of the one problem; "" for success
		check     func(*Config) bool
	}{
		{"unquoted text kept verbatim", head + "      env: {V: 1.10, O: 0755, T: 2001-12-14, B: yes}\n", "",
			func(c *Config) bool {
				return cmp.Equal(c.Gateway.Upstreams[0].Env, map[string]string{"V": "1.10", "O": "0755", "T": "2001-12-14", "B": "yes"})
			}},
		{"null is not a string", head + "      env: {V: ~}\n", "expected a string, got null", nil},
		{"empty value is null", head + "      dir:\n", "expected a string, got null", nil},
		{"quoted bool", "version: 1\ngateway:\n  listen:\n    insecure_disable_host_check: \"true\"\n", `expected true or false, got the string "true"`, nil},
		{"capitalised bool", "version: 1\ngateway:\n  listen:\n    insecure_disable_host_check: True\n", "expected true or false, got the boolean True", nil},
		{"bool true", "version: 1\ngateway:\n  listen:\n    insecure_disable_host_check: true\n", "",
			func(c *Config) bool { return c.Gateway.Listen.InsecureDisableHostCheck }},
		{"quoted int", "version: \"1\"\n", `expected an integer, got the string "1"`, nil},
		{"float", "version: 1.0\n", `expected a base-10 integer, got "1.0"`, nil},
		{"hex", "version: 0x1\n", `expected a base-10 integer, got "0x1"`, nil},
		{"exponent", "gateway:\n  limits:\n    max_message_bytes: 1e6\n", `got "1e6"`, nil},
		{"underscore", "gateway:\n  limits:\n    max_message_bytes: 1_000_000\n", `got "1_000_000"`, nil},
		{"overflow", "version: 99999999999999999999\n", "out of range", nil},
		{"duration", "version: 1\ngateway:\n  limits:\n    request_timeout: 1h30m\n", "",
			func(c *Config) bool { return c.Gateway.Limits.RequestTimeout == 90*time.Minute }},
		{"quoted duration", "version: 1\ngateway:\n  limits:\n    request_timeout: \"90s\"\n", "",
			func(c *Config) bool { return c.Gateway.Limits.RequestTimeout == 90*time.Second }},
		{"mapping for list", "gateway:\n  listen:\n    allowed_hosts: {a: b}\n", "expected a list of strings, got a mapping", nil},
		{"top level list", "- version: 1\n", "expected a mapping at the top level, got a list", nil},
		{"top level scalar", "warden\n", "expected a mapping at the top level", nil},
		{"document marker only", "---\n", "the file is empty", nil},
		{"complex key", "? [a]\n: 1\n", "expected a string key, got a list", nil},
		{"quoted keys are keys", "\"version\": 1\n", "", func(c *Config) bool { return c.Version == 1 }},
		{"non-specific tag", "version: 1\nlog: {level: ! debug}\n", "", func(c *Config) bool { return c.Log.Level == "debug" }},
		{"normalised suggestion", "version: 1\ngateway:\n  defaultUpstream: a\n", `unknown field "defaultUpstream" (did you mean "default_upstream"?)`, nil},
		{"args hint", head + "      args: [x]\n", `unknown field "args" (put the program and its arguments in one list`, nil},
		{"command as a string", "gateway:\n  upstreams:\n    - command: npx -y pkg\n", `(write a YAML list, such as ["npx", "-y", "pkg"])`, nil},
		{"no suggestion when far", "version: 1\nplugins: []\n", "unknown field \"plugins\"\n", nil},
		{"roots is a mapping", "version: 1\ngateway:\n  a2a:\n    - delegation: {roots: 5}\n", "gateway.a2a[0].delegation.roots: expected a mapping of names to lists of strings, got the integer 5", nil},
		{"roots", "version: 1\ngateway:\n  a2a:\n    - delegation: {roots: {alice: [\"mail:*\"]}}\n", "",
			func(c *Config) bool {
				return cmp.Equal(c.Gateway.A2A[0].Delegation.Roots, map[string][]string{"alice": {"mail:*"}})
			}},
		{"internal webhooks", "version: 1\ngateway:\n  a2a:\n    - {name: b, allow_internal_webhooks: true}\n    - {name: c}\n", "",
			func(c *Config) bool {
				return c.Gateway.A2A[0].AllowInternalWebhooks && !c.Gateway.A2A[1].AllowInternalWebhooks
			}},
		{"invert", "version: 1\ngateway:\n  taint: {enabled: false}\n", "", func(c *Config) bool { return c.Gateway.Taint.Disabled }},
		{"present section", "version: 1\ngateway:\n  audit: {}\n  security: {}\n", "",
			func(c *Config) bool {
				return c.Gateway.Audit.Enabled && c.Gateway.Security.Enabled && c.Gateway.Security.Actions != nil
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.src), "")
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if !tt.check(cfg) {
					t.Errorf("decoded wrongly: %+v", cfg)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse succeeded, want %q", tt.wantErr)
			}
			ps := *err.(*Problems)
			if len(ps) != 1 || !strings.Contains(err.Error()+"\n", tt.wantErr) {
				t.Errorf("got %d problem(s):\n%v\nwant one containing %q", len(ps), err, tt.wantErr)
			}
		})
	}
}

// TestParseKeepsReferences proves Parse reads no environment and
// ResolvedEnv/ResolvedHeaders expand only at use time.
func TestParseKeepsReferences(t *testing.T) {
	t.Setenv("WARDEN_TEST_TOKEN", "s3cret")
	src := `version: 1
gateway:
  upstreams:
    - name: cmd
      command: [srv]
      env:
        TOKEN: "${env:WARDEN_TEST_TOKEN}"
        PRICE: "$${5}"
        PLAIN: "a$b"
    - name: web
      url: "https://example.com/mcp"
      headers:
        Authorization: "Bearer ${env:WARDEN_TEST_TOKEN}"
`
	cfg, err := Load(writeFile(t, src))
	if err != nil {
		t.Fatal(err)
	}
	cmdU, webU := cfg.Gateway.Upstreams[0], cfg.Gateway.Upstreams[1]
	if got := cmdU.Env["TOKEN"]; got != "${env:WARDEN_TEST_TOKEN}" {
		t.Errorf("Parse changed the reference to %q", got)
	}

	lookup := func(name string) (string, bool) {
		if name == "WARDEN_TEST_TOKEN" {
			return "s3cret", true
		}
		return "", false
	}
	env, err := cmdU.ResolvedEnv(lookup)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"TOKEN": "s3cret", "PRICE": "${5}", "PLAIN": "a$b"}; !cmp.Equal(env, want) {
		t.Errorf("ResolvedEnv = %q, want %q", env, want)
	}
	if cmdU.Env["TOKEN"] != "${env:WARDEN_TEST_TOKEN}" {
		t.Errorf("ResolvedEnv modified the Config")
	}
	h, err := webU.ResolvedHeaders(lookup)
	if err != nil || h["Authorization"] != "Bearer s3cret" {
		t.Errorf("ResolvedHeaders = %q, %v", h, err)
	}

	unset := func(string) (string, bool) { return "", false }
	_, err = webU.ResolvedHeaders(unset)
	if err == nil || !strings.Contains(err.Error(), "WARDEN_TEST_TOKEN is not set") || !strings.Contains(err.Error(), `upstream "web": headers.Authorization`) {
		t.Errorf("unset variable: err = %v", err)
	}
	injected := func(string) (string, bool) { return "x\r\nX-Evil: 1", true }
	_, err = webU.ResolvedHeaders(injected)
	if err == nil || strings.Contains(err.Error(), "Evil") {
		t.Errorf("header injection through the environment: err = %v (must fail without echoing the value)", err)
	}
}

// TestProgrammaticConfig checks that a Config built in code validates, and
// that its problems carry no position.
func TestProgrammaticConfig(t *testing.T) {
	c := Default()
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "gateway.upstreams: at least one upstream is required") {
		t.Errorf("Default().Validate() = %v, want the missing upstream", err)
	}
	c.Gateway.Upstreams = []Upstream{{Name: "x", URL: "http://127.0.0.1:1/mcp", ShutdownTimeout: time.Second, Tools: List{Deny: []Pattern{{}}}}}
	err := c.Validate()
	var ps *Problems
	if !errors.As(err, &ps) || len(*ps) != 1 {
		t.Fatalf("Validate = %v, want one problem (the zero Pattern)", err)
	}
	if p := (*ps)[0]; p.Line != 0 || p.File != "" || p.Path != "gateway.upstreams[0].tools.deny[0]" {
		t.Errorf("problem = %+v", p)
	}
	c.Gateway.Upstreams[0].Tools = List{}
	if err := c.Validate(); err != nil {
		t.Errorf("valid config: %v", err)
	}
	if (*Config)(nil).Validate() == nil {
		t.Error("nil Config validated")
	}
}

// TestValidateValues covers the value checks one problem at a time.
func TestValidateValues(t *testing.T) {
	tests := []struct {
		name    string
		mut     func(*Config)
		wantErr string
	}{
		{"any interface", func(c *Config) { c.Gateway.Listen.Addr = ":0" }, ""},
		{"ipv6 listen", func(c *Config) { c.Gateway.Listen.Addr = "[::1]:8787" }, ""},
		{"no port", func(c *Config) { c.Gateway.Listen.Addr = "127.0.0.1" }, "want host:port"},
		{"named port", func(c *Config) { c.Gateway.Listen.Addr = "127.0.0.1:http" }, "invalid port"},
		{"root path", func(c *Config) { c.Gateway.Listen.Path = "/" }, ""},
		{"trailing slash", func(c *Config) { c.Gateway.Listen.Path = "/mcp/" }, `did you mean "/mcp"?`},
		{"query in path", func(c *Config) { c.Gateway.Listen.Path = "/mcp?x" }, "without query"},
		{"hosts", func(c *Config) {
			c.Gateway.Listen.AllowedHosts = []string{"warden.internal", "warden.internal:8443", "[::1]:8787", "[fe80::1]", "10.0.0.2"}
		}, ""},
		{"host with scheme", func(c *Config) { c.Gateway.Listen.AllowedHosts = []string{"http://a.example"} }, "without scheme or path"},
		{"host wildcard", func(c *Config) { c.Gateway.Listen.AllowedHosts = []string{"*.example.com"} }, "wildcards are not supported"},
		{"host upper case", func(c *Config) { c.Gateway.Listen.AllowedHosts = []string{"Example.com"} }, "lower case"},
		{"bare ipv6 host", func(c *Config) { c.Gateway.Listen.AllowedHosts = []string{"::1"} }, "IPv6 address in brackets"},
		{"origins", func(c *Config) {
			c.Gateway.Listen.AllowedOrigins = []string{"https://app.example.com", "http://localhost:5173", "vscode-webview://abc"}
		}, ""},
		{"null origin", func(c *Config) { c.Gateway.Listen.AllowedOrigins = []string{"null"} }, `"null" is not allowed`},
		{"origin slash", func(c *Config) { c.Gateway.Listen.AllowedOrigins = []string{"https://a.example/"} }, "drop the trailing '/'"},
		{"origin no scheme", func(c *Config) { c.Gateway.Listen.AllowedOrigins = []string{"a.example"} }, "want scheme://host[:port]"},
		{"url credentials", func(c *Config) { c.Gateway.Upstreams[0].URL = "https://u:p@a.example/mcp" }, "credentials in the URL"},
		{"url fragment", func(c *Config) { c.Gateway.Upstreams[0].URL = "https://a.example/mcp#x" }, "fragment"},
		{"url no host", func(c *Config) { c.Gateway.Upstreams[0].URL = "http:///mcp" }, "has no host"},
		{"url env ref", func(c *Config) { c.Gateway.Upstreams[0].URL = "https://a.example/${env:X}" }, "only expanded in env and headers"},
		{"header name", func(c *Config) { c.Gateway.Upstreams[0].Headers = map[string]string{"Bad Name": "x"} }, `invalid header name "Bad Name"`},
		{"header twice", func(c *Config) { c.Gateway.Upstreams[0].Headers = map[string]string{"X-A": "1", "x-a": "2"} }, "case-insensitive"},
		{"agui header shell ref", func(c *Config) {
			c.Gateway.AGUI = []AGUIUpstream{{Name: "c", URL: "http://127.0.0.1:1/agent", Headers: map[string]string{"Authorization": "Bearer ${AGENT_TOKEN}"}}}
		}, `unsupported reference "${AGENT_TOKEN}"`},
		{"agui header env ref", func(c *Config) {
			c.Gateway.AGUI = []AGUIUpstream{{Name: "c", URL: "http://127.0.0.1:1/agent", Headers: map[string]string{"Authorization": "Bearer ${env:AGENT_TOKEN}"}}}
		}, ""},
		{"agui header set by warden", func(c *Config) {
			c.Gateway.AGUI = []AGUIUpstream{{Name: "c", URL: "http://127.0.0.1:1/agent", Headers: map[string]string{"Content-Length": "1"}}}
		}, "set by warden's HTTP transport"},
		{"header value newline", func(c *Config) { c.Gateway.Upstreams[0].Headers = map[string]string{"X-A": "1\nX-B: 2"} }, "control characters"},
		{"authorization allowed", func(c *Config) {
			c.Gateway.Upstreams[0].Headers = map[string]string{"Authorization": "Bearer ${env:T}"}
		}, ""},
		{"unterminated ref", func(c *Config) { c.Gateway.Upstreams[0].Headers = map[string]string{"X-A": "${env:T"} }, "unterminated reference"},
		{"bad ref name", func(c *Config) { c.Gateway.Upstreams[0].Headers = map[string]string{"X-A": "${env:1T}"} }, "not a valid environment variable name"},
		{"headers on command", func(c *Config) {
			c.Gateway.Upstreams[0] = Upstream{Name: "a", Command: []string{"a"}, Headers: map[string]string{}, ShutdownTimeout: time.Second}
		}, "headers only apply to a url upstream"},
		{"empty command", func(c *Config) {
			c.Gateway.Upstreams[0] = Upstream{Name: "a", Command: []string{}, ShutdownTimeout: time.Second}
		}, "command is empty"},
		{"empty program", func(c *Config) {
			c.Gateway.Upstreams[0] = Upstream{Name: "a", Command: []string{""}, ShutdownTimeout: time.Second}
		}, "program name is empty"},
		{"env name", func(c *Config) {
			c.Gateway.Upstreams[0] = Upstream{Name: "a", Command: []string{"a"}, Env: map[string]string{"A-B": ""}, ShutdownTimeout: time.Second}
		}, `invalid variable name "A-B"`},
		{"pass_env name", func(c *Config) {
			c.Gateway.Upstreams[0] = Upstream{Name: "a", Command: []string{"a"}, PassEnv: []string{"PATH", "1X"}, ShutdownTimeout: time.Second}
		}, `pass_env[1]: invalid variable name "1X"`},
		{"name too long", func(c *Config) { c.Gateway.Upstreams[0].Name = strings.Repeat("a", 64) }, "invalid name"},
		{"name 63", func(c *Config) { c.Gateway.Upstreams[0].Name = strings.Repeat("a", 63) }, ""},
		{"zero shutdown", func(c *Config) { c.Gateway.Upstreams[0].ShutdownTimeout = 0 }, "shutdown_timeout: must be greater than zero"},
		{"negative timeout", func(c *Config) { c.Gateway.Limits.RequestTimeout = -time.Second }, "must be greater than zero, got -1s"},
		{"limits at bounds", func(c *Config) {
			c.Gateway.Limits.MaxMessageBytes, c.Gateway.Limits.MaxDepth = 1024, 1000
		}, ""},
		{"limits past bounds", func(c *Config) { c.Gateway.Limits.MaxMessageBytes = 1023 }, "between 1024 (1 KiB) and 67108864 (64 MiB), got 1023"},
		{"level warn", func(c *Config) { c.Log.Level = "warn" }, ""},
		{"level warning", func(c *Config) { c.Log.Level = "warning" }, `unknown level "warning"`},
		{"taint action", func(c *Config) { c.Gateway.Taint.Action = "block" }, `gateway.taint.action: the taint action must be one of require_approval, deny, flag, not "block"`},
		{"taint min_match", func(c *Config) { c.Gateway.Taint.MinMatch = 4 }, "gateway.taint.min_match: min_match must be between 8 and 4096"},
		{"taint ttl", func(c *Config) { c.Gateway.Taint.TTL = -time.Second }, "gateway.taint.ttl"},
		{"taint flag", func(c *Config) { c.Gateway.Taint.Action, c.Gateway.Taint.MinMatch = "flag", 48 }, ""},
		{"tls cert without key", func(c *Config) { c.Gateway.Listen.TLS.CertFile = "a.crt" }, "gateway.listen.tls: cert_file and key_file go together"},
		{"client CA without TLS", func(c *Config) { c.Gateway.Listen.TLS.ClientCAFile = "ca.pem" }, "gateway.listen.tls.client_ca_file: client certificates need TLS"},
		{"mtls", func(c *Config) {
			c.Gateway.Listen.TLS = ListenTLS{CertFile: "a.crt", KeyFile: "a.key", ClientCAFile: "ca.pem"}
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.Gateway.Upstreams = []Upstream{{Name: "u", URL: "http://127.0.0.1:18081/mcp", ShutdownTimeout: time.Second}}
			tt.mut(c)
			err := c.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("Validate: %v", err)
				}
				return
			}
			if err == nil || len(*err.(*Problems)) != 1 || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Validate = %v, want one problem containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestSyntaxErrorLines pins the line numbers reported for YAML syntax
// errors: the library numbers parser errors from 0 and scanner errors from 1.
func TestSyntaxErrorLines(t *testing.T) {
	tests := []struct {
		src  string
		want string
	}{
		{"a: b: c\n", "f:1: invalid YAML: mapping values are not allowed in this context"},
		{"version: 1\n\tlog: {}\n", "f:2: invalid YAML: found a tab character that violates indentation"},
		{"version: 1\nlog: [a\n", "f:2: invalid YAML: did not find expected ',' or ']'"},
		{"version: 1\nlog: {a: 1\n", "f:2: invalid YAML: did not find expected ',' or '}'"},
		{"version: 1\nlog:\n  a: 1\n b: 2\n", "f:4: invalid YAML: did not find expected key"},
		{"- a\nb: c\n", "f:2: invalid YAML: did not find expected '-' indicator"},
		{"version: 1\nlog:\n  level: \"x\n", "f:3: invalid YAML: found unexpected end of stream"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.src), "f")
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q) = %v, want %s", tt.src, err, tt.want)
		}
	}
}

func TestProblemString(t *testing.T) {
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{File: "w.yaml", Path: "a.b", Line: 3, Column: 5, Message: "m"}, "w.yaml:3:5: a.b: m"},
		{Problem{File: "w.yaml", Line: 3, Message: "m"}, "w.yaml:3: m"},
		{Problem{File: "w.yaml", Path: "a", Message: "m"}, "w.yaml: a: m"},
		{Problem{Path: "a", Line: 1, Column: 1, Message: "m"}, "1:1: a: m"},
		{Problem{Path: "a", Message: "m"}, "a: m"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.p, got, tt.want)
		}
	}
}

func TestParent(t *testing.T) {
	for path, want := range map[string]string{
		"gateway.upstreams[2].url":               "gateway.upstreams[2]",
		"gateway.upstreams[2]":                   "gateway.upstreams",
		"version":                                "",
		`gateway.upstreams[0].headers["a.b[c]"]`: "gateway.upstreams[0].headers",
		`x["a\"]"]`:                              "x",
	} {
		if got := parent(path); got != want {
			t.Errorf("parent(%q) = %q, want %q", path, got, want)
		}
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "warden.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	var ps *Problems
	if err == nil || errors.As(err, &ps) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want a wrapped os.ErrNotExist", err)
	}
}

func TestZeroTrustConfig(t *testing.T) {
	good := `version: 1
gateway:
  zero_trust: {subject: alice, store: memory, skew: 2s, store_timeout: 250ms}
  upstreams:
    - name: pay
      command: [pay-server]
      require_token: [transfer_funds, "refund_*"]
`
	cfg, err := Parse([]byte(good), "zt.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatalf("valid zero-trust config refused: %v", err)
	}
	if ok, _ := cfg.Gateway.Upstreams[0].RequireToken.Permits("refund_all"); !ok || !cfg.Gateway.RequiresTokens() {
		t.Error("require_token patterns not applied")
	}
	if ok, _ := cfg.Gateway.Upstreams[0].RequireToken.Permits("echo"); ok {
		t.Error("require_token matched a tool it does not list")
	}
	if got := cfg.Gateway.ZeroTrust.StoreTimeout; got != 250*time.Millisecond {
		t.Errorf("store_timeout = %v, want 250ms", got)
	}

	bad := `version: 1
gateway:
  zero_trust: {store: redis, skew: 2m, store_path: /x.db, approval_channels: [admin, slack], store_timeout: 5ms}
  upstreams:
    - name: pay
      command: [pay-server]
      require_token: [transfer_funds]
`
	cfg, err = Parse([]byte(bad), "zt.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	for _, want := range []string{
		"gateway.zero_trust.redis_url: store: redis needs redis_url",
		"gateway.zero_trust.store_path: store_path is only for store: sqlite",
		"gateway.zero_trust.skew: skew must be between 0s and 60s",
		"gateway.zero_trust.store_timeout: store_timeout must be between 10ms and 30s, not 5ms",
		"gateway.zero_trust.subject: an upstream has require_token",
		`gateway.zero_trust.approval_channels[1]: unknown approval channel "slack" (admin, elicitation)`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("problems %v lack %q", err, want)
		}
	}
}

// hold_for_approval without a tool that needs a token would hold nothing:
// the zero-trust stage that holds calls would not run, and calls the
// security processor sends for approval would be refused instead. The file
// is refused, at the setting, rather than read as if it held calls.
func TestHoldForApprovalNeedsTheZeroTrustStage(t *testing.T) {
	doc := `version: 1
gateway:
  zero_trust: {subject: alice, hold_for_approval: true}
  upstreams:
    - name: pay
      command: [pay-server]
%s`
	cfg, err := Parse([]byte(fmt.Sprintf(doc, "")), "hold.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err == nil || !strings.Contains(err.Error(), "hold.yaml:3:") || !strings.Contains(err.Error(), "gateway.zero_trust.hold_for_approval: calls are held in the zero-trust stage") {
		t.Fatalf("hold_for_approval with no tool needing a token: %v", err)
	}
	cfg, err = Parse([]byte(fmt.Sprintf(doc, "      require_token: [transfer_funds]\n")), "hold.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatalf("hold_for_approval with require_token: %v", err)
	}
}

func TestRequireSignatureNeedsAPinnedKey(t *testing.T) {
	cfg, err := Parse([]byte(`version: 1
gateway:
  zero_trust: {subject: alice}
  upstreams:
    - name: pay
      command: [pay-server]
      require_signature: [transfer_funds]
`), "sig.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err == nil || !strings.Contains(err.Error(), `gateway.zero_trust.client_keys: an upstream has require_signature, so client_keys needs the public key of subject "alice"`) {
		t.Fatalf("got %v", err)
	}
	if !cfg.Gateway.RequiresTokens() {
		t.Error("require_signature alone does not count as requiring tokens")
	}
}

func TestClassificationRules(t *testing.T) {
	cfg, err := Parse([]byte(`version: 1
gateway:
  zero_trust:
    subject: alice
    classification:
      - {name: big, level: 1, when: 'tool.name == "transfer_funds" && args.amount > 10000'}
      - {level: 4, when: 'server == "pay"'}
  audit: {}
  upstreams:
    - name: pay
      command: [pay-server]
`), "class.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Gateway.RequiresTokens() {
		t.Error("classification rules do not make the gateway require tokens")
	}
	if r := cfg.Gateway.ZeroTrust.Classification; len(r) != 2 || r[0].Name != "big" || r[1].Level != 4 {
		t.Fatalf("rules %+v", r)
	}

	cfg, err = Parse([]byte(`version: 1
gateway:
  zero_trust:
    subject: alice
    classification:
      - {level: 7, when: 'true'}
      - {level: 2, when: 'tool.name =='}
  upstreams:
    - name: pay
      command: [pay-server]
`), "class.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	for _, want := range []string{
		"gateway.zero_trust.classification[0].level: level must be 1 (most sensitive) to 5, not 7",
		"class.yaml:7:26: gateway.zero_trust.classification[1].when: CEL: ERROR: <input>:1:13: Syntax error",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("problems lack %q:\n%v", want, err)
		}
	}
	_, err = Parse([]byte("version: 1\ngateway:\n  zero_trust:\n    classification:\n      - {level: 2, when: 'true', colour: red}\n"), "class.yaml")
	if err == nil || !strings.Contains(err.Error(), `gateway.zero_trust.classification[0]: unknown field "colour"`) {
		t.Errorf("unknown field: %v", err)
	}
}

// TestTierTwoNeedsAudit: the standard's Tier 2 (levels 2 and 3) and Tier 3
// (level 1) require the audit log, so a classification rule that can put a
// call there is refused while gateway.audit is off.
func TestTierTwoNeedsAudit(t *testing.T) {
	const want = `gateway.audit.enabled: gateway.zero_trust.classification[1] ("pay") classifies calls at level 3 (Tier 2), and Tiers 2 and 3 require the audit log`
	for _, tc := range []struct {
		name, rules, audit string
		refused            bool
	}{
		{"tier 1 without audit", "{level: 5, when: 'true'}", "", false},
		{"tier 2 without audit", "{level: 4, when: 'true'}, {name: pay, level: 3, when: 'server == \"pay\"'}", "", true},
		{"tier 2 with audit off", "{level: 4, when: 'true'}, {name: pay, level: 3, when: 'server == \"pay\"'}", "  audit: {enabled: false}\n", true},
		{"tier 2 with audit", "{level: 2, when: 'true'}", "  audit: {}\n", false},
		{"tier 3 with jsonl audit", "{level: 1, when: 'true'}", "  audit: {backend: jsonl}\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte("version: 1\ngateway:\n  zero_trust:\n    subject: alice\n    classification: ["+tc.rules+"]\n"+
				tc.audit+"  upstreams: [{name: pay, command: [pay-server]}]\n"), "tier.yaml")
			if err != nil {
				t.Fatal(err)
			}
			err = cfg.Validate()
			switch {
			case tc.refused && (err == nil || !strings.Contains(err.Error(), want)):
				t.Fatalf("got %v, want a problem %q", err, want)
			case !tc.refused && err != nil:
				t.Fatalf("refused: %v", err)
			}
		})
	}
}

func TestTaintSection(t *testing.T) {
	base := "version: 1\ngateway:\n  upstreams:\n    - name: a\n      command: [a]\n"
	cfg, err := Parse([]byte(base), "t.yaml")
	if err != nil || cfg.Gateway.Taint.Disabled {
		t.Fatalf("without a taint section tracking must be on: %v, %+v", err, cfg.Gateway.Taint)
	}
	cfg, err = Parse([]byte(base+"  taint:\n    enabled: false\n"), "t.yaml")
	if err != nil || !cfg.Gateway.Taint.Disabled {
		t.Fatalf("enabled: false must turn it off: %v, %+v", err, cfg.Gateway.Taint)
	}
	cfg, err = Parse([]byte(base+"  taint:\n    action: deny\n    min_match: 40\n    sink_tools: [\"send_*\"]\n    ttl: 10m\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tc := cfg.Gateway.Taint
	if tc.Disabled || tc.Action != "deny" || tc.MinMatch != 40 || tc.TTL != 10*time.Minute || len(tc.SinkTools) != 1 || !tc.SinkTools[0].Match("send_email") {
		t.Fatalf("taint = %+v", tc)
	}
	_, err = Parse([]byte(base+"  taint:\n    sinks: [x]\n"), "t.yaml")
	if err == nil || !strings.Contains(err.Error(), `t.yaml:7:5: gateway.taint: unknown field "sinks"`) {
		t.Fatalf("an unknown field: %v", err)
	}
}

func TestAuditAndTelemetry(t *testing.T) {
	cfg, err := Parse([]byte(`version: 1
gateway:
  audit: {path: ./a.db}
  upstreams: [{name: s, command: [srv]}]
telemetry:
  conventions: [otel]
  spans: {exporter: jsonl, path: spans.jsonl}
  ocsf: {exporter: jsonl, path: ocsf.jsonl, profile: aitf}
`), "t.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Gateway.Audit; !a.Enabled || a.Backend != "" || a.Path != "./a.db" {
		t.Errorf("audit %+v: a present section turns it on, with the default backend (\"\": jsonl, or an SQLite log already at the path)", a)
	}
	if tc := cfg.Telemetry; tc.Capture != "redacted" || !tc.Propagate || tc.OCSF.Profile != "aitf" {
		t.Errorf("telemetry %+v: want the defaults redacted and propagate", tc)
	}
	if d := Default(); d.Gateway.Audit.Enabled {
		t.Error("audit is on without an audit section")
	}

	cfg, err = Parse([]byte(`version: 1
gateway:
  audit: {backend: csv}
  upstreams: [{name: s, command: [srv]}]
telemetry:
  conventions: [aitf, zipkin]
  capture: everything
  spans: {exporter: otlp, endpoint: "127.0.0.1:4318"}
  ocsf: {exporter: jsonl, endpoint: "https://siem.example.com/ocsf"}
`), "t.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	for _, want := range []string{
		`gateway.audit.backend: the audit backend must be one of sqlite, jsonl, not "csv"`,
		`telemetry.conventions[1]: a convention must be one of aitf, otel, not "zipkin"`,
		`telemetry.capture: capture must be one of redacted, capped, full, hash, off, not "everything"`,
		"telemetry.spans.endpoint: the otlp span exporter needs an http(s) endpoint",
		"telemetry.ocsf.endpoint: the jsonl OCSF exporter takes a path, not an endpoint",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("problems lack %q:\n%v", want, err)
		}
	}
}

// The audit log's checkpoint settings decode, and those that need a
// signing key, or a sane value, are refused with their paths.
func TestAuditCheckpoints(t *testing.T) {
	cfg, err := Parse([]byte(`version: 1
gateway:
  audit: {signing_key: keys/audit.jwk, checkpoint_every: 50, checkpoint_interval: 2s, witness: /mnt/other/witness.jsonl, witness_url: "https://witness.example.com/cp"}
  upstreams: [{name: s, command: [srv]}]
`), "t.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Gateway.Audit; a.SigningKey != "keys/audit.jwk" || a.CheckpointEvery != 50 || a.CheckpointInterval != 2*time.Second ||
		a.Witness != "/mnt/other/witness.jsonl" || a.WitnessURL != "https://witness.example.com/cp" {
		t.Errorf("audit %+v: the checkpoint settings as written", a)
	}
	cfg, err = Parse([]byte(`version: 1
gateway:
  audit: {checkpoint_every: -1, checkpoint_interval: -2s, witness: w.jsonl, witness_url: "http://witness.example.com/cp"}
  upstreams: [{name: s, command: [srv]}]
`), "t.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	for _, want := range []string{
		"gateway.audit.checkpoint_every: must be at least 1 record, got -1",
		"gateway.audit.checkpoint_interval: must be greater than zero, got -2s",
		"gateway.audit.witness_url: witness_url must be an https URL (http only on loopback)",
		"gateway.audit.witness: witness needs gateway.audit.signing_key",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("problems lack %q:\n%v", want, err)
		}
	}
}

// TestTelemetryDefaults: without a telemetry section nothing is exported;
// with one, spans and OCSF events go to JSONL files (in the data directory
// unless a path is given) until an exporter is named.
func TestTelemetryDefaults(t *testing.T) {
	for _, tc := range []struct {
		section, spans, ocsf string
	}{
		{"", "none", "none"},
		{"telemetry: {metrics: true}\n", "jsonl", "jsonl"},
		{"telemetry:\n  spans: {path: s.jsonl}\n  ocsf: {exporter: none}\n", "jsonl", "none"},
		{"telemetry:\n  spans: {exporter: otlp, endpoint: \"http://127.0.0.1:4318\"}\n", "otlp", "jsonl"},
	} {
		cfg, err := Parse([]byte("version: 1\ngateway:\n  upstreams: [{name: s, command: [srv]}]\n"+tc.section), "t.yaml")
		if err == nil {
			err = cfg.Validate()
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.section, err)
		}
		if got := cfg.Telemetry; got.Spans.Exporter != tc.spans || got.OCSF.Exporter != tc.ocsf {
			t.Errorf("%q: spans %q, ocsf %q; want %q, %q", tc.section, got.Spans.Exporter, got.OCSF.Exporter, tc.spans, tc.ocsf)
		}
	}
}

func TestSecurityQuarantineAction(t *testing.T) {
	cfg, err := Parse([]byte("version: 1\ngateway:\n  security: {prompt_injection: quarantine}\n  upstreams:\n    - name: a\n      command: [a]\n"), "q.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Gateway.Security.Quarantined(secproc.InjectedInstructions) || cfg.Gateway.Security.Quarantined(secproc.Exfiltration) {
		t.Fatal("quarantine is not reported for prompt_injection alone")
	}
	pc, err := cfg.Gateway.Security.Processor()
	if err != nil || pc.InjectedInstructions.Action != secproc.Flag {
		t.Fatalf("the processor must find (flag) what the gateway quarantines: %+v %v", pc.InjectedInstructions, err)
	}
	cfg.Gateway.Security.Actions["file_access"] = "isolate"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "want deny, require_approval, quarantine, flag or off") {
		t.Fatalf("an unknown action: %v", err)
	}
}

func TestSecurityRules(t *testing.T) {
	cfg, err := Parse([]byte(`version: 1
gateway:
  security:
    rules:
      - {name: no-prod, category: exfiltration, pattern: 'prod-db-\d+', severity: high}
      - name: big-transfer
        category: privilege_escalation
        action: deny
        when: kind == "tool_call" && tool == "transfer" && has(arguments.amount) && arguments.amount > 1000
  upstreams:
    - name: pay
      command: [pay-server]
`), "rules.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	pc, err := cfg.Gateway.Security.Processor()
	if err != nil {
		t.Fatal(err)
	}
	want := []secproc.Rule{
		{Name: "no-prod", Category: secproc.Exfiltration, Pattern: `prod-db-\d+`, Severity: secproc.High},
		{Name: "big-transfer", Category: secproc.PrivilegeEscalation, Action: secproc.Deny,
			When: `kind == "tool_call" && tool == "transfer" && has(arguments.amount) && arguments.amount > 1000`},
	}
	if diff := cmp.Diff(want, pc.Rules); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	if _, err := secproc.New(pc); err != nil {
		t.Errorf("the processor refuses a configuration that validated: %v", err)
	}
}

// TestSecurityRuleErrorPositions: a CEL error is placed at its character
// in the file when the file holds the expression verbatim, and at the
// expression otherwise; the message always gives its place in the
// expression.
func TestSecurityRuleErrorPositions(t *testing.T) {
	for _, c := range []struct {
		name, when string // when is YAML, after "when: " on line 6
		at         string // file:line:col
		expr       string // the position in the expression
	}{
		{"plain", `tool == "a" && nope`, "r.yaml:6:30", "1:16"},
		{"single quoted", `'tool == "a" && nope'`, "r.yaml:6:31", "1:16"},
		{"double quoted", `"tool == 'a' && nope"`, "r.yaml:6:31", "1:16"},
		{"characters, not bytes", `'tool == "é—é" && nope'`, "r.yaml:6:33", "1:18"},
		{"escape: at the value", `"tool == \"a\" && nope"`, "r.yaml:6:15", "1:16"},
		{"doubled quote: at the value", `'tool == ''a'' && nope'`, "r.yaml:6:15", "1:16"},
		{"literal block", "|\n          kind == \"tool_call\" &&\n            nope", "r.yaml:8:13", "2:3"},
		{"folded block: at the value", ">\n          kind == \"tool_call\" &&\n            nope", "r.yaml:6:15", "2:3"},
		{"flow over two lines: at the value", "'tool == \"a\" &&\n          nope'", "r.yaml:6:15", "1:16"},
		{"CRLF line ends", "|\r\n          kind == \"tool_call\" &&\r\n            nope", "r.yaml:8:13", "2:3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := "version: 1\ngateway:\n  security:\n    rules:\n      - name: r\n        when: " + c.when +
				"\n        category: exfiltration\n  upstreams: [{name: a, command: [a]}]\n"
			if strings.Contains(c.when, "\r") {
				src = strings.ReplaceAll(strings.ReplaceAll(src, "\r\n", "\n"), "\n", "\r\n")
			}
			cfg, err := Parse([]byte(src), "r.yaml")
			if err != nil {
				t.Fatal(err)
			}
			err = cfg.Validate()
			want := c.at + ": gateway.security.rules[0].when: CEL, at " + c.expr + " of the expression: undeclared reference to 'nope'"
			if err == nil || err.Error() != want {
				t.Fatalf("got  %v\nwant %s", err, want)
			}
		})
	}
}

func TestAdminConsoleSafety(t *testing.T) {
	doc := `version: 1
gateway:
  zero_trust: {subject: alice, hold_for_approval: true}
  admin:
%s
  upstreams:
    - name: pay
      command: [pay-server]
      require_token: [transfer_funds]
`
	parse := func(admin string) (*Config, error) {
		cfg, err := Parse([]byte(fmt.Sprintf(doc, admin)), "admin.yaml")
		if err == nil {
			err = cfg.Validate()
		}
		return cfg, err
	}
	cfg, err := parse("    addr: 127.0.0.1:8788")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Gateway.Admin.ConfirmLevels != nil || cfg.Gateway.Admin.Approvers != nil {
		t.Errorf("defaults: %+v, want nil (the console's defaults)", cfg.Gateway.Admin)
	}
	cfg, err = parse("    confirm_levels: [1, 2]\n    approvers: {1: 2, 2: 3}")
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Gateway.Admin; !slices.Equal(a.ConfirmLevels, []int{1, 2}) || a.Approvers[1] != 2 || a.Approvers[2] != 3 || len(a.Approvers) != 2 {
		t.Errorf("decoded %+v", a)
	}
	if cfg, err = parse("    webhook: {url: \"https://hooks.example.com/T0/B0/x\", slack: true}"); err != nil || !cfg.Gateway.Admin.Webhook.Slack ||
		cfg.Gateway.Admin.Webhook.URL != "https://hooks.example.com/T0/B0/x" {
		t.Errorf("webhook: %v %+v", err, cfg.Gateway.Admin.Webhook)
	}
	if cfg, err = parse("    confirm_levels: []"); err != nil || cfg.Gateway.Admin.ConfirmLevels == nil || len(cfg.Gateway.Admin.ConfirmLevels) != 0 {
		t.Errorf("an empty list must turn the gesture off: %v %#v", err, cfg.Gateway.Admin.ConfirmLevels)
	}
	for _, tc := range []struct{ admin, want string }{
		{"    confirm_levels: [0, 3]", "admin.yaml:5:22: gateway.admin.confirm_levels[0]: 0 is not a classification level (1..5)"},
		{"    confirm_levels: 2", "gateway.admin.confirm_levels: expected a list of classification levels"},
		{"    approvers: {6: 2}", `gateway.admin.approvers.6: "6" is not a classification level (1..5)`},
		{"    approvers: {1: 0}", "gateway.admin.approvers.1: 0 approvers: want 1 to 10 distinct people"},
		{"    approvers: [2]", "gateway.admin.approvers: expected a mapping of classification levels to numbers of approvers"},
		{"    webhook: {url: \"ftp://hooks.example.com\"}", `gateway.admin.webhook.url: "ftp://hooks.example.com": want an http or https URL`},
		{"    webhook: {url: \"https://u:p@hooks.example.com\"}", "gateway.admin.webhook.url"},
		{"    webhook: {slack: true}", "gateway.admin.webhook.url: the webhook has no url"},
		{"    webhook: {url: \"https://hooks.example.com/x\", console_url: \"localhost:8788\"}", "gateway.admin.webhook.console_url"},
		{"    webhook: {url: \"https://hooks.example.com/x\", slak: true}", `unknown field "slak" (did you mean "slack"?)`},
		{"    oidc: {redirect_url: \"http://127.0.0.1:8788/console/oidc/callback\"}", "gateway.admin.oidc.client_id: the console's client id"},
		{"    oidc: {client_id: warden}", "gateway.admin.oidc: OIDC login uses the issuer of gateway.auth"},
		{"    oidc: {client_id: warden, redirect_url: \"http://127.0.0.1:8788/callback\"}", "gateway.admin.oidc.redirect_url"},
	} {
		if _, err := parse(tc.admin); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.admin, err, tc.want)
		}
	}
}

func TestAdminOIDCUsesTheAuthIssuer(t *testing.T) {
	cfg, err := Parse([]byte(`version: 1
gateway:
  auth: {issuer: "https://idp.example.com", audience: warden, jwks_url: "https://idp.example.com/jwks"}
  zero_trust: {hold_for_approval: true}
  admin:
    oidc: {client_id: warden-console, client_secret_file: /run/secrets/console}
  upstreams:
    - name: pay
      command: [pay-server]
      require_token: [transfer_funds]
`), "oidc.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	if o := cfg.Gateway.Admin.OIDC; o.ClientID != "warden-console" || o.ClientSecretFile != "/run/secrets/console" || o.RedirectURL != "" {
		t.Errorf("decoded %+v", o)
	}
}
