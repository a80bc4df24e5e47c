package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// decoder walks a YAML node tree into a Config, collecting every problem.
// Only nodes the schema knows are visited: a problem under an unknown field
// is reported once, as the unknown field.
type decoder struct {
	file  string
	pos   map[string]position
	text  map[string][]position // see Config.text
	lines []string              // the file's lines, for exprText
	probs Problems
}

// field is one known key of a YAML mapping and how to decode its value.
type field struct {
	name   string
	decode func(n *yaml.Node, path string)
}

func (d *decoder) errorf(n *yaml.Node, path, format string, args ...any) {
	p := Problem{File: d.file, Path: path, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		p.Line, p.Column = n.Line, n.Column
	}
	d.probs = append(d.probs, p)
}

// decodeFile parses data as exactly one YAML document and decodes it into c.
func (d *decoder) decodeFile(data []byte, c *Config) {
	d.lines = strings.Split(string(data), "\n")
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := decodeNode(dec, &doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.errorf(nil, "", "the file is empty; a configuration needs at least \"version: 1\" and one upstream")
		} else {
			d.yamlError(err)
		}
		return
	}
	var second yaml.Node
	switch err := decodeNode(dec, &second); {
	case errors.Is(err, io.EOF):
	case err != nil:
		d.yamlError(err)
	default:
		d.errorf(&second, "", "a second YAML document starts here; a configuration file holds exactly one")
	}

	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" && root.Value == "" && root.Style == 0 {
		d.errorf(nil, "", "the file is empty; a configuration needs at least \"version: 1\" and one upstream")
		return
	}
	d.config(root, c)
}

// decodeNode reads the next document from dec. The YAML library has panicked
// on malformed input in the past; a panic becomes an error here so that a bad
// file is a problem report, not a crash.
func decodeNode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	return dec.Decode(n)
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// yamlParserProblems are the messages of the YAML library's parser (as
// opposed to its scanner). The library prints their line numbers 0-based and
// its scanner's 1-based; both leave the number out for the first line.
var yamlParserProblems = []string{
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected <stream-start>",
	"did not find expected key",
	"did not find expected node content",
	"found duplicate %TAG directive",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found undefined tag handle",
}

// yamlError records a YAML syntax error, with the line number corrected from
// the library's message when it has one.
func (d *decoder) yamlError(err error) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = err.Error()[len(m[0]):]
	}
	parserProblem := slices.Contains(yamlParserProblems, msg)
	switch {
	case parserProblem:
		line++
	case line == 0 && (strings.HasPrefix(msg, "found ") || strings.HasPrefix(msg, "did not find ") ||
		strings.HasPrefix(msg, "could not find ") || strings.HasSuffix(msg, " in this context")):
		line = 1 // a scanner problem on the first line
	}
	d.probs = append(d.probs, Problem{File: d.file, Line: line, Message: "invalid YAML: " + msg})
}

// check reports the YAML features warden does not accept on n (aliases,
// anchors, explicit tags) and records where n is. It returns false when n's
// value must not be read: an alias stands for another node, and an explicit
// tag changes what the text means.
func (d *decoder) check(n *yaml.Node, path string) bool {
	if _, ok := d.pos[path]; !ok {
		d.pos[path] = position{n.Line, n.Column}
	}
	if n.Kind == yaml.AliasNode {
		d.errorf(n, path, "alias \"*%s\" is not allowed: write the value out (anchors, aliases and merge keys are not supported)", n.Value)
		return false
	}
	ok := true
	if n.Anchor != "" {
		d.errorf(n, path, "anchor \"&%s\" is not allowed (anchors, aliases and merge keys are not supported)", n.Anchor)
	}
	if n.Style&yaml.TaggedStyle != 0 {
		d.errorf(n, path, "explicit tag %q is not allowed", n.Tag)
		ok = false
	}
	return ok
}

// describe names what n is, for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
	default:
		return "an unexpected YAML node"
	}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return "the string " + strconv.Quote(n.Value)
	}
	switch n.Tag {
	case "!!null":
		return "null"
	case "!!bool":
		return "the boolean " + n.Value
	case "!!int":
		return "the integer " + n.Value
	case "!!float":
		return "the number " + n.Value
	}
	return "the string " + strconv.Quote(n.Value)
}

// plain reports whether n is an unquoted scalar.
func plain(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0
}

// isNull reports whether n is a YAML null: "~", "null", or nothing at all.
func isNull(n *yaml.Node) bool { return plain(n) && n.Tag == "!!null" }

