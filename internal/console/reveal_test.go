package console

import (
	"regexp"
	"strings"
	"testing"
)

// visible is what a person reads in revealed HTML: the tags dropped, the
// entities the tests meet decoded.
func visible(h string) string {
	s := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(h, "")
	return strings.NewReplacer("&#34;", `"`, "&#39;", "'", "&lt;", "<", "&gt;", ">", "&amp;", "&", "&#43;", "+").Replace(s)
}

func TestRevealEscapesWhatDeceives(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		warn     int // -1: none
	}{
		{"\u202emoc.elpmaxe@rodnev", `\u{202E}moc.elpmaxe@rodnev`, warnBidi},
		{"a\u2066b\u2069c", `a\u{2066}b\u{2069}c`, warnBidi},
		{"rm -rf\u200f /", `rm -rf\u{200F} /`, warnBidi},
		{"pay\u200bpal", `pay\u{200B}pal`, warnInvisible},
		{"x\u00a0y", `x\u{00A0}y`, warnInvisible},
		{"\ufeffhi", `\u{FEFF}hi`, warnInvisible},
		{"tag\U000E0041", `tag\u{E0041}`, warnInvisible},
		{"fill\u3164er", `fill\u{3164}er`, warnInvisible},
		{"vendor@ex\u0430mple.com", `vendor@ex\u{0430}mple.com`, warnConfusable},
		{"\u0440\u0430\u0443", `\u{0440}\u{0430}\u{0443}`, warnConfusable}, // "рау", all Cyrillic look-alikes
		{"\uff50\uff41\uff59", `\u{FF50}\u{FF41}\u{FF59}`, warnConfusable}, // fullwidth "pay"
		{"ΑΒΓ abc", "ΑΒΓ abc", -1},                                         // Greek word, Latin word: each in one script
		{"Grüße aus Köln", "Grüße aus Köln", -1},
		{"привет", "привет", -1},
		{"東京Tokyo とうきょう", "東京Tokyo とうきょう", -1},
		{"line one\nline\ttwo", "line one\nline\ttwo", -1},
	} {
		var f findings
		got := string(revealText(tc.in, &f))
		if v := visible(got); v != tc.want {
			t.Errorf("reveal(%q) reads %q, want %q", tc.in, v, tc.want)
		}
		for k := range nWarn {
			if f[k] != (k == tc.warn) {
				t.Errorf("reveal(%q): warning %d is %v", tc.in, k, f[k])
			}
		}
	}
}

func TestRevealKeepsHTMLEscaped(t *testing.T) {
	got := string(revealText("<script>alert(1)</script>\u202e\"'&", nil))
	if strings.Contains(got, "<script") || !strings.Contains(got, "&lt;script&gt;") || !strings.Contains(got, "&#34;&#39;&amp;") {
		t.Errorf("revealed text is not HTML-escaped: %s", got)
	}
}

func TestRevealJSONGroupsNumbers(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"amount": 250000,`, `&#34;amount&#34;: <span class="num">250<span class="grp">000</span></span>,`},
		{`"amount": 1234567.891`, `&#34;amount&#34;: <span class="num">1<span class="grp">234</span><span class="grp">567</span></span>.891`},
		{`"amount": -10000`, `&#34;amount&#34;: <span class="num">-10<span class="grp">000</span></span>`},
		{`"amount": 2500,`, `&#34;amount&#34;: 2500,`},
		{`"id": "1234567"`, `&#34;id&#34;: &#34;1234567&#34;`},                                     // strings are not numbers
		{`"a\" 12345": 1`, `&#34;a\&#34; 12345&#34;: 1`},                                           // an escaped quote does not end the string
		{`"a\\": 12345`, `&#34;a\\&#34;: <span class="num">12<span class="grp">345</span></span>`}, // an escaped backslash does
	} {
		if got := string(revealJSON(tc.in, nil)); got != tc.want {
			t.Errorf("revealJSON(%s)\n got %s\nwant %s", tc.in, got, tc.want)
		}
		if v := visible(string(revealJSON(tc.in, nil))); v != tc.in {
			t.Errorf("grouping changed the text: %q became %q", tc.in, v)
		}
	}
}

func TestRevealArgsCollapsesLongLines(t *testing.T) {
	long := strings.Repeat("a", 200) + `\"` + strings.Repeat("b", 198) + "\u202e 123456"
	args := "{\n  \"memo\": \"" + long + "\",\n  \"amount\": 123456\n}"
	var f findings
	got := string(revealArgs(args, &f))
	if !strings.Contains(got, `<details class="more"><summary>… show the other 261 characters of this line</summary>`) {
		t.Errorf("the long line is not collapsed:\n%s", got)
	}
	// The hidden part is still revealed and warned about; a number inside
	// the string is not grouped, one after it is.
	if !f[warnBidi] || !strings.Contains(got, `\u{202E}</mark> 123456&#34;,`) {
		t.Errorf("the collapsed part:\n%s", got)
	}
	if !strings.Contains(got, `&#34;amount&#34;: <span class="num">123<span class="grp">456</span></span>`) {
		t.Errorf("the line after the collapsed one lost its JSON state:\n%s", got)
	}
	short := "{\n  \"memo\": \"short\"\n}"
	if got := string(revealArgs(short, nil)); strings.Contains(got, "<details") {
		t.Errorf("a short line was collapsed: %s", got)
	}
	if groupDigits(1234567) != "1,234,567" || groupDigits(999) != "999" {
		t.Error("groupDigits")
	}
}
