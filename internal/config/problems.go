package config

import (
	"strconv"
	"strings"
)

// Problem is one thing wrong with a configuration: a decode error (unknown
// field, wrong type, YAML feature warden does not accept) or a validation
// error (value out of range, missing upstream, ...).
type Problem struct {
	// File is the file name given to Parse or Load; empty for a Config built
	// in code.
	File string
	// Path addresses the offending value in the schema, for example
	// "gateway.upstreams[2].url". It is empty for problems with the file as a
	// whole (empty file, YAML syntax error, second document).
	Path string
	// Line and Column locate the value in the file, 1-based. They are 0 when
	// unknown: the Config was built in code, or the YAML parser did not say.
	Line, Column int
	// Message says what is wrong and, where it can, how to fix it.
	Message string
}

// String renders p as "file:line:col: path: message", leaving out the parts
// that are unknown.
func (p Problem) String() string {
	var b strings.Builder
	loc := p.File
	if p.Line > 0 {
		if loc != "" {
			loc += ":"
		}
		loc += strconv.Itoa(p.Line)
		if p.Column > 0 {
			loc += ":" + strconv.Itoa(p.Column)
		}
	}
	if loc != "" {
		b.WriteString(loc)
		b.WriteString(": ")
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Problems is every problem found in one decode or one Validate call. Parse,
// Validate and Load return it as a *Problems; use errors.As to get at the
// individual problems.
type Problems []Problem

// Error renders the problems one per line, in the order they were found.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// position is a 1-based line and column in the source file.
type position struct{ line, column int }

// join appends a field name to a path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// index appends a list index to a path.
func index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// key appends a user-chosen map key (an env name, a header name) to a path,
// quoting it when it would not read as a plain path element.
func key(path, k string) string {
	if k != "" && strings.IndexFunc(k, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}) < 0 {
		return join(path, k)
	}
	return path + "[" + strconv.Quote(k) + "]"
}

// parent strips the last element from a path built by join, index or key;
// the parent of a top-level field is "".
func parent(path string) string {
	if strings.HasSuffix(path, "]") {
		// Either [n] or ["quoted key"]; a quoted key may itself contain '[',
		// so find the opening bracket from the quoting.
		if strings.HasSuffix(path, "\"]") {
			for i := strings.LastIndex(path, "[\""); i >= 0; i = strings.LastIndex(path[:i], "[\"") {
				if _, err := strconv.Unquote(path[i+1 : len(path)-1]); err == nil {
					return path[:i]
				}
			}
		}
		if i := strings.LastIndexByte(path, '['); i >= 0 {
			return path[:i]
		}
	}
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i]
	}
	return ""
}