// mapping decodes a YAML mapping whose keys are the given fields.
func (d *decoder) mapping(n *yaml.Node, path string, fields []field) {
	if !d.check(n, path) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "expected a mapping, got %s", describe(n))
		return
	}
	d.pairs(n, path, func(k string, kn, v *yaml.Node) {
		for _, f := range fields {
			if f.name == k {
				p := join(path, k)
				if (v.Kind == yaml.MappingNode || v.Kind == yaml.SequenceNode) && v.Style&yaml.FlowStyle == 0 {
					// A block collection starts on the line after its key;
					// a problem with the field as a whole belongs on the key.
					d.pos[p] = position{kn.Line, kn.Column}
				}
				f.decode(v, p)
				return
			}
		}
		d.errorf(kn, path, "unknown field %q%s", k, suggest(k, fields))
	})
}

// pairs calls fn for each key and value of mapping n, in file order, after
// rejecting non-string keys, merge keys and duplicate keys.
func (d *decoder) pairs(n *yaml.Node, path string, fn func(k string, kn, v *yaml.Node)) {
	seen := make(map[string]*yaml.Node)
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, v := n.Content[i], n.Content[i+1]
		if kn.Kind == yaml.ScalarNode && plain(kn) && kn.Tag == "!!merge" {
			d.errorf(kn, path, "merge key \"<<\" is not allowed: write the fields out (anchors, aliases and merge keys are not supported)")
			continue
		}
		if !d.check(kn, path) {
			continue
		}
		if kn.Kind != yaml.ScalarNode {
			d.errorf(kn, path, "expected a string key, got %s", describe(kn))
			continue
		}
		k := kn.Value
		if first, dup := seen[k]; dup {
			d.errorf(kn, key(path, k), "duplicate key %q (first defined at line %d, column %d)", k, first.Line, first.Column)
			continue
		}
		seen[k] = kn
		fn(k, kn, v)
	}
}

