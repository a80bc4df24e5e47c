package catalog

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Offline sources of the clauses' quotes. The paper is part of ../shared
// and always there; the specifications are other projects' repositories,
// which neither the module nor scripts/deps.sh ships: point these variables
// at checkouts of the commits testdata/headings.tsv names (MCP
// modelcontextprotocol/modelcontextprotocol@b0f60ba5, A2A
// a2aproject/A2A@16ba5269, ACP-Client agentclientprotocol/agent-client-protocol
// at tag v0.11.3) to have their quotes checked too.
const (
	EnvMCPSpec       = "WARDEN_MCP_SPEC_DIR"
	EnvA2ASpec       = "WARDEN_A2A_SPEC_DIR"
	EnvACPClientSpec = "WARDEN_ACP_CLIENT_SPEC_DIR"
	paperPath        = "../../../../shared/seeds/agentrfc-paper.md"
)

// removed lists the documents a revision was published with that the
// pinned commit no longer has, and where their quotes were read instead.
var removed = map[string]string{
	"MCP 2025-06-18 basic/security_best_practices.mdx": "removed from the specification tree by fcc57c72; quotes read at the release commit d2cac4fd",
}

// sourceFile says which offline file a clause's quote is taken from, or
// why it cannot be checked here.
func sourceFile(cl Clause) (file, skip string) {
	if isAbsence(cl) {
		return "", "records an absence, nothing to quote"
	}
	switch cl.SourceRef.Kind {
	case FromWardenReading:
		return "", "warden's reading, in its own words"
	case FromPaperProse:
		return paperPath, ""
	}
	env := func(name string) (string, string) {
		dir := os.Getenv(name)
		if dir == "" {
			return "", name + " is not set: the " + cl.Protocol + " specification is not offline"
		}
		return dir, ""
	}
	switch cl.Protocol {
	case "MCP":
		if why, ok := removed[cl.Protocol+" "+cl.SpecVersion+" "+cl.SourceRef.Document]; ok {
			return "", why
		}
		dir, skip := env(EnvMCPSpec)
		if skip != "" {
			return "", skip
		}
		if strings.HasPrefix(cl.SourceRef.Document, "docs/") { // the guides, outside the specification tree
			return filepath.Join(dir, "docs", cl.SourceRef.Document), ""
		}
		return filepath.Join(dir, "docs/specification", cl.SpecVersion, cl.SourceRef.Document), ""
	case "A2A":
		dir, skip := env(EnvA2ASpec)
		if skip != "" {
			return "", skip
		}
		return filepath.Join(dir, "docs", cl.SourceRef.Document), ""
	case "ACP-Client":
		dir, skip := env(EnvACPClientSpec)
		if skip != "" {
			return "", skip
		}
		return filepath.Join(dir, "docs", cl.SourceRef.Document+".mdx"), ""
	}
	return "", "no offline source is known for " + cl.Protocol
}

// isAbsence reports whether a clause records that its source says nothing:
// its quote is a parenthesised description.
func isAbsence(cl Clause) bool {
	return strings.HasPrefix(cl.SourceRef.Quote, "(")
}

// Every quote appears verbatim in the offline source it cites, the
// specification's Markdown read as plain text (emphasis, code spans, link
// targets and list markers dropped, white space collapsed). An ellipsis
// ("…", "...", "(…)") in a quote stands for omitted words: the fragments
// must appear in order, each within a few lines of the one before. A quote
// whose source is not offline is skipped with the reason logged.
func TestQuotesAppearInTheirSources(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string][]byte{}
	skipped := map[string]int{}
	checked := 0
	for _, cl := range c.All() {
		file, skip := sourceFile(cl)
		if skip != "" {
			skipped[skip]++
			continue
		}
		md, ok := docs[file]
		if !ok {
			data, err := os.ReadFile(file)
			if errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: cites %s, which the source does not have", cl.ID, cl.SourceRef.Document)
			} else if err != nil {
				t.Fatal(err)
			}
			md, docs[file] = data, data
		}
		if md == nil {
			continue
		}
		checked++
		section, ok := sectionOf(string(md), cl.SourceRef.Section)
		switch {
		case !ok:
			t.Errorf("%s: %s has no heading %q", cl.ID, file, cl.SourceRef.Section)
		case findQuote(plainText(section), cl.SourceRef.Quote) >= 0:
		case findQuote(plainText(string(md)), cl.SourceRef.Quote) >= 0:
			t.Errorf("%s: quote %q is in %s, but not under its heading %q", cl.ID, cl.SourceRef.Quote, file, cl.SourceRef.Section)
		default:
			t.Errorf("%s: quote %q is not in %s", cl.ID, cl.SourceRef.Quote, file)
		}
	}
	for _, reason := range slices.Sorted(maps.Keys(skipped)) {
		t.Logf("%d clauses not checked: %s", skipped[reason], reason)
	}
	t.Logf("%d quotes checked against their sources", checked)
	if checked == 0 {
		t.Error("no quote was checked: the paper should always be offline")
	}
}

// sectionOf returns the part of a Markdown document under heading: from
// the heading to the next one of the same or a higher level (the page's
// title, in its front matter, is the whole document). Lines inside fenced
// code blocks are not headings.
func sectionOf(md, heading string) (string, bool) {
	if m := frontTitle.FindStringSubmatch(md); m != nil && m[1] == heading {
		return md, true
	}
	lines := strings.SplitAfter(md, "\n")
	start, level, fenced := -1, 0, false
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") || strings.HasPrefix(strings.TrimSpace(line), "~~~") {
			fenced = !fenced
			continue
		}
		m := atxHeading.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		if start >= 0 && len(m[1]) <= level {
			return strings.Join(lines[start:i], ""), true
		}
		if start < 0 && strings.TrimSpace(m[2]) == heading {
			start, level = i, len(m[1])
		}
	}
	if start < 0 {
		return "", false
	}
	return strings.Join(lines[start:], ""), true
}

