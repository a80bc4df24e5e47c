package console

import (
	"strings"
	"testing"
)

func TestLineDiff(t *testing.T) {
	render := func(d *diffView) string {
		var b strings.Builder
		for _, l := range d.Lines {
			b.WriteString(l.Op + l.Text + "\n")
		}
		return b.String()
	}
	for _, tc := range []struct{ old, cur, want string }{
		{"a\nb\nc", "a\nB\nc", " a\n-b\n+B\n c\n"},
		{"a\nb", "a\nb\nc", " a\n b\n+c\n"},
		{"a\nb\nc", "c", "-a\n-b\n c\n"},
		{"", "x", "+x\n"},
	} {
		if got := render(newDiff(tc.old, tc.cur, "")); got != tc.want {
			t.Errorf("diff %q → %q:\n%s\nwant\n%s", tc.old, tc.cur, got, tc.want)
		}
	}
	if d := newDiff("same", "same", ""); !d.Same || d.Lines != nil {
		t.Errorf("identical arguments: %+v", d)
	}
	big := strings.Repeat("x\n", maxDiffLines+1)
	if d := newDiff(big, big+"y", ""); !d.TooLarge {
		t.Error("an oversized diff was computed")
	}
}