// suggest returns a " (did you mean ...?)" hint for an unknown field, or "".
func suggest(unknown string, fields []field) string {
	switch unknown {
	case "args":
		return " (put the program and its arguments in one list: command: [\"program\", \"arg\"])"
	case "cwd":
		return " (did you mean \"dir\"?)"
	}
	if len(unknown) > 64 {
		return "" // not a typo, and edit distance is quadratic
	}
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s))
	}
	best, bestDist := "", 3
	for _, f := range fields {
		if norm(f.name) == norm(unknown) || len(f.name) >= 3 && strings.HasPrefix(unknown, f.name) {
			return fmt.Sprintf(" (did you mean %q?)", f.name)
		}
		if dist := levenshtein(unknown, f.name); dist < bestDist {
			best, bestDist = f.name, dist
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// levenshtein returns the edit distance between a and b, counting bytes.
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// str decodes a string. Any non-null scalar is accepted, unquoted ones with
// their text exactly as written.
func (d *decoder) str(n *yaml.Node, path string, dst *string) {
	if !d.check(n, path) {
		return
	}
	if n.Kind != yaml.ScalarNode || isNull(n) {
		d.errorf(n, path, "expected a string, got %s", describe(n))
		return
	}
	*dst = n.Value
}

// expr decodes a string holding a CEL expression, and records where its
// lines are in the file when they are its text verbatim.
func (d *decoder) expr(n *yaml.Node, path string, dst *string) {
	d.str(n, path, dst)
	if n.Kind == yaml.ScalarNode && *dst == n.Value {
		if at := d.exprText(n); at != nil {
			d.text[path] = at
		}
	}
}

// exprText returns where each line of scalar n's value starts in the file
// (1-based line and column, in characters as YAML counts them), or nil
// when a line of the value is not the file's text verbatim: a folded or
// multi-line flow scalar, an escape, a doubled quote.
func (d *decoder) exprText(n *yaml.Node) []position {
	lineAt := func(l int) ([]rune, bool) {
		if l < 1 || l > len(d.lines) {
			return nil, false
		}
		return []rune(strings.TrimSuffix(d.lines[l-1], "\r")), true
	}
	switch {
	case n.Style&yaml.LiteralStyle != 0:
		// The value's lines are the lines after the indicator, less
		// their indentation.
		vals := strings.Split(strings.TrimRight(n.Value, "\n"), "\n")
		out := make([]position, len(vals))
		for i, v := range vals {
			src, ok := lineAt(n.Line + 1 + i)
			want := []rune(v)
			indent := len(src) - len(want)
			if !ok || indent < 0 || string(src[indent:]) != v || strings.Trim(string(src[:indent]), " ") != "" {
				return nil
			}
			out[i] = position{n.Line + 1 + i, indent + 1}
		}
		return out
	case n.Style&(yaml.FoldedStyle|yaml.TaggedStyle) != 0 || strings.Contains(n.Value, "\n"):
		return nil
	}
	quote := 0
	switch {
	case n.Style&yaml.SingleQuotedStyle != 0:
		if strings.Contains(n.Value, "'") {
			return nil // written ''
		}
		quote = 1
	case n.Style&yaml.DoubleQuotedStyle != 0:
		if strings.ContainsAny(n.Value, "\"\\") {
			return nil // escaped
		}
		quote = 1
	}
	src, ok := lineAt(n.Line)
	start := n.Column - 1 + quote
	if !ok || start < 0 || start > len(src) {
		return nil
	}
	rest, want := src[start:], []rune(n.Value)
	if len(rest) < len(want)+quote || string(rest[:len(want)]) != n.Value ||
		quote == 1 && rest[len(want)] != src[start-1] {
		return nil
	}
	return []position{{n.Line, start + 1}}
}

var decimal = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// int decodes a base-10 integer written without quotes, leading zeros, signs
// other than '-', underscores or exponents.
func (d *decoder) int(n *yaml.Node, path string, dst *int) {
	if !d.check(n, path) {
		return
	}
	if !plain(n) || isNull(n) {
		d.errorf(n, path, "expected an integer, got %s", describe(n))
		return
	}
	if !decimal.MatchString(n.Value) {
		hint := ""
		if strings.HasPrefix(strings.TrimPrefix(n.Value, "-"), "0") && decimal.MatchString(strings.TrimLeft(strings.TrimPrefix(n.Value, "-"), "0")) {
			hint = " (leading zeros are not allowed: they mean octal in some YAML readers)"
		}
		d.errorf(n, path, "expected a base-10 integer, got %q%s", n.Value, hint)
		return
	}
	i, err := strconv.Atoi(n.Value)
	if err != nil {
		d.errorf(n, path, "integer %s is out of range", n.Value)
		return
	}
	*dst = i
}

// bool decodes exactly true or false, unquoted.
func (d *decoder) bool(n *yaml.Node, path string, dst *bool) {
	if !d.check(n, path) {
		return
	}
	if plain(n) && (n.Value == "true" || n.Value == "false") {
		*dst = n.Value == "true"
		return
	}
	d.errorf(n, path, "expected true or false, got %s", describe(n))
}

// duration decodes a Go duration string such as "30s" or "1h30m".
func (d *decoder) duration(n *yaml.Node, path string, dst *time.Duration) {
	if !d.check(n, path) {
		return
	}
	if n.Kind != yaml.ScalarNode || isNull(n) {
		d.errorf(n, path, "expected a duration such as \"30s\" or \"5m\", got %s", describe(n))
		return
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		hint := ""
		if decimal.MatchString(n.Value) && n.Value != "0" {
			hint = " (a unit is required)"
		}
		d.errorf(n, path, "expected a duration such as \"30s\", \"5m\" or \"1h30m\", got %q%s", n.Value, hint)
		return
	}
	*dst = v
}

// strings decodes a list of strings. An empty list gives a non-nil slice, so
// that "pass_env: []" can be told from leaving pass_env out.
func (d *decoder) strings(n *yaml.Node, path string, dst *[]string) {
	if !d.check(n, path) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		hint := ""
		if n.Kind == yaml.ScalarNode && !isNull(n) {
			quoted := make([]string, 0)
			for _, w := range strings.Fields(n.Value) {
				quoted = append(quoted, strconv.Quote(w))
			}
			hint = " (write a YAML list, such as [" + strings.Join(quoted, ", ") + "])"
		}
		d.errorf(n, path, "expected a list of strings, got %s%s", describe(n), hint)
		return
	}
	out := make([]string, len(n.Content))
	for i, item := range n.Content {
		d.str(item, index(path, i), &out[i])
	}
	*dst = out
}

// stringMap decodes a mapping of strings to strings. An empty mapping gives
// a non-nil map.
func (d *decoder) stringMap(n *yaml.Node, path string, dst *map[string]string) {
	if !d.check(n, path) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "expected a mapping of names to strings, got %s", describe(n))
		return
	}
	out := make(map[string]string, len(n.Content)/2)
	d.pairs(n, path, func(k string, _, v *yaml.Node) {
		var s string
		d.str(v, key(path, k), &s)
		out[k] = s
	})
	*dst = out
}

// patterns decodes a list of patterns, keeping invalid ones for Validate.
func (d *decoder) patterns(n *yaml.Node, path string, dst *[]Pattern) {
	var raw []string
	d.strings(n, path, &raw)
	if raw == nil {
		return
	}
	out := make([]Pattern, len(raw))
	for i, s := range raw {
		out[i] = lenientPattern(s)
	}
	*dst = out
}

func (d *decoder) list(n *yaml.Node, path string, l *List) {
	d.mapping(n, path, []field{
		{"allow", func(n *yaml.Node, p string) { d.patterns(n, p, &l.Allow) }},
		{"deny", func(n *yaml.Node, p string) { d.patterns(n, p, &l.Deny) }},
	})
}

