package catalog

import (
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

// Clauses whose text is AgentRFC's prose about a protocol (ANP, ACP-Cap)
// say so, and never pass for specification quotes; every other clause
// quotes its specification.
func TestSourceKinds(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range c.All() {
		want := FromSpecification
		if cl.Protocol == "ANP" || cl.Protocol == "ACP-Cap" {
			want = FromPaperProse
		}
		if cl.SourceRef.Kind != want {
			t.Errorf("%s (%s): source kind %q, want %q", cl.ID, cl.Protocol, cl.SourceRef.Kind, want)
		}
	}
}
