// Package oatf implements the Open Agent Threat Format (OATF) 0.1: parsing,
// validation, normalization, serialization and evaluation of attack
// documents, and the twelve execution primitives of the OATF SDK contract.
//
// Documents are held as an ordered value tree: every mapping keeps its keys in
// source order and every node remembers its line and column, so that
// diagnostics point at the offending text and serialization is stable.
//
//	text ──Parse──► *Document ──Validate──► []Diagnostic (V-001..V-049, W-001..W-007)
//	                    │
//	                    └──Normalize──► *Document (multi-actor, defaults written) ──Serialize──► YAML
//
// Load does all three. Nothing in this package performs I/O except Load and
// ReadFile; nothing mutates a Document passed in.
//
// YAML is decoded safely: anchors, aliases, merge keys and explicit tags are
// rejected (V-020), duplicate keys and second documents are errors, and plain
// scalars are resolved with the YAML 1.2 core schema (so "yes" is a string
// and an unquoted date stays the text that was written).
//
//	doc, diags := oatf.Load("attack.yaml")
//	if oatf.HasErrors(diags) { ... }
//	ind, _ := doc.Indicators()
//	v := oatf.NewEvaluator(oatf.EvalOptions{}).Evaluate(ctx, ind[0], message)
package oatf