func (d *decoder) config(n *yaml.Node, c *Config) {
	if n.Kind != yaml.MappingNode && n.Kind != yaml.AliasNode {
		d.check(n, "")
		d.errorf(n, "", "expected a mapping at the top level, got %s", describe(n))
		return
	}
	d.mapping(n, "", []field{
		{"version", func(n *yaml.Node, p string) { d.int(n, p, &c.Version) }},
		{"log", func(n *yaml.Node, p string) { d.log(n, p, &c.Log) }},
		{"gateway", func(n *yaml.Node, p string) { d.gateway(n, p, &c.Gateway) }},
		{"telemetry", func(n *yaml.Node, p string) { d.telemetry(n, p, &c.Telemetry) }},
	})
}

func (d *decoder) log(n *yaml.Node, path string, l *LogConfig) {
	d.mapping(n, path, []field{
		{"level", func(n *yaml.Node, p string) { d.str(n, p, &l.Level) }},
		{"format", func(n *yaml.Node, p string) { d.str(n, p, &l.Format) }},
	})
}

func (d *decoder) gateway(n *yaml.Node, path string, g *GatewayConfig) {
	d.mapping(n, path, []field{
		{"listen", func(n *yaml.Node, p string) { d.listen(n, p, &g.Listen) }},
		{"limits", func(n *yaml.Node, p string) { d.limits(n, p, &g.Limits) }},
		{"methods", func(n *yaml.Node, p string) { d.list(n, p, &g.Methods) }},
		{"default_upstream", func(n *yaml.Node, p string) { d.str(n, p, &g.DefaultUpstream) }},
		{"upstreams", func(n *yaml.Node, p string) { d.upstreams(n, p, &g.Upstreams) }},
		{"zero_trust", func(n *yaml.Node, p string) { d.zeroTrust(n, p, &g.ZeroTrust) }},
		{"admin", func(n *yaml.Node, p string) { d.admin(n, p, &g.Admin) }},
		{"security", func(n *yaml.Node, p string) { d.security(n, p, &g.Security) }},
		{"taint", func(n *yaml.Node, p string) {
			enabled := true
			d.mapping(n, p, []field{
				{"enabled", func(n *yaml.Node, p string) { d.bool(n, p, &enabled) }},
				{"action", func(n *yaml.Node, p string) { d.str(n, p, &g.Taint.Action) }},
				{"min_match", func(n *yaml.Node, p string) { d.int(n, p, &g.Taint.MinMatch) }},
				{"sink_tools", func(n *yaml.Node, p string) { d.patterns(n, p, &g.Taint.SinkTools) }},
				{"ttl", func(n *yaml.Node, p string) { d.duration(n, p, &g.Taint.TTL) }},
			})
			g.Taint.Disabled = !enabled
		}},
		{"agui", func(n *yaml.Node, p string) {
			d.each(n, p, "AG-UI agents ({name, url, ...})", func(item *yaml.Node, ip string) {
				var a AGUIUpstream
				d.mapping(item, ip, []field{
					{"name", func(n *yaml.Node, p string) { d.str(n, p, &a.Name) }},
					{"url", func(n *yaml.Node, p string) { d.str(n, p, &a.URL) }},
					{"headers", func(n *yaml.Node, p string) { d.stringMap(n, p, &a.Headers) }},
					{"actions", func(n *yaml.Node, p string) { d.stringMap(n, p, &a.Actions) }},
					{"max_held_bytes", func(n *yaml.Node, p string) { d.int(n, p, &a.MaxHeldBytes) }},
				})
				g.AGUI = append(g.AGUI, a)
			})
		}},
		{"a2a", func(n *yaml.Node, p string) {
			d.each(n, p, "A2A agents ({name, url, ...})", func(item *yaml.Node, ip string) {
				var a A2AUpstream
				d.mapping(item, ip, []field{
					{"name", func(n *yaml.Node, p string) { d.str(n, p, &a.Name) }},
					{"url", func(n *yaml.Node, p string) { d.str(n, p, &a.URL) }},
					{"card_url", func(n *yaml.Node, p string) { d.str(n, p, &a.CardURL) }},
					{"methods", func(n *yaml.Node, p string) { d.list(n, p, &a.Methods) }},
					{"allow_extended_card", func(n *yaml.Node, p string) { d.bool(n, p, &a.AllowExtendedCard) }},
					{"card_keys", func(n *yaml.Node, p string) { d.strings(n, p, &a.CardKeys) }},
					{"require_signed_card", func(n *yaml.Node, p string) { d.bool(n, p, &a.RequireSignedCard) }},
					{"require_approval", func(n *yaml.Node, p string) { d.patterns(n, p, &a.RequireApproval) }},
					{"delegation", func(n *yaml.Node, p string) {
						d.mapping(n, p, []field{
							{"require", func(n *yaml.Node, p string) { d.bool(n, p, &a.Delegation.Require) }},
							{"agent", func(n *yaml.Node, p string) { d.str(n, p, &a.Delegation.Agent) }},
							{"max_hops", func(n *yaml.Node, p string) { d.int(n, p, &a.Delegation.MaxHops) }},
							{"keys", func(n *yaml.Node, p string) { d.stringMap(n, p, &a.Delegation.Keys) }},
							{"roots", func(n *yaml.Node, p string) {
								a.Delegation.Roots = map[string][]string{}
								d.pairs(n, p, func(k string, _, v *yaml.Node) {
									var scopes []string
									d.strings(v, p+"."+k, &scopes)
									a.Delegation.Roots[k] = scopes
								})
							}},
						})
					}},
				})
				g.A2A = append(g.A2A, a)
			})
		}},
		{"pinning", func(n *yaml.Node, p string) {
			g.Pinning.Enabled = true // a present section turns it on unless it says enabled: false
			d.mapping(n, p, []field{
				{"enabled", func(n *yaml.Node, p string) { d.bool(n, p, &g.Pinning.Enabled) }},
				{"first_use", func(n *yaml.Node, p string) { d.str(n, p, &g.Pinning.FirstUse) }},
				{"store", func(n *yaml.Node, p string) { d.str(n, p, &g.Pinning.Store) }},
				{"store_path", func(n *yaml.Node, p string) { d.str(n, p, &g.Pinning.StorePath) }},
				{"manifests", func(n *yaml.Node, p string) {
					d.each(n, p, "manifests ({file, keys})", func(item *yaml.Node, ip string) {
						var m ManifestConfig
						d.mapping(item, ip, []field{
							{"file", func(n *yaml.Node, p string) { d.str(n, p, &m.File) }},
							{"keys", func(n *yaml.Node, p string) { d.strings(n, p, &m.Keys) }},
						})
						g.Pinning.Manifests = append(g.Pinning.Manifests, m)
					})
				}},
			})
		}},
		{"auth", func(n *yaml.Node, p string) {
			d.mapping(n, p, []field{
				{"issuer", func(n *yaml.Node, p string) { d.str(n, p, &g.Auth.Issuer) }},
				{"audience", func(n *yaml.Node, p string) { d.str(n, p, &g.Auth.Audience) }},
				{"jwks_url", func(n *yaml.Node, p string) { d.str(n, p, &g.Auth.JWKSURL) }},
				{"jwks_file", func(n *yaml.Node, p string) { d.str(n, p, &g.Auth.JWKSFile) }},
				{"subject_claim", func(n *yaml.Node, p string) { d.str(n, p, &g.Auth.SubjectClaim) }},
				{"api_keys", func(n *yaml.Node, p string) { d.stringMap(n, p, &g.Auth.APIKeys) }},
			})
		}},
		{"audit", func(n *yaml.Node, p string) {
			g.Audit.Enabled = true // a present audit section turns it on unless it says enabled: false
			d.mapping(n, p, []field{
				{"enabled", func(n *yaml.Node, p string) { d.bool(n, p, &g.Audit.Enabled) }},
				{"backend", func(n *yaml.Node, p string) { d.str(n, p, &g.Audit.Backend) }},
				{"path", func(n *yaml.Node, p string) { d.str(n, p, &g.Audit.Path) }},
				{"signing_key", func(n *yaml.Node, p string) { d.str(n, p, &g.Audit.SigningKey) }},
				{"checkpoint_every", func(n *yaml.Node, p string) { d.int(n, p, &g.Audit.CheckpointEvery) }},
				{"checkpoint_interval", func(n *yaml.Node, p string) { d.duration(n, p, &g.Audit.CheckpointInterval) }},
				{"witness", func(n *yaml.Node, p string) { d.str(n, p, &g.Audit.Witness) }},
				{"witness_url", func(n *yaml.Node, p string) { d.str(n, p, &g.Audit.WitnessURL) }},
			})
		}},
	})
}

