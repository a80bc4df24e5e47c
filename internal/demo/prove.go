package demo

// The demo's Prove part: warden conform model-checks the MCP model against
// the AASM principles, bare and behind warden, and prints the matrix row.

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentwarden/warden/internal/conform/catalog"
	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/ir"
	"github.com/agentwarden/warden/internal/conform/models"
	"github.com/agentwarden/warden/internal/conform/report"
)

func (s *scene) prove(ctx context.Context) error {
	all, err := models.All()
	if err != nil {
		return err
	}
	var mcpModel *ir.Model
	for _, m := range all {
		if m.Name == "mcp" {
			mcpModel = m
		}
	}
	if mcpModel == nil {
		return fmt.Errorf("no built-in MCP model")
	}
	cat, err := catalog.Default()
	if err != nil {
		return err
	}
	findings, err := report.CheckModel(ctx, mcpModel, cat, report.Options{Check: check.Options{MaxStates: 1_000_000}})
	if err != nil {
		return err
	}
	w := s.opts.Out
	fmt.Fprintf(w, "\nProve: warden conform model-checks MCP (spec revision model, %d properties) against the AASM\nprinciples, and again with warden's guards in the model:\n\n", len(findings))
	var head, bare, guarded strings.Builder
	seen := map[string]bool{}
	for _, f := range findings {
		if seen[f.Principle] {
			continue
		}
		seen[f.Principle] = true
		head.WriteString(fmt.Sprintf(" %-4s", f.Principle))
		bare.WriteString(fmt.Sprintf(" %-4s", mark(f.Result)))
		guarded.WriteString(fmt.Sprintf(" %-4s", mark(f.WardenResult)))
		if f.Result == "violated" {
			s.res.Violated++
		}
		if f.WardenResult == "violated" {
			s.res.ViolatedBehindWarden++
		}
	}
	fmt.Fprintf(w, "    %-14s%s\n    %-14s%s\n    %-14s%s\n", "", head.String(), "MCP", bare.String(), "MCP + warden", guarded.String())
	fmt.Fprintf(w, "\n    ✗ violated (a shortest counterexample exists), ✓ holds. warden conform matrix prints all five\n    protocols; warden conform replay plays the counterexamples against live servers.\n")
	s.expect(s.res.ViolatedBehindWarden == 0, "%d MCP properties are violated even behind warden", s.res.ViolatedBehindWarden)
	return nil
}

func mark(result string) string {
	switch result {
	case "holds":
		return "✓"
	case "violated":
		return "✗"
	}
	return "?"
}
