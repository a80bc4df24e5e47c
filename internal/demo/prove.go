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
	// One column per principle: ✗ when any of its properties is violated.
	var principles []string
	bareOf, guardedOf := map[string]string{}, map[string]string{}
	for _, f := range findings {
		if _, ok := bareOf[f.Principle]; !ok {
			principles = append(principles, f.Principle)
		}
		bareOf[f.Principle] = worst(bareOf[f.Principle], f.Result)
		guardedOf[f.Principle] = worst(guardedOf[f.Principle], f.WardenResult)
	}
	var head, bare, guarded strings.Builder
	for _, p := range principles {
		head.WriteString(fmt.Sprintf(" %-4s", p))
		bare.WriteString(fmt.Sprintf(" %-4s", mark(bareOf[p])))
		guarded.WriteString(fmt.Sprintf(" %-4s", mark(guardedOf[p])))
		if bareOf[p] == "violated" {
			s.res.Violated++
		}
		if guardedOf[p] == "violated" {
			s.res.ViolatedBehindWarden++
		}
	}
	fmt.Fprintf(w, "    %-14s%s\n    %-14s%s\n    %-14s%s\n", "", head.String(), "MCP", bare.String(), "MCP + warden", guarded.String())
	// The leads-to properties, each on its own: a column shows only the
	// worst of its principle's properties.
	for _, f := range findings {
		p, ok := mcpModel.Property(f.Property)
		if !ok || p.Kind != ir.LeadsTo {
			continue
		}
		fairness := fmt.Sprintf("under %s fairness", p.Fairness)
		fmt.Fprintf(w, "\n    %s, leads-to %s: %s\n        %s    MCP %s   MCP + warden %s\n",
			p.ID, fairness, strings.TrimSuffix(p.Description, " ("+fairness+")"), p, mark(f.Result), mark(f.WardenResult))
	}
	fmt.Fprintf(w, "\n    ✗ violated (a shortest counterexample exists), ✓ holds. warden conform matrix prints all five\n    protocols; warden conform replay plays the counterexamples against live servers.\n")
	s.expect(s.res.ViolatedBehindWarden == 0, "%d MCP properties are violated even behind warden", s.res.ViolatedBehindWarden)
	return nil
}

// worst is the worse of two results: violated, then anything but holds.
func worst(a, b string) string {
	switch {
	case a == "" || b == "violated":
		return b
	case a == "violated" || b == "holds":
		return a
	}
	return b
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