func (d *decoder) admin(n *yaml.Node, path string, a *AdminConfig) {
	d.mapping(n, path, []field{
		{"addr", func(n *yaml.Node, p string) { d.str(n, p, &a.Addr) }},
		{"confirm_levels", func(n *yaml.Node, p string) {
			levels := []int{} // an empty list is kept: it turns the gesture off
			d.each(n, p, "classification levels", func(item *yaml.Node, p string) {
				var l int
				d.int(item, p, &l)
				levels = append(levels, l)
			})
			a.ConfirmLevels = levels
		}},
		{"approvers", func(n *yaml.Node, p string) {
			if !d.check(n, p) {
				return
			}
			if n.Kind != yaml.MappingNode {
				d.errorf(n, p, "expected a mapping of classification levels to numbers of approvers, such as {1: 2}, got %s", describe(n))
				return
			}
			a.Approvers = map[int]int{}
			d.pairs(n, p, func(k string, kn, v *yaml.Node) {
				level, err := strconv.Atoi(k)
				if err != nil || level < 1 || level > 5 {
					d.errorf(kn, key(p, k), "%q is not a classification level (1..5)", k)
					return
				}
				var count int
				d.int(v, key(p, k), &count)
				a.Approvers[level] = count
			})
		}},
		{"webhook", func(n *yaml.Node, p string) {
			d.mapping(n, p, []field{
				{"url", func(n *yaml.Node, p string) { d.str(n, p, &a.Webhook.URL) }},
				{"slack", func(n *yaml.Node, p string) { d.bool(n, p, &a.Webhook.Slack) }},
				{"console_url", func(n *yaml.Node, p string) { d.str(n, p, &a.Webhook.ConsoleURL) }},
			})
		}},
		{"oidc", func(n *yaml.Node, p string) {
			d.mapping(n, p, []field{
				{"client_id", func(n *yaml.Node, p string) { d.str(n, p, &a.OIDC.ClientID) }},
				{"client_secret_file", func(n *yaml.Node, p string) { d.str(n, p, &a.OIDC.ClientSecretFile) }},
				{"redirect_url", func(n *yaml.Node, p string) { d.str(n, p, &a.OIDC.RedirectURL) }},
			})
		}},
	})
}

