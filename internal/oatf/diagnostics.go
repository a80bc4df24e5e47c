package oatf

import (
	"fmt"
	"strings"
)

// Severity says whether a Diagnostic makes a document unusable.
type Severity uint8

// Severities.
const (
	SeverityError Severity = iota
	SeverityWarning
)

func (s Severity) String() string {
	if s == SeverityWarning {
		return "warning"
	}
	return "error"
}

// Rules that are not numbered by the OATF specification.
const (
	RuleSyntax           = "syntax"            // the text is not one YAML mapping
	RuleTypeMismatch     = "type-mismatch"     // a known field has the wrong type
	RuleUnknownField     = "unknown-field"     // a field OATF does not define (warning)
	RuleTierExtension    = "tier-extension"    // the indicator field tier (a documented extension)
	RuleScoringExtension = "scoring-extension" // attack.x-scoring (the same extension): kept, not interpreted (warning)
	RuleLimit            = "limit"             // a size or depth limit was exceeded
	RuleShadowedVariable = "shadowed-variable" // an expression variable named message hides the message (warning)
)

// Diagnostic is one problem found in a document. Rule is the OATF rule
// (V-013, W-004) or one of the Rule constants; Path is the dotted path from
// the document root ("attack.indicators[0].pattern.regex"), empty when the
// problem concerns the text as a whole.
type Diagnostic struct {
	Severity Severity
	Rule     string
	Path     string
	Message  string
	Pos      Pos
}

func (d Diagnostic) String() string {
	var b strings.Builder
	if d.Pos.File != "" || d.Pos.Line > 0 {
		file := d.Pos.File
		if file == "" {
			file = "<input>"
		}
		fmt.Fprintf(&b, "%s:%d:%d: ", file, d.Pos.Line, d.Pos.Col)
	}
	fmt.Fprintf(&b, "%s %s", d.Severity, d.Rule)
	if d.Path != "" {
		fmt.Fprintf(&b, " at %s", d.Path)
	}
	fmt.Fprintf(&b, ": %s", d.Message)
	return b.String()
}

// Render formats d like a compiler: "file:line:col: error V-013 at path:
// message", then the source line and a caret under the column, when src
// (the document's text) is available.
func (d Diagnostic) Render(src []byte) string {
	s := d.String()
	if d.Pos.Line <= 0 || src == nil {
		return s
	}
	lines := strings.Split(string(src), "\n")
	if d.Pos.Line > len(lines) {
		return s
	}
	line := strings.TrimRight(lines[d.Pos.Line-1], "\r")
	col := max(d.Pos.Col, 1)
	// Keep tabs so that the caret lines up under the same characters.
	var pad strings.Builder
	for i, r := range []rune(line) {
		if i >= col-1 {
			break
		}
		if r == '\t' {
			pad.WriteByte('\t')
		} else {
			pad.WriteByte(' ')
		}
	}
	return s + "\n | " + line + "\n | " + pad.String() + "^"
}

// HasErrors reports whether any diagnostic is an error.
func HasErrors(diags []Diagnostic) bool {
	for _, d := range diags {
		if d.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Errors returns the error diagnostics.
func Errors(diags []Diagnostic) []Diagnostic { return filter(diags, SeverityError) }

// Warnings returns the warning diagnostics.
func Warnings(diags []Diagnostic) []Diagnostic { return filter(diags, SeverityWarning) }

func filter(diags []Diagnostic, s Severity) []Diagnostic {
	var out []Diagnostic
	for _, d := range diags {
		if d.Severity == s {
			out = append(out, d)
		}
	}
	return out
}
