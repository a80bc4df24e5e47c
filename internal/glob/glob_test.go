package glob

import (
	"strings"
	"testing"
)

func TestPatternMatch(t *testing.T) {
	tests := []struct {
		pattern string
		match   []string
		noMatch []string
	}{
		{"tools/call", []string{"tools/call"}, []string{"tools/call2", "tools/cal", "Tools/call", ""}},
		{"tools/*", []string{"tools/call", "tools/list", "tools/", "tools/a/b"}, []string{"tools", "xtools/call", "resources/list"}},
		{"*", []string{"", "a", "tools/call"}, nil},
		{"*_file", []string{"read_file", "_file", "a/b_file"}, []string{"read_files", "file"}},
		{"a*b*c", []string{"abc", "aXbYc", "abbc", "abcbc", "a/b/c"}, []string{"ab", "acb", "abcx", "xabc"}},
		{"a*a", []string{"aa", "aba"}, []string{"a"}},
		{"**", []string{"", "x"}, nil},
		{"*/*", []string{"a/b", "/", "a/b/c"}, []string{"ab"}},
		{"é*", []string{"éa"}, []string{"e"}},
	}
	for _, tt := range tests {
		p, err := Compile(tt.pattern)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tt.pattern, err)
		}
		if p.String() != tt.pattern {
			t.Errorf("String() = %q, want %q", p.String(), tt.pattern)
		}
		for _, name := range tt.match {
			if !p.Match(name) {
				t.Errorf("%q should match %q", tt.pattern, name)
			}
		}
		for _, name := range tt.noMatch {
			if p.Match(name) {
				t.Errorf("%q should not match %q", tt.pattern, name)
			}
		}
	}
}

func TestCompileErrors(t *testing.T) {
	for s, want := range map[string]string{
		"":             "empty pattern",
		"tools/?":      `'?' is not a wildcard`,
		"tools/[ab]":   `'[' is not a wildcard`,
		"{a,b}":        `'{' is not a wildcard`,
		`tools\*`:      `'\\' is not a wildcard`,
		"tools/\ncall": "control character U+000A",
	} {
		p, err := Compile(s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Compile(%q) error = %v, want %q", s, err, want)
		}
		if p.Match(s) || p.Match("") {
			t.Errorf("invalid pattern %q matches", s)
		}
	}
	var zero Pattern
	if zero.Match("") || zero.Match("x") {
		t.Error("zero Pattern matches")
	}
}

func mustList(t *testing.T, allow, deny []string) List {
	t.Helper()
	var l List
	for _, s := range allow {
		p, err := Compile(s)
		if err != nil {
			t.Fatal(err)
		}
		l.Allow = append(l.Allow, p)
	}
	for _, s := range deny {
		p, err := Compile(s)
		if err != nil {
			t.Fatal(err)
		}
		l.Deny = append(l.Deny, p)
	}
	return l
}

func TestListPermits(t *testing.T) {
	tests := []struct {
		name        string
		allow, deny []string
		in          string
		ok          bool
		rule        string
	}{
		{"zero list", nil, nil, "anything", true, "no allow list"},
		{"deny only", nil, []string{"tools/*"}, "tools/call", false, `deny "tools/*"`},
		{"deny only, other", nil, []string{"tools/*"}, "ping", true, "no allow list"},
		{"allow hit", []string{"ping", "tools/*"}, nil, "tools/list", true, `allow "tools/*"`},
		{"allow miss", []string{"ping"}, nil, "tools/list", false, "not in allow list"},
		{"deny wins over allow", []string{"*"}, []string{"delete_*"}, "delete_repo", false, `deny "delete_*"`},
		{"first deny named", nil, []string{"a*", "*b"}, "ab", false, `deny "a*"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, rule := mustList(t, tt.allow, tt.deny).Permits(tt.in)
			if ok != tt.ok || rule != tt.rule {
				t.Errorf("Permits(%q) = %v, %q; want %v, %q", tt.in, ok, rule, tt.ok, tt.rule)
			}
		})
	}
}

// TestInvalidPatternFailsClosed: a List holding an invalid pattern (which
// Validate rejects) must not let a name through that a valid list would stop.
func TestInvalidPatternFailsClosed(t *testing.T) {
	bad := Lenient("tools/?")
	if ok, rule := (List{Deny: []Pattern{bad}}).Permits("ping"); ok {
		t.Errorf("invalid deny pattern allowed ping (%s)", rule)
	}
	if ok, rule := (List{Allow: []Pattern{bad}}).Permits("tools/?"); ok {
		t.Errorf("invalid allow pattern allowed its own text (%s)", rule)
	}
}
