package ir

import (
	"fmt"
	"slices"
	"strings"
)

// Pos is a position in a model file: 1-based line and column.
type Pos struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
}

func (p Pos) String() string {
	if p.File == "" {
		return fmt.Sprintf("%d:%d", p.Line, p.Col)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Severity says whether a diagnostic makes a model unusable.
type Severity int

const (
	Error   Severity = iota // the model cannot be checked
	Warning                 // the model can be checked, but something is likely wrong
)

func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "error"
}

// Diagnostic is one problem found in a model, with the position it is about.
type Diagnostic struct {
	Pos      Pos
	Severity Severity
	Code     string // stable, for tests and tooling: "unknown-variable", "type-mismatch", ...
	Msg      string
}

func (d Diagnostic) String() string {
	return fmt.Sprintf("%s: %s: %s [%s]", d.Pos, d.Severity, d.Msg, d.Code)
}

// Diagnostics is every problem found in a model, in file order.
type Diagnostics []Diagnostic

// HasErrors reports whether any diagnostic is an Error.
func (ds Diagnostics) HasErrors() bool {
	for _, d := range ds {
		if d.Severity == Error {
			return true
		}
	}
	return false
}

// Err returns nil when there is no error, else an error listing every
// diagnostic.
func (ds Diagnostics) Err() error {
	if !ds.HasErrors() {
		return nil
	}
	return fmt.Errorf("%s", ds.String())
}

func (ds Diagnostics) String() string {
	var b strings.Builder
	for i, d := range ds {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(d.String())
	}
	return b.String()
}

// Format renders each diagnostic with the source line it points at and a
// caret under the column, the way compilers do:
//
//	mcp.yaml:12:15: error: unknown variable "phse" [unknown-variable]
//	    guard: "phse == ready"
//	            ^
func (ds Diagnostics) Format(src []byte) string {
	lines := strings.Split(string(src), "\n")
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.String())
		b.WriteByte('\n')
		if d.Pos.Line >= 1 && d.Pos.Line <= len(lines) {
			line := strings.TrimRight(lines[d.Pos.Line-1], "\r")
			fmt.Fprintf(&b, "    %s\n", line)
			if d.Pos.Col >= 1 {
				fmt.Fprintf(&b, "    %s^\n", strings.Repeat(" ", min(d.Pos.Col-1, len(line))))
			}
		}
	}
	return b.String()
}

type diags struct {
	file string
	list Diagnostics
}

// add records an error. The same error at the same place is recorded once:
// a transition with parameters is read once per binding.
func (d *diags) add(p Pos, code, format string, args ...any) {
	if p.File == "" {
		p.File = d.file
	}
	dg := Diagnostic{Pos: p, Severity: Error, Code: code, Msg: fmt.Sprintf(format, args...)}
	if !slices.Contains(d.list, dg) {
		d.list = append(d.list, dg)
	}
}

func (d *diags) warn(p Pos, code, format string, args ...any) {
	if p.File == "" {
		p.File = d.file
	}
	d.list = append(d.list, Diagnostic{Pos: p, Severity: Warning, Code: code, Msg: fmt.Sprintf(format, args...)})
}
