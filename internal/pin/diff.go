package pin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// diffContext is how many unchanged lines are shown around a change.
const diffContext = 3

// maxDiffCells bounds the line-matching table of Diff; beyond it the
// changed middle is shown as removed, then added.
const maxDiffCells = 1 << 22

// Pretty returns a canonical definition indented, two spaces per level, one
// member per line, members in JCS order: the form Diff compares.
func Pretty(canonical []byte) string {
	if len(canonical) == 0 {
		return ""
	}
	var b bytes.Buffer
	if json.Indent(&b, canonical, "", "  ") != nil {
		return string(canonical)
	}
	return b.String()
}

// Diff returns a line diff of two canonical definitions, pretty-printed:
// unchanged lines start with two spaces, removed ones with "- ", added ones
// with "+ ", and runs of unchanged lines far from a change are folded into
// one "  ..." line. old nil (a tool that had no pin, or a manifest pin never
// seen) shows every line of new as added. Equal definitions give "".
func Diff(old, new []byte) string {
	if bytes.Equal(old, new) {
		return ""
	}
	a, b := lines(Pretty(old)), lines(Pretty(new))
	ops := diffLines(a, b)
	var out strings.Builder
	for i, op := range ops {
		if op.kind == ' ' && !nearChange(ops, i) {
			if i == 0 || ops[i-1].kind != ' ' || nearChange(ops, i-1) {
				out.WriteString("  ...\n")
			}
			continue
		}
		fmt.Fprintf(&out, "%c %s\n", op.kind, op.line)
	}
	return out.String()
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

type diffOp struct {
	kind byte // ' ', '-', '+'
	line string
}

// nearChange reports whether ops[i] lies within diffContext of a change.
func nearChange(ops []diffOp, i int) bool {
	for j := max(0, i-diffContext); j <= min(len(ops)-1, i+diffContext); j++ {
		if ops[j].kind != ' ' {
			return true
		}
	}
	return false
}

// diffLines matches a and b by longest common subsequence, after trimming
// their common prefix and suffix.
func diffLines(a, b []string) []diffOp {
	var ops []diffOp
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		ops = append(ops, diffOp{' ', a[pre]})
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	ops = append(ops, lcsOps(ma, mb)...)
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, diffOp{' ', l})
	}
	return ops
}

func lcsOps(a, b []string) []diffOp {
	var ops []diffOp
	if len(a)*len(b) > maxDiffCells {
		for _, l := range a {
			ops = append(ops, diffOp{'-', l})
		}
		for _, l := range b {
			ops = append(ops, diffOp{'+', l})
		}
		return ops
	}
	// n[i][j] is the LCS length of a[i:] and b[j:].
	w := len(b) + 1
	n := make([]int, (len(a)+1)*w)
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				n[i*w+j] = n[(i+1)*w+j+1] + 1
			} else {
				n[i*w+j] = max(n[(i+1)*w+j], n[i*w+j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			ops = append(ops, diffOp{' ', a[i]})
			i, j = i+1, j+1
		case n[(i+1)*w+j] >= n[i*w+j+1]:
			ops = append(ops, diffOp{'-', a[i]})
			i++
		default:
			ops = append(ops, diffOp{'+', b[j]})
			j++
		}
	}
	for ; i < len(a); i++ {
		ops = append(ops, diffOp{'-', a[i]})
	}
	for ; j < len(b); j++ {
		ops = append(ops, diffOp{'+', b[j]})
	}
	return ops
}
