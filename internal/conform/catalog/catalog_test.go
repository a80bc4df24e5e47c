package catalog

import (
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func TestCatalogWellFormed(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range c.All() {
		if ps := cl.Problems(); len(ps) > 0 {
			t.Errorf("%s (%s): %s", cl.ID, cl.File, strings.Join(ps, "; "))
		}
		if !strings.HasPrefix(cl.SourceRef.URL, "https://") {
			t.Errorf("%s: url %q", cl.ID, cl.SourceRef.URL)
		}
	}
}

// The paper counts 37 MCP clauses from 8 documents; the catalog must cover
// at least that for 2025-06-18, and have the later revisions and every
// protocol of the matrix.
func TestCatalogCoverage(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, cl := range c.All() {
		count[cl.Protocol+" "+cl.SpecVersion]++
	}
	if n := count["MCP 2025-06-18"]; n < 37 {
		t.Errorf("MCP 2025-06-18: %d clauses, want >= 37", n)
	}
	if docs := c.Documents("MCP", "2025-06-18"); len(docs) < 8 {
		t.Errorf("MCP 2025-06-18: %d documents %v, want >= 8", len(docs), docs)
	}
	for _, rev := range []string{"MCP 2025-11-25", "MCP 2026-07-28", "A2A 1.0", "ANP white-paper-2025", "ACP-Cap rfd-2025", "ACP-Client 0.11.3"} {
		if count[rev] == 0 {
			t.Errorf("no clauses for %s", rev)
		}
	}
	// The lower-case "must" of the MCP key principles is recorded as ambiguous.
	if cl, ok := c.Clause("MCP-2025-06-18-INDEX-01"); !ok || !cl.Ambiguous {
		t.Error("MCP-2025-06-18-INDEX-01 must be present and ambiguous")
	}
}

func TestDuplicateIDsRejected(t *testing.T) {
	fs := fstest.MapFS{
		"c/a.yaml": {Data: []byte("protocol: MCP\nspec_version: x\nbase_url: https://e\nclauses:\n  - {id: X-1, doc: d, section: s, quote: q, modality: MUST, actor: server, principles: [P1], taxonomy: SPEC-MANDATED}\n")},
		"c/b.yaml": {Data: []byte("protocol: MCP\nspec_version: x\nbase_url: https://e\nclauses:\n  - {id: X-1, doc: d, section: s, quote: q, modality: MUST, actor: server, principles: [P1], taxonomy: SPEC-MANDATED}\n")},
	}
	if _, err := Load(fs, "c"); err == nil || !strings.Contains(err.Error(), "X-1 is defined twice") {
		t.Errorf("err = %v", err)
	}
	fs["c/b.yaml"] = &fstest.MapFile{Data: []byte("protocol: MCP\nclauses:\n  - {id: X-2, moodality: MUST}\n")}
	if _, err := Load(fs, "c"); err == nil || !strings.Contains(err.Error(), "moodality") {
		t.Errorf("unknown field accepted: %v", err)
	}
}

func TestProblemsCatchesBadRecord(t *testing.T) {
	cl := Clause{ID: "X", Protocol: "FOO", SpecVersion: "1", Modality: "MUSTN'T", Taxonomy: "SM", Principles: []string{"P9"}}
	ps := strings.Join(cl.Problems(), "\n")
	for _, want := range []string{"protocol \"FOO\"", "modality \"MUSTN'T\"", "taxonomy \"SM\"", "principle \"P9\"", "source_ref.quote is empty"} {
		if !strings.Contains(ps, want) {
			t.Errorf("missing %q in\n%s", want, ps)
		}
	}
}

// Clauses about a protocol whose text warden has not read (ANP, ACP-Cap)
// quote AgentRFC's prose or say they are warden's reading, and never pass
// for specification quotes; every other clause quotes its specification.
func TestSourceKinds(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range c.All() {
		want := []string{FromSpecification}
		if cl.Protocol == "ANP" || cl.Protocol == "ACP-Cap" {
			want = []string{FromPaperProse, FromWardenReading}
		}
		if !slices.Contains(want, cl.SourceRef.Kind) {
			t.Errorf("%s (%s): source kind %q, want one of %q", cl.ID, cl.Protocol, cl.SourceRef.Kind, want)
		}
	}
}

// Every clause of the revisions in testdata/headings.tsv (MCP 2025-11-25
// and 2026-07-28, A2A 1.0) names a document of that revision and one of
// the document's headings, and its url points at that document, at an
// anchor one of its headings makes. The headings were read from the
// specifications at the commits the file names; a section made up from
// memory ("Streamable HTTP" in a page that has no such heading) fails.
func TestSectionsAreTheSpecificationsHeadings(t *testing.T) {
	headings := readHeadings(t, "testdata/headings.tsv")
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	bases := map[string]string{
		"MCP 2025-11-25": "https://modelcontextprotocol.io/specification/2025-11-25",
		"MCP 2026-07-28": "https://modelcontextprotocol.io/specification/2026-07-28",
		"A2A 1.0":        "https://a2a-protocol.org/v1.0.0/specification/",
	}
	checked := 0
	for _, cl := range c.All() {
		rev := cl.Protocol + " " + cl.SpecVersion
		base, ok := bases[rev]
		if !ok || strings.HasPrefix(cl.SourceRef.Document, "docs/") || cl.SourceRef.Section == "(absent)" {
			continue // not covered, outside the specification tree, or an absence
		}
		checked++
		docs := headings[rev]
		hs, ok := docs[cl.SourceRef.Document]
		if !ok {
			t.Errorf("%s: document %q is not part of %s", cl.ID, cl.SourceRef.Document, rev)
			continue
		}
		if !slices.Contains(hs, cl.SourceRef.Section) {
			t.Errorf("%s: %s has no heading %q", cl.ID, cl.SourceRef.Document, cl.SourceRef.Section)
		}
		page, anchor, _ := strings.Cut(cl.SourceRef.URL, "#")
		if cl.ID == "A2A-1.0-SEC-05" { // not in a released 1.0: the pinned commit's file
			base = "https://github.com/a2aproject/A2A/blob/16ba5269/docs/specification.md"
		}
		wantPage := base
		if cl.Protocol == "MCP" {
			wantPage = base + "/" + strings.TrimSuffix(strings.TrimSuffix(cl.SourceRef.Document, ".mdx"), "/index")
		}
		if page != wantPage {
			t.Errorf("%s: url %s, want the page %s", cl.ID, cl.SourceRef.URL, wantPage)
		}
		if anchor != "" && !slices.ContainsFunc(hs, func(h string) bool { return slug(h) == anchor }) {
			t.Errorf("%s: url %s: no heading of %s makes the anchor #%s", cl.ID, cl.SourceRef.URL, cl.SourceRef.Document, anchor)
		}
	}
	if checked < 30 {
		t.Errorf("only %d clauses checked", checked)
	}
}

// readHeadings reads "protocol<TAB>revision<TAB>document<TAB>heading" lines.
func readHeadings(t *testing.T, file string) map[string]map[string][]string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string][]string{}
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			t.Fatalf("%s:%d: want 4 tab-separated fields, got %d", file, i+1, len(f))
		}
		rev := f[0] + " " + f[1]
		if out[rev] == nil {
			out[rev] = map[string][]string{}
		}
		out[rev][f[2]] = append(out[rev][f[2]], f[3])
	}
	return out
}

// slug is the anchor a heading gets: lower case, spaces as hyphens, other
// punctuation dropped ("3.3.2. Error Handling" → "332-error-handling").
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}
