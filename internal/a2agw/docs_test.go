package a2agw

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsListEveryCheck keeps docs/a2a.md in step with the code: every
// delegation step, card rule and upstream rule the package can refuse with
// is documented.
func TestDocsListEveryCheck(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "a2a.md"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, file := range []string{"delegation.go", "gateway.go", "relay.go"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, re := range []*regexp.Regexp{
			regexp.MustCompile(`refuse\("([a-z-]+)"`),
			regexp.MustCompile(`deny\("([a-z-]+)"`),
			regexp.MustCompile(`Rule: "([a-z-]+)"`),
		} {
			for _, m := range re.FindAllStringSubmatch(string(src), -1) {
				names = append(names, m[1])
			}
		}
	}
	if len(names) < 20 {
		t.Fatalf("found only %d rule names in the code: the patterns are stale", len(names))
	}
	for _, n := range names {
		if !strings.Contains(string(doc), "`"+n+"`") {
			t.Errorf("docs/a2a.md does not document %q", n)
		}
	}
}