func (d *decoder) security(n *yaml.Node, path string, s *SecurityConfig) {
	s.Enabled = true // a present section turns it on unless it says enabled: false
	s.Actions = map[string]string{}
	action := func(cat string) field {
		return field{cat, func(n *yaml.Node, p string) {
			var a string
			d.str(n, p, &a)
			s.Actions[cat] = a
		}}
	}
	d.mapping(n, path, []field{
		{"enabled", func(n *yaml.Node, p string) { d.bool(n, p, &s.Enabled) }},
		action("file_access"), action("command_injection"), action("exfiltration"),
		action("privilege_escalation"), action("prompt_injection"),
		{"allowed_roots", func(n *yaml.Node, p string) { d.strings(n, p, &s.AllowedRoots) }},
		{"allowed_hosts", func(n *yaml.Node, p string) { d.strings(n, p, &s.AllowedHosts) }},
		{"sensitive_paths", func(n *yaml.Node, p string) { d.strings(n, p, &s.SensitivePaths) }},
		{"grants", func(n *yaml.Node, p string) {
			d.each(n, p, "grants ({subject, upstream, tools, scopes})", func(item *yaml.Node, ip string) {
				var g SecurityGrant
				d.mapping(item, ip, []field{
					{"subject", func(n *yaml.Node, p string) { d.str(n, p, &g.Subject) }},
					{"upstream", func(n *yaml.Node, p string) { d.str(n, p, &g.Upstream) }},
					{"tools", func(n *yaml.Node, p string) { d.strings(n, p, &g.Tools) }},
					{"scopes", func(n *yaml.Node, p string) { d.strings(n, p, &g.Scopes) }},
				})
				s.Grants = append(s.Grants, g)
			})
		}},
		{"rules", func(n *yaml.Node, p string) {
			d.each(n, p, "rules ({name, category, pattern or when, severity, action})", func(item *yaml.Node, ip string) {
				var r SecurityRule
				d.mapping(item, ip, []field{
					{"name", func(n *yaml.Node, p string) { d.str(n, p, &r.Name) }},
					{"category", func(n *yaml.Node, p string) { d.str(n, p, &r.Category) }},
					{"pattern", func(n *yaml.Node, p string) { d.str(n, p, &r.Pattern) }},
					{"when", func(n *yaml.Node, p string) { d.expr(n, p, &r.When) }},
					{"severity", func(n *yaml.Node, p string) { d.str(n, p, &r.Severity) }},
					{"action", func(n *yaml.Node, p string) { d.str(n, p, &r.Action) }},
				})
				s.Rules = append(s.Rules, r)
			})
		}},
	})
}

// each calls fn for every item of the sequence n.
func (d *decoder) each(n *yaml.Node, path, what string, fn func(item *yaml.Node, path string)) {
	if !d.check(n, path) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, path, "expected a list of %s, got %s", what, describe(n))
		return
	}
	for i, item := range n.Content {
		fn(item, index(path, i))
	}
}

