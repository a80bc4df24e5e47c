package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse checks that no input makes Parse or Validate panic, and that
// every failure is a non-empty *Problems whose entries say something.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/bad/*.yaml")
	examples, _ := filepath.Glob("../../examples/*.yaml")
	for _, file := range append(seeds, examples...) {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("version: 1\ngateway: {upstreams: [{name: a, command: [a], env: {A: \"${env:B}\"}}]}\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("\xef\xbb\xbfversion: 1\n"))
	f.Add([]byte("? ? ? a\n"))
	// The tags the decoder reads besides yaml: present, decode and inline.
	f.Add([]byte("version: 1\ngateway:\n  upstreams: [{name: a, url: \"http://h\", require_token: [t], session_credential: {ttl: 1m}}]\n" +
		"  audit: {}\n  taint: {enabled: false}\n  security: {file_access: flag, rules: [{name: r, category: exfiltration, when: 'true'}]}\n" +
		"  admin: {approvers: {1: 2}, confirm_levels: []}\n  a2a: [{name: b, url: \"http://h\", delegation: {roots: {p: [s]}}}]\ntelemetry: {}\n"))

	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, "fuzz.yaml")
		if err != nil {
			checkProblems(t, err)
			if cfg != nil {
				t.Fatal("Parse returned a Config with problems")
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			checkProblems(t, err)
			return
		}
		for _, u := range cfg.Gateway.Upstreams {
			if tr := u.Transport(); tr != TransportStdio && tr != TransportHTTP {
				t.Fatalf("valid upstream %q has transport %q", u.Name, tr)
			}
		}
	})
}

func checkProblems(t *testing.T, err error) {
	t.Helper()
	var ps *Problems
	if !errors.As(err, &ps) || len(*ps) == 0 {
		t.Fatalf("error %T %v is not a non-empty *Problems", err, err)
	}
	for _, p := range *ps {
		if p.Message == "" || p.Line < 0 || p.Column < 0 {
			t.Fatalf("malformed problem %+v", p)
		}
	}
}

// FuzzExprText checks the positions recorded for CEL expressions (which
// place a CEL error at its character in the file): wherever one is
// recorded, the file holds that line of the expression, verbatim.
func FuzzExprText(f *testing.F) {
	if data, err := os.ReadFile("testdata/bad/security_rules.yaml"); err == nil {
		f.Add(data)
	}
	for _, when := range []string{`'a == "é"'`, `"a\\b"`, "|\n  a &&\n\n   b\n", "|-\r\n  a\r\n", "'a ''b'''", "a\n  b", `"\u00e9"`, ">\n  a\n  b\n"} {
		f.Add([]byte("gateway:\n security:\n  rules:\n   - when: " + when + "\n"))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, "fuzz.yaml")
		if err != nil {
			return
		}
		lines := strings.Split(string(data), "\n")
		for i, r := range cfg.Gateway.Security.Rules {
			at, ok := cfg.text[fmt.Sprintf("gateway.security.rules[%d].when", i)]
			if !ok {
				continue
			}
			want := strings.Split(strings.TrimRight(r.When, "\n"), "\n")
			if len(at) != len(want) {
				t.Fatalf("%d positions for %d lines of %q", len(at), len(want), r.When)
			}
			for j, p := range at {
				if p.line < 1 || p.line > len(lines) || p.column < 1 {
					t.Fatalf("position %+v is outside the file", p)
				}
				src := []rune(strings.TrimSuffix(lines[p.line-1], "\r"))
				if p.column-1 > len(src) || !strings.HasPrefix(string(src[p.column-1:]), want[j]) {
					t.Fatalf("line %d of %q is not at %d:%d: %q", j+1, r.When, p.line, p.column, lines[p.line-1])
				}
			}
		}
	})
}