var (
	frontTitle = regexp.MustCompile(`(?m)\A---\n(?:.*\n)*?title:\s*"?([^"\n]*)"?\n`)
	atxHeading = regexp.MustCompile(`^(#+)\s+(.*?)\s*#*\s*$`)
	mdLink     = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	mdTag      = regexp.MustCompile(`</?[A-Za-z][^>]*>`)
	listMarker = regexp.MustCompile(`(?m)^\s*(?:[-*+]|\d+\.)\s+`)
	heading    = regexp.MustCompile(`(?m)^#+\s+`)
	space      = regexp.MustCompile(`\s+`)
	ellipsis   = regexp.MustCompile(`\s*(?:\(…\)|…|\.\.\.)\s*`)
)

// plainText reads Markdown as the words a reader sees.
func plainText(md string) string {
	s := mdLink.ReplaceAllString(md, "$1")
	s = mdTag.ReplaceAllString(s, " ")
	s = listMarker.ReplaceAllString(s, "")
	s = heading.ReplaceAllString(s, "")
	s = strings.NewReplacer("**", "", "__", "", "`", "", "’", "'", "‘", "'", "“", `"`, "”", `"`, "\\_", "_").Replace(s)
	return space.ReplaceAllString(s, " ")
}

// findQuote returns where quote's first fragment starts in text, or -1.
// Fragments after an ellipsis must follow within maxGap bytes.
func findQuote(text, quote string) int {
	const maxGap = 600
	frags := ellipsis.Split(plainText(quote), -1)
	for from := 0; ; {
		i := strings.Index(text[from:], frags[0])
		if i < 0 {
			return -1
		}
		start := from + i
		if followed(text[start+len(frags[0]):], frags[1:], maxGap) {
			return start
		}
		from = start + 1
	}
}

func followed(text string, frags []string, maxGap int) bool {
	if len(frags) == 0 {
		return true
	}
	window := text[:min(len(text), maxGap+len(frags[0]))]
	for from := 0; ; {
		i := strings.Index(window[from:], frags[0])
		if i < 0 {
			return false
		}
		end := from + i + len(frags[0])
		if followed(text[end:], frags[1:], maxGap) {
			return true
		}
		from += i + 1
	}
}

// A clause that quotes the paper, or rests on it, names the paper as its
// document and one of the paper's headings as its section ("2.2 AI Agent
// Protocols Under Study"), not a section of a white paper warden has not
// read.
func TestPaperClausesCiteThePapersSections(t *testing.T) {
	data, err := os.ReadFile(paperPath)
	if err != nil {
		t.Fatal(err)
	}
	var headings []string
	for _, line := range strings.Split(string(data), "\n") {
		if h, ok := strings.CutPrefix(line, "#"); ok {
			headings = append(headings, strings.TrimSpace(strings.TrimLeft(h, "#")))
		}
	}
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, cl := range c.All() {
		if cl.SourceRef.Kind == FromSpecification {
			continue
		}
		checked++
		if cl.SourceRef.Document != PaperDocument {
			t.Errorf("%s: document %q, want %q", cl.ID, cl.SourceRef.Document, PaperDocument)
		}
		if !slices.Contains(headings, cl.SourceRef.Section) {
			t.Errorf("%s: the paper has no heading %q", cl.ID, cl.SourceRef.Section)
		}
	}
	if checked == 0 {
		t.Error("no clause cites the paper")
	}
}

// The quote matcher itself: it must refuse a quote whose words are not in
// the text, in order and close together.
func TestFindQuote(t *testing.T) {
	text := plainText("Servers **MUST**:\n\n1. Validate all tool inputs\n2. Sanitize tool `outputs`\n\nSee [the guide](https://x) for more.")
	for quote, want := range map[string]bool{
		"Servers MUST: Validate all tool inputs":   true,
		"Servers MUST: … Sanitize tool outputs":    true,
		"Servers MUST: Sanitize tool outputs":      false, // words left out without an ellipsis
		"Sanitize tool outputs … Servers MUST":     false, // out of order
		"See the guide for more":                   true,
		"servers MUST: validate all tool inputs":   false, // case matters
		"Servers MUST: Validate all tool outputs":  false,
		"Validate all tool inputs Sanitize tool o": true,
	} {
		if got := findQuote(text, quote) >= 0; got != want {
			t.Errorf("findQuote(%q) = %v, want %v", quote, got, want)
		}
	}
	doc := "---\ntitle: \"Page\"\n---\n\n## A\n\none\n\n### A.1\n\ntwo\n\n```sh\n# not a heading\n```\n\n## B\n\nthree\n"
	for heading, want := range map[string][2]bool{ // in section: "two", "three"
		"A":             {true, false},
		"A.1":           {true, false},
		"B":             {false, true},
		"Page":          {true, true},
		"not a heading": {false, false},
	} {
		sec, ok := sectionOf(doc, heading)
		if heading == "not a heading" {
			if ok {
				t.Errorf("sectionOf found a heading inside a code block")
			}
			continue
		}
		if !ok || strings.Contains(sec, "two") != want[0] || strings.Contains(sec, "three") != want[1] {
			t.Errorf("sectionOf(%q) = %q, %v", heading, sec, ok)
		}
	}
	far := "alpha " + strings.Repeat("x ", 400) + "omega"
	if findQuote(far, "alpha … omega") >= 0 {
		t.Error("fragments 800 bytes apart were accepted as one quote")
	}
}