func (d *decoder) telemetry(n *yaml.Node, path string, t *TelemetryConfig) {
	exporter := func(e *ExporterConfig) func(*yaml.Node, string) {
		return func(n *yaml.Node, p string) {
			d.mapping(n, p, []field{
				{"exporter", func(n *yaml.Node, p string) { d.str(n, p, &e.Exporter) }},
				{"path", func(n *yaml.Node, p string) { d.str(n, p, &e.Path) }},
				{"endpoint", func(n *yaml.Node, p string) { d.str(n, p, &e.Endpoint) }},
				{"profile", func(n *yaml.Node, p string) { d.str(n, p, &e.Profile) }},
			})
		}
	}
	// With a telemetry section, spans and OCSF events go to JSONL files in
	// the data directory unless the section says otherwise: the embedded
	// default.
	t.Spans.Exporter, t.OCSF.Exporter = "jsonl", "jsonl"
	d.mapping(n, path, []field{
		{"conventions", func(n *yaml.Node, p string) { d.strings(n, p, &t.Conventions) }},
		{"capture", func(n *yaml.Node, p string) { d.str(n, p, &t.Capture) }},
		{"propagate", func(n *yaml.Node, p string) { d.bool(n, p, &t.Propagate) }},
		{"metrics", func(n *yaml.Node, p string) { d.bool(n, p, &t.Metrics) }},
		{"spans", exporter(&t.Spans)},
		{"ocsf", exporter(&t.OCSF)},
	})
}

func (d *decoder) zeroTrust(n *yaml.Node, path string, z *ZeroTrustConfig) {
	d.mapping(n, path, []field{
		{"data_dir", func(n *yaml.Node, p string) { d.str(n, p, &z.DataDir) }},
		{"store", func(n *yaml.Node, p string) { d.str(n, p, &z.Store) }},
		{"store_path", func(n *yaml.Node, p string) { d.str(n, p, &z.StorePath) }},
		{"redis_url", func(n *yaml.Node, p string) { d.str(n, p, &z.RedisURL) }},
		{"subject", func(n *yaml.Node, p string) { d.str(n, p, &z.Subject) }},
		{"skew", func(n *yaml.Node, p string) { d.duration(n, p, &z.Skew) }},
		{"store_timeout", func(n *yaml.Node, p string) { d.duration(n, p, &z.StoreTimeout) }},
		{"audience", func(n *yaml.Node, p string) { d.str(n, p, &z.Audience) }},
		{"issuer", func(n *yaml.Node, p string) { d.str(n, p, &z.Issuer) }},
		{"require_dpop", func(n *yaml.Node, p string) { d.bool(n, p, &z.RequireDPoP) }},
		{"public_url", func(n *yaml.Node, p string) { d.str(n, p, &z.PublicURL) }},
		{"client_keys", func(n *yaml.Node, p string) { d.stringMap(n, p, &z.ClientKeys) }},
		{"hold_for_approval", func(n *yaml.Node, p string) { d.bool(n, p, &z.HoldForApproval) }},
		{"persona", func(n *yaml.Node, p string) { d.str(n, p, &z.Persona) }},
		{"approval_timeout", func(n *yaml.Node, p string) { d.duration(n, p, &z.ApprovalTimeout) }},
		{"approval_channels", func(n *yaml.Node, p string) { d.strings(n, p, &z.ApprovalChannels) }},
		{"classification", func(n *yaml.Node, p string) { d.classRules(n, p, &z.Classification) }},
	})
}

func (d *decoder) listen(n *yaml.Node, path string, l *ListenConfig) {
	d.mapping(n, path, []field{
		{"addr", func(n *yaml.Node, p string) { d.str(n, p, &l.Addr) }},
		{"path", func(n *yaml.Node, p string) { d.str(n, p, &l.Path) }},
		{"allowed_hosts", func(n *yaml.Node, p string) { d.strings(n, p, &l.AllowedHosts) }},
		{"allowed_origins", func(n *yaml.Node, p string) { d.strings(n, p, &l.AllowedOrigins) }},
		{"insecure_disable_host_check", func(n *yaml.Node, p string) { d.bool(n, p, &l.InsecureDisableHostCheck) }},
		{"tls", func(n *yaml.Node, p string) {
			d.mapping(n, p, []field{
				{"cert_file", func(n *yaml.Node, p string) { d.str(n, p, &l.TLS.CertFile) }},
				{"key_file", func(n *yaml.Node, p string) { d.str(n, p, &l.TLS.KeyFile) }},
				{"client_ca_file", func(n *yaml.Node, p string) { d.str(n, p, &l.TLS.ClientCAFile) }},
			})
		}},
	})
}

