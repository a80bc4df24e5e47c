package secproc

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Extractors of the fourth round's sources (2026-11-28): ecc-agentshield's
// prompt-injection payloads (held out), the examples of @claude-flow/
// aidefence's README and promptfoo's debug-access examples (tuning).

// extractAgentShield reads the payloads of ecc-agentshield's injection
// tester, bundled from src/injection/payloads.ts: an array of objects,
// each with an id, a category and a payload written as a JavaScript string
// literal (double or single quotes, or a template literal over several
// lines). Every payload becomes a malicious tool result: the tester feeds
// them to an agent as the text it reads.
func extractAgentShield(data []byte) ([]extCase, error) {
	const marker = "// src/injection/payloads.ts"
	text := string(data)
	start := strings.Index(text, marker)
	if start < 0 {
		return nil, fmt.Errorf("no %q", marker)
	}
	arr := strings.Index(text[start:], "INJECTION_PAYLOADS = [")
	if arr < 0 {
		return nil, fmt.Errorf("line %d: no INJECTION_PAYLOADS array after %s", lineOf(text, start), marker)
	}
	pos := start + arr
	end := strings.Index(text[pos:], "\n    ];")
	if end < 0 {
		return nil, fmt.Errorf("line %d: INJECTION_PAYLOADS not closed", lineOf(text, pos))
	}
	end += pos
	var out []extCase
	id, category := "", ""
	for pos < end {
		nl := strings.IndexByte(text[pos:end], '\n')
		if nl < 0 {
			break
		}
		pos += nl + 1 // the start of a line
		rest := text[pos:end]
		line := strings.TrimLeft(rest, " \t")
		field, after, ok := strings.Cut(line, ":")
		if !ok || (field != "id" && field != "category" && field != "payload") {
			continue
		}
		lit := strings.TrimLeft(after, " ")
		v, n, err := jsStringExpr(lit)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: %v", lineOf(text, pos), field, err)
		}
		switch field {
		case "id":
			id = v
		case "category":
			category = v
		case "payload":
			if id == "" {
				return nil, fmt.Errorf("line %d: a payload without an id", lineOf(text, pos))
			}
			out = append(out, extCase{text: v, label: Malicious, category: InjectedInstructions, shape: shapeResult,
				where: fmt.Sprintf("line %d (%s, %s)", lineOf(text, pos), id, category)})
			id, category = "", ""
		}
		pos += len(rest) - len(lit) + n // past the literal, which may span lines
	}
	return out, nil
}

// lineOf is the 1-based line of byte offset off in text.
func lineOf(text string, off int) int { return strings.Count(text[:off], "\n") + 1 }

// jsStringExpr reads a JavaScript string literal at the start of s, or
// several joined by +, and returns its value and the bytes it took.
// Template literals with substitutions (${…}) are refused: their value is
// not in the file.
func jsStringExpr(s string) (string, int, error) {
	var b strings.Builder
	i := 0
	for {
		v, n, err := jsStringLiteral(s[i:])
		if err != nil {
			return "", 0, err
		}
		b.WriteString(v)
		i += n
		j := i
		for j < len(s) && (s[j] == ' ' || s[j] == '\n' || s[j] == '\t') {
			j++
		}
		if j >= len(s) || s[j] != '+' {
			return b.String(), i, nil
		}
		j++
		for j < len(s) && (s[j] == ' ' || s[j] == '\n' || s[j] == '\t') {
			j++
		}
		i = j
	}
}

// jsStringLiteral reads one literal: "…", '…' or `…`, with JavaScript's
// escapes (\n, \t, \xHH, \uHHHH, \u{H…}, a line continuation, any other
// character standing for itself).
func jsStringLiteral(s string) (string, int, error) {
	if s == "" {
		return "", 0, fmt.Errorf("want a string literal, found the end")
	}
	q := s[0]
	if q != '"' && q != '\'' && q != '`' {
		r, _ := utf8.DecodeRuneInString(s)
		return "", 0, fmt.Errorf("want a string literal, found %q", r)
	}
	var b strings.Builder
	for i := 1; i < len(s); {
		c := s[i]
		switch {
		case c == q:
			return b.String(), i + 1, nil
		case c == '\n' && q != '`':
			return "", 0, fmt.Errorf("string not closed on its line")
		case q == '`' && c == '$' && i+1 < len(s) && s[i+1] == '{':
			return "", 0, fmt.Errorf("template literal with a substitution")
		case c != '\\':
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(s) {
			break
		}
		e := s[i+1]
		i += 2
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case '0':
			b.WriteByte(0)
		case '\n':
			// A line continuation.
		case 'x', 'u':
			hex := ""
			switch {
			case e == 'x' && i+2 <= len(s):
				hex, i = s[i:i+2], i+2
			case e == 'u' && i < len(s) && s[i] == '{':
				end := strings.IndexByte(s[i:], '}')
				if end < 0 {
					return "", 0, fmt.Errorf("\\u{ not closed")
				}
				hex, i = s[i+1:i+end], i+end+1
			case e == 'u' && i+4 <= len(s):
				hex, i = s[i:i+4], i+4
			}
			r, err := strconv.ParseUint(hex, 16, 32)
			if err != nil || hex == "" {
				return "", 0, fmt.Errorf("bad \\%c escape %q", e, hex)
			}
			// A surrogate pair, written as two \u escapes.
			if r >= 0xd800 && r < 0xdc00 && strings.HasPrefix(s[i:], `\u`) && i+6 <= len(s) {
				if lo, err := strconv.ParseUint(s[i+2:i+6], 16, 32); err == nil && lo >= 0xdc00 && lo < 0xe000 {
					r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
					i += 6
				}
			}
			b.WriteRune(rune(r))
		default:
			b.WriteByte(e)
		}
	}
	return "", 0, fmt.Errorf("string not closed")
}

// extractAIDefenceReadme reads the examples of @claude-flow/aidefence's
// README: under "## Threat Types", each code block that starts with
// "// Detected patterns:" lists quoted examples of one kind of attack,
// one a line. Each becomes a malicious tool result.
func extractAIDefenceReadme(data []byte) ([]extCase, error) {
	var out []extCase
	inSection, inBlock, listing := false, false, false
	heading := ""
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "## "):
			inSection = t == "## Threat Types"
		case !inSection:
		case strings.HasPrefix(t, "### "):
			heading = strings.TrimPrefix(t, "### ")
		case strings.HasPrefix(t, "```") && !inBlock:
			inBlock, listing = true, false
		case t == "```" && inBlock:
			inBlock = false
		case inBlock && t == "// Detected patterns:":
			listing = true
		case inBlock && listing && strings.HasPrefix(t, `"`):
			v, err := strconv.Unquote(t)
			if err != nil {
				return nil, fmt.Errorf("line %d: not a string literal: %v", i+1, err)
			}
			out = append(out, extCase{text: strings.TrimSuffix(v, "..."), label: Malicious, category: InjectedInstructions,
				shape: shapeResult, where: fmt.Sprintf("line %d (%s)", i+1, heading)})
		}
	}
	return out, nil
}

// extractPromptfooDebugAccess reads the examples of promptfoo's
// debug-access plugin (src/redteam/plugins/debugAccess.ts): requests to
// enter a debug or admin mode and use it, as malicious tool results.
func extractPromptfooDebugAccess(data []byte) ([]extCase, error) {
	return promptfooExamples(data, "debugAccess", InjectedInstructions, shapeResult)
}
