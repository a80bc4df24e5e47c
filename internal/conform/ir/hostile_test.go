package ir

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hostileCase is one model file of testdata/hostile.txt and the errors it
// must get.
type hostileCase struct {
	name string
	src  []byte
	want []hostileWant
}

type hostileWant struct {
	line, col int
	code      string
	text      string
}

func (w hostileWant) String() string {
	return fmt.Sprintf("%d:%d [%s] %q", w.line, w.col, w.code, w.text)
}

// readHostile splits testdata/hostile.txt into its cases.
func readHostile(t *testing.T) []hostileCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "hostile.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []hostileCase
	for _, part := range strings.Split(string(data), "\n-- ")[1:] {
		head, body, _ := strings.Cut(part, "\n")
		c := hostileCase{name: strings.TrimSuffix(head, " --"), src: []byte(body)}
		for _, line := range strings.Split(body, "\n") {
			rest, ok := strings.CutPrefix(line, "# want ")
			if !ok {
				continue
			}
			f := strings.SplitN(rest, " ", 3)
			lc := strings.Split(f[0], ":")
			var w hostileWant
			w.line, _ = strconv.Atoi(lc[0])
			w.col, _ = strconv.Atoi(lc[1])
			w.code = f[1]
			if len(f) == 3 {
				w.text = f[2]
			}
			c.want = append(c.want, w)
		}
		if len(c.want) == 0 {
			t.Fatalf("case %s wants nothing", c.name)
		}
		cases = append(cases, c)
	}
	if len(cases) < 40 {
		t.Fatalf("read %d cases; the file has more", len(cases))
	}
	return cases
}

// matchErrors compares the errors (not warnings) of ds with want.
func matchErrors(ds Diagnostics, want []hostileWant) error {
	var errs Diagnostics
	for _, d := range ds {
		if d.Severity == Error {
			errs = append(errs, d)
		}
	}
	var problems []string
	for _, w := range want {
		found := false
		for _, d := range errs {
			if d.Pos.Line == w.line && d.Pos.Col == w.col && d.Code == w.code && strings.Contains(d.Msg, w.text) {
				found = true
			}
		}
		if !found {
			problems = append(problems, "missing "+w.String())
		}
	}
	if len(errs) != len(want) {
		problems = append(problems, fmt.Sprintf("%d errors, want %d", len(errs), len(want)))
	}
	if problems != nil {
		return fmt.Errorf("%s; got:\n%s", strings.Join(problems, "; "), errs)
	}
	return nil
}

// TestHostileCorpus: every mistake of the corpus is reported once, at its
// line and column, with its code and a message naming what is wrong, and
// no model comes back usable.
func TestHostileCorpus(t *testing.T) {
	for _, c := range readHostile(t) {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, ds := Load(c.src, c.name, LintOptions{})
			if !ds.HasErrors() {
				t.Fatalf("no error:\n%s", ds)
			}
			if err := matchErrors(ds, c.want); err != nil {
				t.Error(err)
			}
			for _, d := range ds {
				if d.Pos.File != c.name {
					t.Errorf("%v: names file %q", d, d.Pos.File)
				}
			}
			if el := time.Since(start); el > 2*time.Second {
				t.Errorf("took %v", el)
			}
		})
	}
}

// TestHostileBytes: files that are not model text at all.
func TestHostileBytes(t *testing.T) {
	valid := "ir_version: 1\nmodel: m\nprotocol: MCP\n"
	for _, c := range []struct {
		name string
		src  []byte
		want hostileWant
	}{
		{"empty", nil, hostileWant{1, 1, "empty", "empty"}},
		{"blank", []byte("  \n\n\t\n"), hostileWant{1, 1, "empty", "empty"}},
		{"comment only", []byte("# a model\n"), hostileWant{1, 1, "empty", "empty"}},
		{"binary", []byte("\x7fELF\x02\x01\x01\x00\x00\x00"), hostileWant{1, 8, "encoding", "NUL"}},
		{"NUL in a string", []byte(valid + "title: \"a\x00b\"\n"), hostileWant{4, 10, "encoding", "NUL"}},
		{"latin-1", []byte(valid + "title: caf\xe9\n"), hostileWant{4, 11, "encoding", "0xe9"}},
		{"utf-16", []byte("\xff\xfei\x00r\x00"), hostileWant{1, 1, "encoding", "0xff"}},
		{"after unicode", []byte(valid + "title: ∀∃ \xc3\n"), hostileWant{4, 11, "encoding", "0xc3"}},
		{"nested YAML", []byte(valid + "description:\n" + deepYAML(MaxYAMLDepth+10)), hostileWant{4 + MaxYAMLDepth, 1 + 2*(MaxYAMLDepth-1), "too-deep", "64 levels"}},
		{"too large", []byte(valid + "description: \"" + strings.Repeat("a", MaxFileBytes) + "\"\n"), hostileWant{1, 1, "too-large", "1 MiB"}},
		{"expression too large", []byte(valid + "transitions:\n  - {id: T, kind: Environment, assumption: a, guard: \"" +
			strings.Repeat("true && ", MaxExprBytes/8) + "true\"}\n"), hostileWant{5, 55, "too-large", "expression"}},
		{"nested parentheses", []byte(valid + "transitions:\n  - {id: T, kind: Environment, assumption: a, guard: \"" +
			strings.Repeat("(", 5000) + "true" + strings.Repeat(")", 5000) + "\"}\n"), hostileWant{5, 55 + MaxExprDepth, "too-deep", "100 levels"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			m, ds := Load(c.src, "f.yaml", LintOptions{})
			if m != nil && c.want.code != "too-large" && c.want.code != "too-deep" {
				t.Errorf("a model from %q", c.src)
			}
			if err := matchErrors(ds, []hostileWant{c.want}); err != nil {
				t.Error(err)
			}
			if el := time.Since(start); el > time.Second {
				t.Errorf("took %v", el)
			}
			_ = ds.Format(c.src)
			if bytes.Contains([]byte(ds.String()), []byte{0}) {
				t.Errorf("a NUL byte in the diagnostics")
			}
		})
	}
}

// deepYAML is a block list nested n deep: "- - - ... x" one level a line.
func deepYAML(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat("  ", i) + "-\n")
	}
	b.WriteString(strings.Repeat("  ", n) + "x\n")
	return b.String()
}