func (d *decoder) limits(n *yaml.Node, path string, l *LimitsConfig) {
	d.mapping(n, path, []field{
		{"max_message_bytes", func(n *yaml.Node, p string) { d.int(n, p, &l.MaxMessageBytes) }},
		{"max_depth", func(n *yaml.Node, p string) { d.int(n, p, &l.MaxDepth) }},
		{"request_timeout", func(n *yaml.Node, p string) { d.duration(n, p, &l.RequestTimeout) }},
		{"session_idle_timeout", func(n *yaml.Node, p string) { d.duration(n, p, &l.SessionIdleTimeout) }},
		{"drain_timeout", func(n *yaml.Node, p string) { d.duration(n, p, &l.DrainTimeout) }},
		{"max_sessions", func(n *yaml.Node, p string) { d.int(n, p, &l.MaxSessions) }},
		{"max_sessions_per_principal", func(n *yaml.Node, p string) { d.int(n, p, &l.MaxSessionsPerPrincipal) }},
		{"max_children_per_upstream", func(n *yaml.Node, p string) { d.int(n, p, &l.MaxChildrenPerUpstream) }},
		{"header_timeout", func(n *yaml.Node, p string) { d.duration(n, p, &l.HeaderTimeout) }},
		{"body_timeout", func(n *yaml.Node, p string) { d.duration(n, p, &l.BodyTimeout) }},
	})
}

func (d *decoder) upstreams(n *yaml.Node, path string, dst *[]Upstream) {
	if !d.check(n, path) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, path, "expected a list of upstreams, got %s", describe(n))
		return
	}
	out := make([]Upstream, len(n.Content))
	for i, item := range n.Content {
		out[i] = NewUpstream()
		d.upstream(item, index(path, i), &out[i])
	}
	*dst = out
}

func (d *decoder) mandates(n *yaml.Node, path string, dst *[]Mandate) {
	if !d.check(n, path) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, path, "expected a list of mandates, got %s", describe(n))
		return
	}
	out := make([]Mandate, len(n.Content))
	for i, item := range n.Content {
		m := &out[i]
		d.mapping(item, index(path, i), []field{
			{"tool", func(n *yaml.Node, p string) { d.str(n, p, &m.Tool) }},
			{"arguments", func(n *yaml.Node, p string) { d.str(n, p, &m.Arguments) }},
		})
	}
	*dst = out
}

func (d *decoder) classRules(n *yaml.Node, path string, dst *[]ClassRule) {
	if !d.check(n, path) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, path, "expected a list of rules ({level, when, name}), got %s", describe(n))
		return
	}
	out := make([]ClassRule, len(n.Content))
	for i, item := range n.Content {
		r := &out[i]
		d.mapping(item, index(path, i), []field{
			{"name", func(n *yaml.Node, p string) { d.str(n, p, &r.Name) }},
			{"level", func(n *yaml.Node, p string) { d.int(n, p, &r.Level) }},
			{"when", func(n *yaml.Node, p string) { d.str(n, p, &r.When) }},
		})
	}
	*dst = out
}

func (d *decoder) upstream(n *yaml.Node, path string, u *Upstream) {
	d.mapping(n, path, []field{
		{"name", func(n *yaml.Node, p string) { d.str(n, p, &u.Name) }},
		{"command", func(n *yaml.Node, p string) { d.strings(n, p, &u.Command) }},
		{"env", func(n *yaml.Node, p string) { d.stringMap(n, p, &u.Env) }},
		{"pass_env", func(n *yaml.Node, p string) { d.strings(n, p, &u.PassEnv) }},
		{"dir", func(n *yaml.Node, p string) { d.str(n, p, &u.Dir) }},
		{"url", func(n *yaml.Node, p string) { d.str(n, p, &u.URL) }},
		{"headers", func(n *yaml.Node, p string) { d.stringMap(n, p, &u.Headers) }},
		{"shutdown_timeout", func(n *yaml.Node, p string) { d.duration(n, p, &u.ShutdownTimeout) }},
		{"methods", func(n *yaml.Node, p string) { d.list(n, p, &u.Methods) }},
		{"tools", func(n *yaml.Node, p string) { d.list(n, p, &u.Tools) }},
		{"require_token", func(n *yaml.Node, p string) { d.patterns(n, p, &u.RequireToken.Allow) }},
		{"require_signature", func(n *yaml.Node, p string) { d.patterns(n, p, &u.RequireSignature.Allow) }},
		{"mandates", func(n *yaml.Node, p string) { d.mandates(n, p, &u.Mandates) }},
		{"session_credential", func(n *yaml.Node, p string) {
			sc := &SessionCredential{Header: DefaultSessionCredentialHeader, TTL: DefaultSessionCredentialTTL}
			d.mapping(n, p, []field{
				{"header", func(n *yaml.Node, p string) { d.str(n, p, &sc.Header) }},
				{"ttl", func(n *yaml.Node, p string) { d.duration(n, p, &sc.TTL) }},
			})
			u.SessionCredential = sc
		}},
	})
}
