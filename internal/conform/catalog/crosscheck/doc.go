// Package crosscheck holds tests only: they check the clause catalog
// against what is built on it, the triage of the built-in models' and
// hand-built counterexamples (internal/conform/report) and the numbers
// docs/conform.md sets beside AgentRFC's. They live apart from package
// catalog so that the catalog's own tests (quotes, sections, source kinds)
// build without the checker, the replay adapters and the gateway.
package crosscheck
