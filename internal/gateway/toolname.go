package gateway

// Tool names as a person, or a lenient server, might read them. A protected
// tool must not be reachable under a name that only looks like its own:
// "Transfer_Funds", "transfer_funds " with a trailing space or NUL,
// "trаnsfer_funds" with a Cyrillic а, or "ｔｒａｎｓｆｅｒ_funds" in fullwidth
// letters all pass an exact-name policy as unlisted tools.
//
//	NormalTool   ignorables removed (controls, format characters such as
//	             zero-width joiners, spaces, variation selectors), NFKC,
//	             full case folding: the name the policy lists are matched
//	             against besides the exact one
//	toolKey      the UTS #39 confusable skeleton of NormalTool: two names
//	             with one key look alike
//
// The tool-policy stage refuses a call whose name is not identical to, but
// has the key of, a tool the upstream listed or the configuration names
// (rule tool-name-variant), pinning or not. allow, deny, require_token and
// require_signature match the exact name and its normal form: a deny or
// a requirement that matches either applies, and an allow list must admit
// both.

import (
	"strings"
	"unicode"

	"github.com/mtibben/confusables"

	"github.com/agentwarden/warden/internal/glob"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// NormalTool returns the normal form of a tool name: without ignorable
// characters, NFKC, case folded.
func NormalTool(name string) string {
	if plainToolName(name) {
		return name
	}
	var b strings.Builder
	for _, r := range norm.NFKC.String(name) {
		if !ignorable(r) {
			b.WriteRune(r)
		}
	}
	return norm.NFKC.String(cases.Fold().String(b.String()))
}

// plainToolName reports whether name is lower-case ASCII letters, digits and
// the punctuation tool names use: its own normal form.
func plainToolName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.' || c == '/') {
			return false
		}
	}
	return true
}

// ignorable reports whether r is invisible or blank in a name: controls,
// format characters, separators, variation selectors, and the other
// default-ignorable code points.
func ignorable(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Z, unicode.Variation_Selector,
		unicode.Other_Default_Ignorable_Code_Point, unicode.White_Space)
}

// toolKey returns the confusable skeleton of name's normal form: names that
// look alike share it.
func toolKey(name string) string { return confusables.Skeleton(NormalTool(name)) }

// toolNames is a set of tool names by key, for finding variants.
type toolNames map[string]string

// add records name under its key. The first name of a key stays.
func (t toolNames) add(name string) {
	if name == "" || strings.Contains(name, "*") {
		return
	}
	k := toolKey(name)
	if _, ok := t[k]; !ok {
		t[k] = name
	}
}

// variantOf returns the listed name that name, whose toolKey is key, is a
// look-alike of: same key, not the same name.
func (t toolNames) variantOf(name, key string) (string, bool) {
	if len(t) == 0 {
		return "", false
	}
	listed, ok := t[key]
	if !ok || listed == name {
		return "", false
	}
	return listed, true
}

// allForms is a Permitter for allow/deny lists: a name passes only if it
// passes the list as written and its normal form passes the list in normal
// form, so a deny on a tool denies its look-alikes, and an allow list admits
// a look-alike of nothing it lists.
type allForms struct{ exact, normal glob.List }

func newAllForms(l glob.List) allForms { return allForms{l, normalList(l)} }

func (a allForms) Permits(name string) (bool, string) {
	ok, rule := a.exact.Permits(name)
	if !ok {
		return ok, rule
	}
	if n := NormalTool(name); n != name {
		if ok, rule := a.normal.Permits(n); !ok {
			return false, rule + " (normal form " + quote(n) + ")"
		}
	}
	return ok, rule
}

// anyForm is a Permitter for requirement lists (require_token,
// require_signature): a name is required when it is listed as written, or
// its normal form is listed in normal form.
type anyForm struct{ exact, normal glob.List }

func newAnyForm(l glob.List) anyForm { return anyForm{l, normalList(l)} }

func (a anyForm) Permits(name string) (bool, string) {
	ok, rule := a.exact.Permits(name)
	if ok {
		return ok, rule
	}
	if n := NormalTool(name); n != name {
		if ok, rule := a.normal.Permits(n); ok {
			return true, rule + " (normal form " + quote(n) + ")"
		}
	}
	return false, rule
}

// normalList returns l with every pattern in normal form ('*' stays a
// wildcard). A pattern whose normal form does not compile stays as it was.
func normalList(l glob.List) glob.List {
	norm := func(ps []glob.Pattern) []glob.Pattern {
		out := make([]glob.Pattern, len(ps))
		for i, p := range ps {
			out[i] = p
			if n, err := glob.Compile(NormalTool(p.String())); err == nil {
				out[i] = n
			}
		}
		return out
	}
	return glob.List{Allow: norm(l.Allow), Deny: norm(l.Deny)}
}

// ToolLists is what an upstream's configuration says about its tools
// (gateway.upstreams[i]: tools, require_token, require_signature,
// mandates).
type ToolLists struct {
	Tools            glob.List // allow and deny
	RequireToken     glob.List
	RequireSignature glob.List
	Mandated         []string // the tools of its mandates
}

// NewToolPolicy returns the tool-policy stage of an upstream: its allow and
// deny lists matched in both forms, and the look-alikes of every tool its
// configuration names refused.
func NewToolPolicy(l ToolLists) ToolPolicy {
	return ToolPolicy{List: newAllForms(l.Tools), Names: configuredTools(l)}
}

// RequireList returns a requirement list (require_token,
// require_signature) matched in both forms.
func RequireList(l glob.List) Permitter { return newAnyForm(l) }

// configuredTools returns the tool names an upstream's configuration lists
// literally: the look-alikes of these are refused.
func configuredTools(tl ToolLists) toolNames {
	t := toolNames{}
	for _, l := range []glob.List{tl.Tools, tl.RequireToken, tl.RequireSignature} {
		for _, p := range append(append([]glob.Pattern(nil), l.Allow...), l.Deny...) {
			t.add(p.String())
		}
	}
	for _, m := range tl.Mandated {
		t.add(m)
	}
	return t
}
