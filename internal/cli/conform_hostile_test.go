package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileFiles reads the hostile model corpus of internal/conform/ir
// (testdata/hostile.txt): each file with its "# want LINE:COL CODE TEXT"
// lines.
func hostileFiles(t *testing.T) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "conform", "ir", "testdata", "hostile.txt"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]string{}
	for _, part := range strings.Split(string(data), "\n-- ")[1:] {
		head, body, _ := strings.Cut(part, "\n")
		files[strings.TrimSuffix(head, " --")] = []string{body}
	}
	if len(files) < 40 {
		t.Fatalf("read %d files", len(files))
	}
	return files
}

// TestConformHostileCorpus runs every file of the hostile corpus through
// lint, check, emit and matrix as a user would: each exits 3, checks
// nothing, and prints every wanted error as file:line:col: error: ...
// [code] followed by the source line and a caret.
func TestConformHostileCorpus(t *testing.T) {
	dir := t.TempDir()
	for name, v := range hostileFiles(t) {
		src := v[0]
		file := writeModel(t, dir, name, src)
		for _, args := range [][]string{
			{"lint", file},
			{"lint", "--model", file},
			{"check", "--model", file},
			{"emit", "--format", "promela", "--model", file},
			{"matrix", "--model", file, "--format", "json"},
		} {
			code, out, errs := runConformTest(t, args...)
			if code != ExitConfig {
				t.Errorf("%s %s: exit %d, want %d\n%s%s", args[0], name, code, ExitConfig, out, errs)
				continue
			}
			if args[0] != "lint" && out != "" {
				t.Errorf("%s %s: printed a result for a model with errors:\n%s", args[0], name, out)
			}
			for _, line := range strings.Split(src, "\n") {
				w, ok := strings.CutPrefix(line, "# want ")
				if !ok {
					continue
				}
				f := strings.SplitN(w, " ", 3)
				head := fmt.Sprintf("%s:%s: error: ", file, f[0])
				at := strings.Index(errs, head)
				if at < 0 {
					t.Errorf("%s %s: no error at %s:\n%s", args[0], name, f[0], errs)
					continue
				}
				msg, rest, _ := strings.Cut(errs[at:], "\n")
				if !strings.HasSuffix(msg, "["+f[1]+"]") || len(f) == 3 && !strings.Contains(msg, f[2]) {
					t.Errorf("%s %s: %q, want code %s and %q", args[0], name, msg, f[1], f)
				}
				// The source line, then the caret under the column.
				lines := strings.SplitN(rest, "\n", 3)
				var ln, col int
				fmt.Sscanf(f[0], "%d:%d", &ln, &col)
				srcLine := strings.Split(src, "\n")[ln-1]
				if len(lines) < 2 || lines[0] != "    "+srcLine ||
					len([]rune(lines[1])) != 4+col || !strings.HasSuffix(lines[1], "^") {
					t.Errorf("%s %s: no caret under %s:\n%s", args[0], name, f[0], rest)
				}
			}
		}
	}
}

// agentsModel has a constant bound, a negative initial value in a domain
// that allows it, and one property that fails once every agent is busy.
const agentsModel = `ir_version: 1
model: agents
protocol: MCP
constants:
  - {name: AGENTS, value: 2}
domains:
  - {name: Agent, type: int, min: 1, max: AGENTS}
variables:
  - {name: busy, type: set Agent}
  - {name: credit, type: int, min: -3, max: 3, init: -2}
transitions:
  - {id: Start, kind: Environment, assumption: an agent starts, params: {a: Agent}, guard: "!(a in busy)", writes: {busy: "busy union {a}", credit: "credit + 1"}}
properties:
  - {id: not_all_busy, principle: P6, class: AASM-HARDENING, expr: "exists a in Agent: !(a in busy)"}
  - {id: credit_low, principle: P6, class: AASM-HARDENING, expr: "credit <= AGENTS - 2"}
`

