package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestArchitectureStageTable checks ARCHITECTURE.md's stage table against
// StageTable: its rows whose "where" starts with "pipeline" name the
// table's stages in the table's order, and such a row mentions answers
// exactly when its stage has a response half.
func TestArchitectureStageTable(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ name, where string }
	var rows []row
	in := false
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "## ") {
			in = line == "## Pipeline"
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		where := strings.TrimSpace(cells[2])
		if strings.HasPrefix(where, "pipeline") {
			rows = append(rows, row{name, where})
		}
	}
	if len(rows) != len(StageTable) {
		t.Fatalf("ARCHITECTURE.md lists %d pipeline stages %v, StageTable has %d", len(rows), rows, len(StageTable))
	}
	for i, s := range StageTable {
		if rows[i].name != s.Name() {
			t.Errorf("stage %d: ARCHITECTURE.md says %q, StageTable %q", i, rows[i].name, s.Name())
		}
		_, result := s.(ResultStage)
		_, answered := s.(AnswerStage)
		if says := strings.Contains(rows[i].where, "answer"); says != (result || answered) {
			t.Errorf("stage %s: ARCHITECTURE.md's where %q; response half: %v", s.Name(), rows[i].where, result || answered)
		}
	}
}

// TestPipelineKeepsTheTableOrder: a pipeline out of StageTable's order
// cannot be built.
func TestPipelineKeepsTheTableOrder(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewPipeline accepted zero-trust before classify")
		}
	}()
	NewPipeline(ZeroTrust{}, Classify{})
}
