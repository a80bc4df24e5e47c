package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Values in an upstream's env and headers may reference warden's environment
// with ${env:NAME}. The reference is kept as written by Parse, so parsing
// reads no environment and a dumped Config holds no secret; it is expanded
// only by ResolvedEnv and ResolvedHeaders, when a transport needs the value.
//
//	headers:
//	  Authorization: "Bearer ${env:DOCS_TOKEN}"
//
// "$${" stands for a literal "${". Any other "${" is an error, so that a
// shell-style "${TOKEN}" is not sent upstream verbatim by mistake. A lone '$'
// is literal.

// expand replaces the ${env:NAME} references in s using lookup. With a nil
// lookup it only checks the syntax and returns s unchanged.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	orig := s
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			break
		}
		if i > 0 && s[i-1] == '$' { // "$${" is a literal "${"
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated reference %q: write ${env:NAME}, or $${ for a literal \"${\"", s[i:])
		}
		ref := s[i : i+end+1]
		name, ok := strings.CutPrefix(ref[2:len(ref)-1], "env:")
		if !ok {
			if inner := ref[2 : len(ref)-1]; validEnvName(inner) {
				return "", fmt.Errorf("unsupported reference %q: write ${env:%s} to use the environment variable, or $${ for a literal \"${\"", ref, inner)
			}
			return "", fmt.Errorf("unsupported reference %q: only ${env:NAME} is expanded; write $${ for a literal \"${\"", ref)
		}
		if !validEnvName(name) {
			return "", fmt.Errorf("reference %q: %q is not a valid environment variable name", ref, name)
		}
		if lookup != nil {
			v, ok := lookup(name)
			if !ok {
				return "", fmt.Errorf("environment variable %s is not set", name)
			}
			b.WriteString(v)
		}
		s = s[i+end+1:]
	}
	if lookup == nil {
		return orig, nil
	}
	return b.String(), nil
}

// ResolvedEnv returns Env with its ${env:NAME} references expanded by lookup
// (pass os.LookupEnv). It fails, naming every variable that is not set but
// never showing a value, if any reference cannot be resolved. The result is
// a new map; nil when Env is nil.
func (u Upstream) ResolvedEnv(lookup func(string) (string, bool)) (map[string]string, error) {
	return resolve(u.Name, "env", u.Env, lookup, nil)
}

// ResolvedHeaders returns Headers with its ${env:NAME} references expanded
// by lookup (pass os.LookupEnv). Besides the failures of ResolvedEnv, it
// rejects a value that a variable has filled with control characters, which
// would otherwise let the environment inject header lines.
func (u Upstream) ResolvedHeaders(lookup func(string) (string, bool)) (map[string]string, error) {
	return resolve(u.Name, "headers", u.Headers, lookup, func(v string) error {
		if hasCtl(v) {
			return errors.New("value contains control characters after expansion")
		}
		return nil
	})
}

func resolve(upstream, what string, m map[string]string, lookup func(string) (string, bool), check func(string) error) (map[string]string, error) {
	if m == nil {
		return nil, nil
	}
	if lookup == nil {
		return nil, fmt.Errorf("upstream %q: %s: nil lookup function", upstream, what)
	}
	out := make(map[string]string, len(m))
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v, err := expand(m[k], lookup)
		if err == nil && check != nil {
			err = check(v)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("upstream %q: %s: %w", upstream, key(what, k), err))
			continue
		}
		out[k] = v
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// validEnvName reports whether s is a portable environment variable name:
// [A-Za-z_][A-Za-z0-9_]*.
func validEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// hasCtl reports whether s contains an ASCII control character other than
// horizontal tab, or DEL: what may not appear in an HTTP header value.
func hasCtl(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) >= 0
}

// ResolvedHeaders returns a's headers with ${env:NAME} references expanded.
func (a AGUIUpstream) ResolvedHeaders(lookup func(string) (string, bool)) (map[string]string, error) {
	return Upstream{Name: a.Name, Headers: a.Headers}.ResolvedHeaders(lookup)
}
