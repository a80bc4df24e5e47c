package console

// A line diff of two pretty-printed argument objects, so that an approver
// sees at a glance what changed since the previous call of the same tool
// ("amount": 2500 became "amount": 250000).

import "html/template"

// maxDiffLines bounds each side of a diff: the table below is quadratic.
const maxDiffLines = 400

// diffView is a diff as the page shows it.
type diffView struct {
	Against     string        // which call the diff compares with, or why there is none
	AgainstHTML template.HTML // Against with deceptive characters escaped
	None        bool          // there is no call to compare with
	Lines       []diffLine
	Same        bool // the arguments are identical
	TooLarge    bool // not computed: too many lines
}

// diffLine is one line of the diff; Op is "+" (only in the new call), "-"
// (only in the previous one) or " " (in both).
type diffLine struct {
	Op, Text string
	HTML     template.HTML // Text with deceptive characters escaped (reveal.go)
}

// reveal fills each line's HTML, recording what it found in f.
func (d *diffView) reveal(f *findings) {
	d.AgainstHTML = revealText(d.Against, f)
	for i := range d.Lines {
		d.Lines[i].HTML = revealJSON(d.Lines[i].Text, f)
	}
}

// Class is the line's CSS class suffix.
func (l diffLine) Class() string {
	switch l.Op {
	case "+":
		return "add"
	case "-":
		return "del"
	}
	return "same"
}

// newDiff compares the previous arguments old with cur, line by line.
func newDiff(old, cur, against string) *diffView {
	d := &diffView{Against: against}
	if old == cur {
		d.Same = true
		return d
	}
	a, b := splitLines(old), splitLines(cur)
	if len(a) > maxDiffLines || len(b) > maxDiffLines {
		d.TooLarge = true
		return d
	}
	d.Lines = lineDiff(a, b)
	return d
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		out = append(out, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}

// lineDiff returns a shortest edit script from a to b by the longest common
// subsequence of lines; deletions come before insertions at each change.
func lineDiff(a, b []string) []diffLine {
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []diffLine
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			out = append(out, diffLine{Op: " ", Text: a[i]})
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, diffLine{Op: "-", Text: a[i]})
			i++
		default:
			out = append(out, diffLine{Op: "+", Text: b[j]})
			j++
		}
	}
	for ; i < len(a); i++ {
		out = append(out, diffLine{Op: "-", Text: a[i]})
	}
	for ; j < len(b); j++ {
		out = append(out, diffLine{Op: "+", Text: b[j]})
	}
	return out
}