// TestConformExitCodes: the exit codes warden help conform documents, on
// a user's file: 1 violated, 0 clean, 6 stopped at the budget, 3 a model
// error, 2 a malformed -D.
func TestConformExitCodes(t *testing.T) {
	dir := t.TempDir()
	file := writeModel(t, dir, "agents.yaml", agentsModel)
	clean := writeModel(t, dir, "clean.yaml", strings.Replace(agentsModel,
		`expr: "exists a in Agent: !(a in busy)"`, `expr: "card(busy) <= AGENTS"`, 1))
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"check", "--model", file}, ExitFindings, "length 2"},
		{[]string{"check", "--model", clean}, ExitOK, "0 violated, 0 incomplete"},
		{[]string{"check", "--model", clean, "--max-states", "2"}, ExitPartial, "incomplete"},
		{[]string{"check", "--model", file, "-D", "AGENTS=3"}, ExitFindings, "length 3"},
		{[]string{"check", "--model", file, "-D", "AGENTS=0"}, ExitConfig, "min 1 > max 0 (AGENTS = 0 from -D AGENTS=0) [domain]"},
		{[]string{"check", "--model", file, "-D", "AGENTS=2000000"}, ExitConfig, `constant "AGENTS" = 2000000 (from -D AGENTS=2000000) is out of range`},
		{[]string{"check", "--model", file, "-D", "AGENTS=40"}, ExitConfig, "set \"busy\" ranges over 40 elements; at most 30"},
		{[]string{"check", "--model", file, "-D", "USERS=3"}, ExitConfig, `-D USERS: the model declares no constant "USERS" [unknown-constant]`},
		{[]string{"check", "--model", file, "-D", "1X=3"}, ExitUsage, `NAME a constant's name, not "1X=3"`},
		{[]string{"check", "--model", file, "-D", "AGENTS=two"}, ExitUsage, `not "AGENTS=two"`},
		{[]string{"lint", file, "-D", "AGENTS=0"}, ExitConfig, "from -D AGENTS=0"},
		{[]string{"emit", "--format", "tla", "--model", file, "-D", "NOPE=1"}, ExitConfig, "[unknown-constant]"},
		{[]string{"matrix", "--model", file, "-D", "AGENTS=-1"}, ExitConfig, "from -D AGENTS=-1"},
	} {
		code, out, errs := runConformTest(t, c.args...)
		if code != c.code || !strings.Contains(out+errs, c.want) {
			t.Errorf("%v: exit %d, want %d and %q\n%s%s", c.args, code, c.code, c.want, out, errs)
		}
	}
	// The negative initial value is the first state's: credit goes -2, -1, 0.
	itf := t.TempDir()
	if code, out, errs := runConformTest(t, "check", "--model", file, "--out", itf); code != ExitFindings {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	data, err := os.ReadFile(filepath.Join(itf, "traces", "agents", "not_all_busy.itf.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"credit": -2`) {
		t.Errorf("the trace does not start at credit = -2:\n%s", data)
	}
}

// TestConformModelDirectories: a directory with no models, one bad file
// among good ones, a binary file and an oversize file: each is an error
// that names the file, and nothing is checked.
func TestConformModelDirectories(t *testing.T) {
	empty := t.TempDir()
	writeModel(t, empty, "README.md", "# not a model\n")
	if err := os.Mkdir(filepath.Join(empty, "sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"lint", empty}, {"check", "--model", empty}, {"emit", "--format", "tla", "--model", empty, "--out", t.TempDir()}, {"matrix", "--model", empty}} {
		code, out, errs := runConformTest(t, cmd...)
		if code != ExitConfig || !strings.Contains(errs, "the directory has no *.yaml or *.yml model files") {
			t.Errorf("%v: exit %d, want %d\n%s%s", cmd, code, ExitConfig, out, errs)
		}
	}

	dir := t.TempDir()
	writeModel(t, dir, "a.yaml", agentsModel)
	writeModel(t, dir, "b.yaml", strings.Replace(agentsModel, "model: agents", "model: other", 1))
	writeModel(t, dir, "c.yaml", strings.Replace(agentsModel, "model: agents", "model: third", 1)+"  - {id: x, principle: P6, class: AASM-HARDENING, expr: \"busy\"}\n")
	writeModel(t, dir, "d.yml", "\x7fELF\x02\x01\x01\x00")
	writeModel(t, dir, "e.yaml", "description: \""+strings.Repeat("x", 2<<20)+"\"\n")
	writeModel(t, dir, "f.yaml", "")
	for _, cmd := range [][]string{{"lint", dir}, {"check", "--model", dir}, {"matrix", "--model", dir}} {
		code, out, errs := runConformTest(t, cmd...)
		if code != ExitConfig {
			t.Errorf("%v: exit %d, want %d\n%s%s", cmd, code, ExitConfig, out, errs)
		}
		for _, want := range []string{
			filepath.Join(dir, "c.yaml") + ":16:58: error: expected bool, not set of int[1..2] [type-mismatch]",
			filepath.Join(dir, "d.yml") + ":1:8: error: a NUL byte (0x00)",
			filepath.Join(dir, "e.yaml") + ":1:1: error: the file is larger than 1048576 bytes",
			filepath.Join(dir, "f.yaml") + ":1:1: error: the file is empty [empty]",
		} {
			if !strings.Contains(errs, want) {
				t.Errorf("%v: stderr lacks %q:\n%s", cmd, want, errs)
			}
		}
		if cmd[0] != "lint" && (out != "" || !strings.Contains(errs, "4 of 6 model files have errors")) {
			t.Errorf("%v: checked something, or did not count the bad files:\n%s%s", cmd, out, errs)
		}
		if cmd[0] == "lint" && (!strings.Contains(out, "a.yaml: ok") || !strings.Contains(out, "c.yaml: invalid")) {
			t.Errorf("lint: each file's verdict:\n%s", out)
		}
	}
}
