package report

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/conform/catalog"
	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/models"
)

// A matrix checked with hash compaction says in every form that its
// "holds" are partial: the JSON document, its findings and cells carry
// coverage "partial" with the mode and odds; Markdown and HTML mark the
// cells and say why. Its violations are the exact run's. An exact run's
// document says "complete".
func TestPartialCoverageInReports(t *testing.T) {
	ms, err := models.All()
	if err != nil {
		t.Fatal(err)
	}
	cat, _ := catalog.Default()
	exactViolated := -1
	for _, store := range []check.StoreMode{check.StoreExact, check.StoreHashCompact} {
		res, err := Run(context.Background(), ms, cat, Options{Check: check.Options{MaxStates: 200_000, Store: store}})
		if err != nil {
			t.Fatal(err)
		}
		var js bytes.Buffer
		if err := res.WriteJSON(&js); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Coverage string `json:"coverage"`
			Cells    []struct {
				Result       string `json:"result"`
				Coverage     string `json:"coverage"`
				CoverageNote string `json:"coverage_note"`
			} `json:"cells"`
			Compositions []struct {
				Result   string `json:"result"`
				Coverage string `json:"coverage"`
			} `json:"compositions"`
			Summary struct {
				Violated     int `json:"violated"`
				Holds        int `json:"holds"`
				PartialHolds int `json:"partial_holds"`
			} `json:"summary"`
		}
		if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		var md, page bytes.Buffer
		if err := res.WriteMarkdown(&md); err != nil {
			t.Fatal(err)
		}
		if err := res.WriteHTML(&page); err != nil {
			t.Fatal(err)
		}
		if store == check.StoreExact {
			exactViolated = doc.Summary.Violated
			if doc.Coverage != "complete" || doc.Summary.PartialHolds != 0 || strings.Contains(md.String(), "artial coverage") {
				t.Errorf("exact: coverage %q, %d partial holds", doc.Coverage, doc.Summary.PartialHolds)
			}
			continue
		}
		if doc.Summary.Violated != exactViolated {
			t.Errorf("hashcompact: %d cells violated, exact %d", doc.Summary.Violated, exactViolated)
		}
		if doc.Coverage != "partial" || doc.Summary.Holds == 0 || doc.Summary.PartialHolds != doc.Summary.Holds {
			t.Errorf("hashcompact: coverage %q, %d holds of which %d partial", doc.Coverage, doc.Summary.Holds, doc.Summary.PartialHolds)
		}
		for i, c := range doc.Cells {
			if c.Result == "holds" && (c.Coverage != "partial" ||
				!strings.HasPrefix(c.CoverageNote, "partial coverage: hash compaction, 64-bit fingerprints; probability of a missed state ≤ ")) {
				t.Errorf("cell %d holds with coverage %q, note %q", i, c.Coverage, c.CoverageNote)
			}
		}
		for _, c := range doc.Compositions {
			if c.Result == "holds" && c.Coverage != "partial" {
				t.Errorf("composition holds with coverage %q", c.Coverage)
			}
		}
		if !strings.Contains(md.String(), "✓* ") || !strings.Contains(md.String(), "* Partial coverage: ") ||
			!strings.Contains(md.String(), "rerun with --store exact for a proof") {
			t.Errorf("markdown does not mark partial holds:\n%s", md.String())
		}
		if !strings.Contains(page.String(), `<p id="coverage" class="partial">* Partial coverage: `) {
			t.Error("html has no partial coverage line")
		}
	}
}
