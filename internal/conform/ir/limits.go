package ir

import (
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Limits on what a model file may ask of the parser and the checker. A
// model is written by a person; these bounds are far above any protocol
// model (the largest built-in model is 11 KB, nests YAML 5 deep and
// expressions about 10 deep) and keep a hostile or generated file from
// costing minutes or gigabytes before its first diagnostic.
const (
	MaxFileBytes  = 1 << 20 // a model file (code too-large)
	MaxExprBytes  = 16 << 10
	MaxYAMLDepth  = 64  // nested mappings and lists (code too-deep)
	MaxExprDepth  = 100 // nested parentheses, operators, if, quantifiers (code too-deep)
	MaxIntBound   = 1 << 20
	MaxInstances  = 1 << 12 // instances of one transition with params (code domain)
	MaxQuantified = 1 << 16 // bindings of nested quantifiers (code domain)
)

// checkBytes reports a file that is too large or is not UTF-8 text (a
// binary file, a NUL byte, a UTF-16 file), at the first offending byte.
func (p *parser) checkBytes(data []byte) bool {
	if len(data) > MaxFileBytes {
		p.d.add(Pos{Line: 1, Col: 1}, "too-large", "the file is larger than %d bytes (1 MiB), the most a model file may be", MaxFileBytes)
		return false
	}
	for off := 0; off < len(data); {
		r, size := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && size <= 1 || r == 0 {
			what := "a NUL byte"
			if r != 0 {
				what = "a byte that is not UTF-8"
			}
			p.d.add(posAt(data, off), "encoding", "%s (0x%02x): a model file is UTF-8 text, and this looks like a binary file", what, data[off])
			return false
		}
		off += size
	}
	return true
}

// posAt is the line and column (in characters, as YAML counts them) of
// byte offset off of data.
func posAt(data []byte, off int) Pos {
	line, start := 1, 0
	for i := 0; i < off; i++ {
		if data[i] == '\n' {
			line, start = line+1, i+1
		}
	}
	return Pos{Line: line, Col: utf8.RuneCount(data[start:off]) + 1}
}

// checkDepth reports the first node nested deeper than MaxYAMLDepth.
func (p *parser) checkDepth(n *yaml.Node, depth int) bool {
	if depth > MaxYAMLDepth {
		p.d.add(p.pos(n), "too-deep", "the YAML nests more than %d levels deep here", MaxYAMLDepth)
		return false
	}
	for _, c := range n.Content {
		if !p.checkDepth(c, depth+1) {
			return false
		}
	}
	return true
}
