// Package glob is the name patterns of warden's allow and deny lists
// (methods, tools, A2A methods): literal text in which '*' matches any run
// of characters. The configuration decodes them (internal/config) and the
// gateway matches with them; neither owns them, so the gateway needs no
// configuration types to apply a list.
package glob

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Pattern matches method and tool names. It is literal text in which '*'
// matches any run of characters, '/' included; there are no other wildcards
// and no escapes. "tools/*" matches "tools/call" and "tools/list"; "*_file"
// matches "read_file"; "*" matches every name.
//
// The zero Pattern is invalid and matches nothing. A Pattern is immutable and
// safe to share.
type Pattern struct {
	src   string
	parts []string // src split at '*'; nil when the pattern is invalid
}

// Compile checks s and returns it as a Pattern. It rejects the empty
// pattern, control characters, and the glob characters '?', '[', ']', '{',
// '}' and '\', which other tools treat as wildcards or escapes: here they
// would be literal and a deny rule written with them would silently match
// nothing.
func Compile(s string) (Pattern, error) {
	if s == "" {
		return Pattern{}, fmt.Errorf("empty pattern (use \"*\" to match every name)")
	}
	for _, r := range s {
		switch {
		case strings.ContainsRune(`?[]{}\`, r):
			return Pattern{src: s}, fmt.Errorf("pattern %q: %q is not a wildcard here; only '*' is, and there are no escapes", s, r)
		case unicode.IsControl(r):
			return Pattern{src: s}, fmt.Errorf("pattern %q contains the control character %U", s, r)
		}
	}
	return Pattern{src: s, parts: strings.Split(s, "*")}, nil
}

// Lenient is Compile for the configuration's decoder: it keeps an
// invalid pattern (for Validate to report) instead of failing. The result
// matches nothing, and in a List's Deny it denies every name.
func Lenient(s string) Pattern {
	p, _ := Compile(s)
	p.src = s
	return p
}

// String returns the pattern as written.
func (p Pattern) String() string { return p.src }

// MarshalText returns the pattern as written, so that a configuration marshals to
// readable JSON or YAML.
func (p Pattern) MarshalText() ([]byte, error) { return []byte(p.src), nil }

// Valid reports whether p came out of Compile without error.
func (p Pattern) Valid() bool { return p.parts != nil }

// Match reports whether name matches the whole pattern. An invalid pattern
// matches nothing.
func (p Pattern) Match(name string) bool {
	if !p.Valid() {
		return false
	}
	parts := p.parts
	if len(parts) == 1 {
		return name == parts[0]
	}
	// Anchor the first and last literal; place the middle ones greedily
	// leftmost, which is correct for '*'-only globs.
	first, last := parts[0], parts[len(parts)-1]
	if len(name) < len(first)+len(last) || !strings.HasPrefix(name, first) || !strings.HasSuffix(name, last) {
		return false
	}
	rest := name[len(first) : len(name)-len(last)]
	for _, lit := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, lit)
		if i < 0 {
			return false
		}
		rest = rest[i+len(lit):]
	}
	return true
}

// List is an allow list and a deny list of patterns. Deny wins over allow; an
// empty allow list allows every name that is not denied. The zero List allows
// everything.
type List struct {
	Allow []Pattern `yaml:"allow"`
	Deny  []Pattern `yaml:"deny"`
}

// Permits reports whether name passes the list, and the rule that decided, for
// the audit log: `deny "tools/*"`, `allow "tools/call"`, "not in allow list"
// or "no allow list".
//
// An invalid pattern in Deny denies every name (fail closed); one in Allow
// allows none. Validate rejects configurations that contain either.
func (l List) Permits(name string) (ok bool, rule string) {
	for _, p := range l.Deny {
		if !p.Valid() {
			return false, "deny " + strconv.Quote(p.src) + " (invalid pattern)"
		}
		if p.Match(name) {
			return false, "deny " + strconv.Quote(p.src)
		}
	}
	if len(l.Allow) == 0 {
		return true, "no allow list"
	}
	for _, p := range l.Allow {
		if p.Match(name) {
			return true, "allow " + strconv.Quote(p.src)
		}
	}
	return false, "not in allow list"
}

// IsZero reports whether the list has no patterns at all.
func (l List) IsZero() bool { return len(l.Allow) == 0 && len(l.Deny) == 0 }
