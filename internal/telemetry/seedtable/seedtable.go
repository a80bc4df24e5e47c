// Package seedtable reads the normative tables of the AITF MCP span
// conventions (the seed, in ../shared/seeds next to the repository) so that
// tests compare warden's spans, OCSF compliance table and CoSAI mapping with
// the seed's own text rather than with values copied into test code. It is
// for tests; the gateway does not import it.
//
// Tests call Need first: without the seed they skip, or fail when
// WARDEN_REQUIRE_DEPS=1 (as in CI).
package seedtable

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// seedFile is the seed's path relative to the repository's parent folder.
const seedFile = "shared/seeds/aitf-mcp-span-conventions.md"

var load = sync.OnceValues(func() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for { // the repository root holds go.mod; the seed is beside the repository
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			b, err := os.ReadFile(filepath.Join(dir, "..", filepath.FromSlash(seedFile)))
			return string(b), err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
})

// Text returns the seed's text, or "" if it cannot be read.
func Text() string {
	s, _ := load()
	return s
}

// Need skips t when the seed cannot be read, or fails it when
// WARDEN_REQUIRE_DEPS=1.
func Need(t testing.TB) {
	t.Helper()
	if _, err := load(); err != nil {
		if os.Getenv("WARDEN_REQUIRE_DEPS") == "1" {
			t.Fatalf("the AITF seed (../%s) is required: %v", seedFile, err)
		}
		t.Skipf("the AITF seed (../%s) is not present: %v", seedFile, err)
	}
}

// Span is one "## Span:" section of the seed.
type Span struct {
	Type     string  // the heading's name, e.g. "aitf.mcp.tool.invoke"
	NameFmt  string  // e.g. "mcp.tool.invoke {aitf.mcp.tool.name}"
	Kind     string  // CLIENT or SERVER
	Fields   []Field // span attributes, in table order
	Events   []Event
	Sections []string // sub-headings of the field table, if any
}

// Event is one event of a span, with its attributes.
type Event struct {
	Name   string
	Fields []Field
}

// Field is one row of a normative field table.
type Field struct {
	Name        string
	Type        string // string, int, double, boolean, string[]
	Requirement string // Required, Recommended or Optional
	Compliance  string // the Compliance cell as written
}

// Mapping is one row of the CoSAI WS2 field mapping table.
type Mapping struct {
	CoSAI, AITF, Notes string
}

var (
	spanHeading  = regexp.MustCompile("^## Span: `([^`]+)`")
	eventHeading = regexp.MustCompile("^#### `([^`]+)`")
	codeSpan     = regexp.MustCompile("`([^`]+)`")
)

// Spans parses every span section of the seed, in order.
func Spans() []Span {
	var spans []Span
	var cur *Span
	var ev *Event
	var next string // what the next non-empty line is: "name" or "kind"
	inSection := ""
	for line := range strings.Lines(Text()) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "## "):
			if m := spanHeading.FindStringSubmatch(line); m != nil {
				spans = append(spans, Span{Type: m[1]})
				cur, ev = &spans[len(spans)-1], nil
			} else {
				cur, ev = nil, nil
			}
			continue
		case cur == nil:
			continue
		case line == "### Span Name":
			next = "name"
			continue
		case line == "### Span Kind":
			next = "kind"
			continue
		case strings.HasPrefix(line, "### "):
			inSection = line
			continue
		case strings.HasPrefix(line, "#### "):
			if m := eventHeading.FindStringSubmatch(line); m != nil && inSection == "### Events" {
				cur.Events = append(cur.Events, Event{Name: m[1]})
				ev = &cur.Events[len(cur.Events)-1]
			} else {
				cur.Sections = append(cur.Sections, strings.TrimPrefix(line, "#### "))
			}
			continue
		}
		if next != "" && strings.TrimSpace(line) != "" {
			m := codeSpan.FindStringSubmatch(line)
			if m != nil {
				if next == "name" {
					cur.NameFmt = m[1]
				} else {
					cur.Kind = m[1]
				}
			}
			next = ""
			continue
		}
		f, ok := row(line)
		if !ok {
			continue
		}
		if ev != nil {
			ev.Fields = append(ev.Fields, f)
		} else {
			cur.Fields = append(cur.Fields, f)
		}
	}
	return spans
}

// row parses a field-table row; ok is false for other lines.
func row(line string) (Field, bool) {
	cells := cells(line)
	if len(cells) != 5 {
		return Field{}, false
	}
	m := codeSpan.FindStringSubmatch(cells[0])
	if m == nil {
		return Field{}, false
	}
	req := strings.Trim(cells[2], "* ")
	return Field{Name: m[1], Type: cells[1], Requirement: req, Compliance: cells[4]}, true
}

func cells(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") {
		return nil
	}
	parts := strings.Split(line[1:len(line)-1], "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// CoSAIMapping parses the "CoSAI WS2 Field Mapping" table.
func CoSAIMapping() []Mapping {
	_, after, _ := strings.Cut(Text(), "## CoSAI WS2 Field Mapping")
	section, _, _ := strings.Cut(after, "\n## ")
	var out []Mapping
	for line := range strings.Lines(section) {
		c := cells(line)
		if len(c) != 3 {
			continue
		}
		a, b := codeSpan.FindStringSubmatch(c[0]), codeSpan.FindStringSubmatch(c[1])
		if a == nil || b == nil {
			continue
		}
		out = append(out, Mapping{CoSAI: a[1], AITF: b[1], Notes: c[2]})
	}
	return out
}

var controlID = regexp.MustCompile(`LLM\d\d|AML\.T\d{4}|(?:GOVERN|MAP|MEASURE|MANAGE)-\d+\.\d+|Art\.\d+`)

// ControlIDs extracts the control ids a Compliance cell cites ("LLM06",
// "AML.T0040", "GOVERN-1.2", "Art.14"), in order, without duplicates.
func ControlIDs(cell string) []string {
	var out []string
	for _, id := range controlID.FindAllString(cell, -1) {
		dup := false
		for _, o := range out {
			dup = dup || o == id
		}
		if !dup {
			out = append(out, id)
		}
	}
	return out
}
