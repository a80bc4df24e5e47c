package cli

import (
	"strconv"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/conform/ir"
)

// FuzzDefines: a -D argument is refused, or it names a constant (an
// identifier) and an integer that print back as given; the model then
// reads it as documented: a constant it does not declare is
// unknown-constant, AGENTS from 1 to 30 gives a model without errors, and
// any other value is an error at a line of the file (domain or
// out-of-domain), never a panic or a silent default.
func FuzzDefines(f *testing.F) {
	for _, s := range []string{"AGENTS=3", "AGENTS=0", "AGENTS=-1", "AGENTS=30", "AGENTS=31", "AGENTS=1048577",
		"AGENTS=+3", "AGENTS=03", "AGENT=3", "=3", "AGENTS=", "AGENTS==3", "A B=1", "if=1", "AGENTS=9223372036854775807",
		"AGENTS=-9223372036854775808", "ÄGENTS=1", "AGENTS=3\n"} {
		f.Add(s)
	}
	lines := strings.Count(agentsModel, "\n")
	f.Fuzz(func(t *testing.T, arg string) {
		d := defines{}
		if err := d.Set(arg); err != nil {
			return
		}
		if len(d) != 1 {
			t.Fatalf("%q set %d constants", arg, len(d))
		}
		var name string
		var val int
		for name, val = range d {
		}
		if !ir.ValidName(name) || d.String() != name+"="+strconv.Itoa(val) {
			t.Fatalf("%q read as %s", arg, d)
		}
		if want, _ := strconv.Atoi(strings.TrimPrefix(arg, name+"=")); want != val {
			t.Fatalf("%q read as %d", arg, val)
		}
		_, ds := ir.LoadWith([]byte(agentsModel), "agents.yaml", ir.ParseOptions{Defines: d}, ir.LintOptions{})
		switch {
		case name != "AGENTS":
			if len(ds) != 1 || ds[0].Code != "unknown-constant" || !strings.Contains(ds[0].Msg, name) {
				t.Fatalf("-D %s: %v", arg, ds)
			}
		case val >= 1 && val <= 30:
			if ds.HasErrors() {
				t.Fatalf("-D %s: %v", arg, ds)
			}
		default:
			if !ds.HasErrors() {
				t.Fatalf("-D %s: no error", arg)
			}
			for _, dg := range ds {
				if dg.Severity == ir.Error && (dg.Code != "domain" && dg.Code != "out-of-domain" || dg.Pos.Line < 1 || dg.Pos.Line > lines) {
					t.Errorf("-D %s: %v", arg, dg)
				}
			}
		}
	})
}
