package a2agw

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/deny"
)

// ruleValues maps the names of deny's rule constants to their values, read
// from its source.
func ruleValues(t *testing.T) map[string]deny.Rule {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "deny", "rules.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]deny.Rule{}
	for _, m := range regexp.MustCompile(`(Rule\w+)\s+Rule = "([^"]+)"`).FindAllStringSubmatch(string(src), -1) {
		out[m[1]] = deny.Rule(m[2])
	}
	return out
}

// TestDocsListEveryCheck keeps docs/a2a.md in step with the code: every
// delegation check the package can refuse with is documented, and every
// rule constant it refuses with is in deny.Catalog as an A2A rule (whose
// own test checks it against docs/a2a.md).
func TestDocsListEveryCheck(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "a2a.md"))
	if err != nil {
		t.Fatal(err)
	}
	values := ruleValues(t)
	cataloged := map[deny.Rule]bool{}
	for _, e := range deny.Catalog {
		if e.Protocol == deny.A2A {
			cataloged[e.Rule] = true
		}
	}
	var checks, rules []string
	for _, file := range []string{"delegation.go", "gateway.go", "relay.go", "owner.go", "list.go", "push.go"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, re := range []*regexp.Regexp{
			regexp.MustCompile(`refuse\("([a-z-]+)"`),
			regexp.MustCompile(`broken\("([a-z-]+)"`),
		} {
			for _, m := range re.FindAllStringSubmatch(string(src), -1) {
				checks = append(checks, m[1])
			}
		}
		for _, m := range regexp.MustCompile(`deny\.(Rule\w+)`).FindAllStringSubmatch(string(src), -1) {
			rules = append(rules, m[1])
		}
	}
	if len(checks) < 10 || len(rules) < 15 {
		t.Fatalf("found only %d delegation checks and %d rules in the code: the patterns are stale", len(checks), len(rules))
	}
	for _, n := range checks {
		if !strings.Contains(string(doc), "`"+n+"`") {
			t.Errorf("docs/a2a.md does not document the delegation check %q", n)
		}
	}
	for _, n := range rules {
		v, ok := values[n]
		if !ok {
			t.Errorf("deny.%s: not a rule constant of internal/deny", n)
			continue
		}
		if !cataloged[v] {
			t.Errorf("deny.%s (%q) is refused with, but deny.Catalog has no A2A entry for it", n, v)
		}
	}
}
