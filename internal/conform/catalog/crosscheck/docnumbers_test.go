package crosscheck_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/conform/catalog"
	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/models"
	"github.com/agentwarden/warden/internal/conform/report"
)

// docs/conform.md puts warden's numbers beside the paper's; each must be
// what `warden conform matrix` prints today (and what the catalog holds),
// so a change of a model, of triage or of the catalog that moves a number
// fails here until the document says the new one.
func TestPaperComparisonMatchesTheMatrix(t *testing.T) {
	data, err := os.ReadFile("../../../../docs/conform.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	start := strings.Index(doc, "## Warden's numbers beside the paper's")
	if start < 0 {
		t.Fatal(`docs/conform.md has no section "Warden's numbers beside the paper's"`)
	}
	section := doc[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}

	ms, err := models.All()
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	res, err := report.Run(context.Background(), ms, cat, report.Options{Check: check.Options{}})
	if err != nil {
		t.Fatal(err)
	}
	jd, err := res.JSONDocument()
	if err != nil {
		t.Fatal(err)
	}
	s := jd.Summary
	perProtocol := map[string]int{}
	for _, c := range jd.Cells {
		if c.Result == string(check.Violated) {
			perProtocol[c.Protocol]++
		}
	}
	perComposition := map[string]int{}
	for _, f := range jd.Compositions {
		if f.Principle == "CS" {
			perComposition[strings.SplitN(f.Model, "-", 2)[0]]++
		}
	}

	expect(t, section, `(\d+) of (\d+) cells violated: (\d+) SPEC-FAIL, (\d+) AMBIGUITY-FAIL, (\d+) PASS \(MCP (\d+), A2A (\d+), ANP (\d+), ACP-Cap (\d+), ACP-Client (\d+)\)`,
		s.Violated, s.Cells, s.ByTriage[report.SpecFail], s.ByTriage[report.AmbiguityFail], s.ByTriage[report.Pass],
		perProtocol["MCP"], perProtocol["A2A"], perProtocol["ANP"], perProtocol["ACP-Cap"], perProtocol["ACP-Client"])
	expect(t, section, `(\d+), (\d+) violated \(cs1 (\d+), cs2 (\d+), cs3 (\d+), cs4 (\d+), cs5 (\d+)\)`,
		s.CSInvariants, s.CSViolated, perComposition["cs1"], perComposition["cs2"], perComposition["cs3"], perComposition["cs4"], perComposition["cs5"])
	if s.ByTriage[report.Pass] > 0 {
		expect(t, section, `Of the (\d+) cells that hold`, s.ByTriage[report.Pass])
	}

	n := func(version string) (clauses, quoted, docs, absences int) {
		seen := map[string]bool{}
		for _, cl := range cat.All() {
			if cl.Protocol != "MCP" || cl.SpecVersion != version {
				continue
			}
			clauses++
			if strings.HasPrefix(cl.SourceRef.Quote, "(") {
				absences++
				continue
			}
			quoted++
			if !seen[cl.SourceRef.Document] {
				seen[cl.SourceRef.Document] = true
				docs++
			}
		}
		return
	}
	c0618, q0618, d0618, a0618 := n("2025-06-18")
	c1125, _, d1125, _ := n("2025-11-25")
	c0728, _, d0728, _ := n("2026-07-28")
	expect(t, section, `(\d+) for 2025-06-18: (\d+) quoted from (\d+) documents, (\d+) recorded absences?; plus (\d+) for 2025-11-25 \((\d+) documents\) and (\d+) for 2026-07-28 \((\d+)\)`,
		c0618, q0618, d0618, a0618, c1125, d1125, c0728, d0728)
}

// expect finds pattern in text and checks its numbers, in order.
func expect(t *testing.T, text, pattern string, want ...int) {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(text)
	if m == nil {
		t.Errorf("docs/conform.md: no text matching %q; today's numbers are %v", pattern, want)
		return
	}
	for i, w := range want {
		if got, _ := strconv.Atoi(m[i+1]); got != w {
			t.Errorf("docs/conform.md says %q, but today the numbers are %s", m[0], fmt.Sprint(want))
			return
		}
	}
}
