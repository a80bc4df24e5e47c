package secproc

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// normPath is a path-like value after decoding and normalisation.
type normPath struct {
	clean   string   // cleaned, "/"-separated; relative paths stay relative
	abs     bool     // clean starts with "/" (after file: URLs and drives)
	home    bool     // the path started with "~"
	drive   bool     // a Windows drive letter ("C:\...")
	unc     bool     // a UNC or remote file: URL (\\host\share, file://host/x)
	dotdot  bool     // the decoded path had a ".." segment
	sep     bool     // the decoded path had a separator
	escapes bool     // a relative path whose clean form leaves its base
	tricks  []string // obfuscations seen: nul, encoded-traversal, double-encoding, overlong-utf8, unicode-lookalike
}

// normalizePath decodes v the ways a file server might and normalises it:
// file: URLs, percent-encoding (repeatedly, to catch %252e), overlong UTF-8
// and %u escapes, Unicode lookalikes of "." "/" "\" "~", NUL bytes, Windows
// separators, drive letters and UNC names, "~", then path.Clean.
func normalizePath(v string) normPath {
	var np normPath
	s := v
	trick := func(t string) {
		for _, x := range np.tricks {
			if x == t {
				return
			}
		}
		np.tricks = append(np.tricks, t)
	}
	if strings.HasPrefix(strings.ToLower(s), "file:") {
		s = s[len("file:"):]
		if strings.HasPrefix(s, "//") {
			host, rest, _ := strings.Cut(s[2:], "/")
			if host != "" && !strings.EqualFold(host, "localhost") {
				np.unc = true
			}
			s = "/" + rest
		}
	}
	// Percent-decoding, up to four rounds: each round that changes the
	// value after the first means the value was encoded more than once.
	for round := 0; round < 4 && strings.Contains(s, "%"); round++ {
		d, introduced := percentDecode(s)
		if d == s {
			break
		}
		if introduced {
			trick("encoded-traversal")
		}
		if round > 0 {
			trick("double-encoding")
		}
		s = d
	}
	if o, ok := fixOverlong(s); ok {
		trick("overlong-utf8")
		s = o
	}
	if l, ok := foldLookalikes(s); ok {
		trick("unicode-lookalike")
		s = l
	}
	if strings.ContainsRune(s, 0) {
		trick("nul")
		s = strings.ReplaceAll(s, "\x00", "")
	}
	if strings.HasPrefix(s, `\\`) || strings.HasPrefix(s, "//") && !strings.HasPrefix(s, "///") {
		np.unc = true
	}
	s = strings.ReplaceAll(s, `\`, "/")
	if len(s) >= 2 && s[1] == ':' && isLetter(s[0]) && (len(s) == 2 || s[2] == '/') {
		np.drive = true
		s = "/" + s[2:]
	}
	if strings.HasPrefix(s, "~") {
		np.home = true
		_, s, _ = strings.Cut(s, "/")
		s = "~/" + s
	}
	// Windows drops the trailing dots and spaces of a name, so "...." and
	// ".. " are ".."; a servlet container drops a ";param" ("..;/"). A
	// filter that strips "../" once leaves "../" of "....//" too.
	if strings.Contains(s, "..") {
		segs := strings.Split(s, "/")
		for i, seg := range segs {
			if seg != ".." && dotSegment(seg) {
				trick("dot-segment")
				segs[i] = ".."
			}
		}
		s = strings.Join(segs, "/")
	}
	np.sep = strings.Contains(s, "/")
	for seg := range strings.SplitSeq(s, "/") {
		if seg == ".." {
			np.dotdot = true
		}
	}
	np.abs = strings.HasPrefix(s, "/")
	if s == "" {
		s = "."
	}
	np.clean = path.Clean(s)
	if !np.abs && !np.home && (np.clean == ".." || strings.HasPrefix(np.clean, "../")) {
		np.escapes = true
	}
	if np.home && (np.clean == "~/.." || strings.HasPrefix(np.clean, "../") || np.clean == "..") {
		np.escapes = true
	}
	return np
}

// dotSegment reports whether a path segment means ".." to some file
// server: two dots followed by more dots or spaces, or by ";" and a
// parameter.
func dotSegment(seg string) bool {
	if !strings.HasPrefix(seg, "..") || len(seg) == 2 {
		return false
	}
	if seg[2] == ';' {
		return true
	}
	return strings.Trim(seg, ". ") == ""
}

// traverses reports whether a decoded value climbs out of a directory.
func traverses(np normPath) bool { return np.dotdot && np.sep }

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// percentDecode decodes %XX and %uXXXX escapes once, leaving malformed ones
// as they are. introduced reports whether decoding produced a ".", "/",
// "\", "~" or NUL, the characters of a traversal.
func percentDecode(s string) (out string, introduced bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+5 < len(s) && (s[i+1] == 'u' || s[i+1] == 'U') && isHex(s[i+2]) && isHex(s[i+3]) && isHex(s[i+4]) && isHex(s[i+5]) {
			r := rune(unhex(s[i+2]))<<12 | rune(unhex(s[i+3]))<<8 | rune(unhex(s[i+4]))<<4 | rune(unhex(s[i+5]))
			if r == '.' || r == '/' || r == '\\' || r == 0 || r == '~' || r > 0x7f {
				introduced = true
			}
			b.WriteRune(r)
			i += 5
			continue
		}
		if i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			d := unhex(s[i+1])<<4 | unhex(s[i+2])
			switch d {
			case '.', '/', '\\', 0, '~':
				introduced = true
			}
			b.WriteByte(d)
			i += 2
			continue
		}
		b.WriteByte(c)
	}
	return b.String(), introduced
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// fixOverlong replaces overlong UTF-8 encodings of ASCII (C0 AE is "."),
// which lenient decoders accept, with the ASCII byte: the two-byte forms
// C0 and C1, the three-, four-, five- and six-byte forms whose extra bits
// are all zero (E0 80 AE, F0 80 80 AE, F8 80 80 80 AE, FC 80 80 80 80 AE),
// and a C0 or C1 whose second byte is not a continuation byte but
// decodes, as IIS's decoder took it (C0 2F, C1 1C), to ".", "/" or "\".
func fixOverlong(s string) (string, bool) {
	if utf8.ValidString(s) {
		return s, false
	}
	var b strings.Builder
	found := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c == 0xC0 || c == 0xC1) && i+1 < len(s) {
			d := (c&0x1)<<6 | s[i+1]&0x3F
			if s[i+1]&0xC0 == 0x80 || d == '.' || d == '/' || d == '\\' {
				b.WriteByte(d)
				i++
				found = true
				continue
			}
		}
		if n := overlongLen(c); n > 0 && i+n <= len(s) && overlongTail(s[i+1:i+n]) {
			b.WriteByte(s[i+n-2]&0x01<<6 | s[i+n-1]&0x3F)
			i += n - 1
			found = true
			continue
		}
		b.WriteByte(c)
	}
	return b.String(), found
}

// overlongLen is the length of the overlong sequence that lead byte c
// starts when its payload bits are zero (E0, F0, F8, FC), or 0.
func overlongLen(c byte) int {
	switch c {
	case 0xE0:
		return 3
	case 0xF0:
		return 4
	case 0xF8:
		return 5
	case 0xFC:
		return 6
	}
	return 0
}

// overlongTail reports whether t, the continuation bytes after an
// overlong lead byte, encode an ASCII byte: all continuation bytes, all
// but the last two with zero payload, and the next-to-last carrying at
// most one bit.
func overlongTail(t string) bool {
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c&0xC0 != 0x80 || i < len(t)-2 && c != 0x80 || i == len(t)-2 && c&0x3E != 0 {
			return false
		}
	}
	return true
}

// lookalikes maps characters that some file systems, Unicode normalisers
// or best-fit code pages turn into path syntax.
var lookalikes = map[rune]string{
	'\uFF0E': ".", '\u2024': ".", '\uFE52': ".", '\u2025': "..", '\u3002': ".",
	'\uFF0F': "/", '\u2215': "/", '\u2044': "/", '\u29F8': "/",
	'\uFF3C': `\`, '\u2216': `\`, '\uFE68': `\`, '\u29F5': `\`, '\uFF5E': "~",
}

// foldLookalikes replaces lookalikes; it reports a trick only when one of
// them is a separator or the result gains a ".." that was not there.
func foldLookalikes(s string) (string, bool) {
	if !strings.ContainsFunc(s, func(r rune) bool { _, ok := lookalikes[r]; return ok }) {
		return s, false
	}
	var b strings.Builder
	sep := false
	for _, r := range s {
		if l, ok := lookalikes[r]; ok {
			b.WriteString(l)
			sep = sep || l == "/" || l == `\` || l == "~"
			continue
		}
		b.WriteRune(r)
	}
	out := b.String()
	return out, sep || strings.Contains(out, "..") && !strings.Contains(s, "..")
}

// root is an allowed root: its cleaned form and, when it is a real local
// directory, its symlink-resolved form.
type root struct {
	clean string
	real  string
}

func newRoots(dirs []string, resolve bool) []root {
	out := make([]root, 0, len(dirs))
	for _, d := range dirs {
		r := root{clean: path.Clean(d)}
		if !resolve {
			out = append(out, r)
			continue
		}
		if fi, err := os.Stat(filepath.FromSlash(r.clean)); err == nil && fi.IsDir() {
			if real, err := filepath.EvalSymlinks(filepath.FromSlash(r.clean)); err == nil {
				r.real = filepath.ToSlash(real)
			}
		}
		out = append(out, r)
	}
	return out
}

func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// resolveExisting resolves the symlinks of p's longest existing prefix and
// appends the rest, so that a path through a symlink that leaves its root is
// seen where it really leads, even if its last element does not exist yet.
func resolveExisting(p string) (string, bool) {
	cur := filepath.FromSlash(p)
	var rest []string
	for {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			for i := len(rest) - 1; i >= 0; i-- {
				real = filepath.Join(real, rest[i])
			}
			return filepath.ToSlash(real), true
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return "", false
		}
		rest = append(rest, filepath.Base(cur))
		cur = parent
	}
}

// pathKeys are member names that hold paths.
var pathKeys = map[string]bool{
	"path": true, "file": true, "filename": true, "filepath": true, "file_path": true, "dir": true,
	"directory": true, "folder": true, "uri": true, "src": true, "dst": true, "dest": true,
	"destination": true, "source": true, "target": true, "location": true, "cwd": true,
	"workdir": true, "working_dir": true, "root": true, "from": true, "to": true, "output": true,
	"input": true, "paths": true, "files": true, "mount": true, "archive": true,
}

func isPathKey(k string) bool {
	if pathKeys[k] {
		return true
	}
	if strings.Contains(k, "profile") {
		return false
	}
	return strings.Contains(k, "path") || strings.Contains(k, "file") || strings.HasSuffix(k, "dir") ||
		strings.Contains(k, "folder")
}

// pathCandidate reports whether s should be checked as a path: by its
// member name, or by its shape (a whole value that looks like a path).
func pathCandidate(s str) bool {
	v := s.value
	if v == "" || len(v) > 4096 || strings.ContainsAny(v, "\n\r") {
		return false
	}
	if scheme, _, ok := strings.Cut(v, "://"); ok && !strings.EqualFold(scheme, "file") && isScheme(scheme) {
		return false
	}
	if strings.Contains(v, "@") && !strings.ContainsAny(v, `/\`) {
		return false // an e-mail address
	}
	if isPathKey(s.key) {
		return true
	}
	if freeText(s.key) || strings.ContainsAny(v, " \t") {
		return false
	}
	low := strings.ToLower(v)
	// A value that traverses once decoded is a path, however it is spelt
	// (..%2f, ..%c0%af, ..%u2215, ....//, %e0%80%ae), and so is one that
	// needed decoding to become an absolute path (%2fetc%2fpasswd,
	// %5cwindows): a legitimate client does not encode a path's "/".
	if strings.Contains(v, "..") || strings.Contains(v, "%") || !isASCII(v) {
		if np := normalizePath(v); traverses(np) || len(np.tricks) > 0 && (np.abs || np.drive || np.unc) {
			return true
		}
	}
	// A Windows path from the root of the current drive: \windows\win.ini.
	if len(v) > 2 && v[0] == '\\' && isLetter(v[1]) && strings.Count(v, `\`) >= 2 && !strings.ContainsAny(v, "+*?[](){}|^$") {
		return true
	}
	return strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~/") || strings.HasPrefix(low, "file:") ||
		strings.HasPrefix(v, `\\`) || strings.HasPrefix(v, "../") || strings.HasPrefix(v, `..\`) ||
		len(v) > 2 && v[1] == ':' && isLetter(v[0]) && (v[2] == '\\' || v[2] == '/') ||
		strings.Contains(v, "/../") || strings.Contains(low, "%2e%2e") || strings.Contains(low, "%252e")
}

func isScheme(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isLetter(c) || i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

// fileAccess checks path-like arguments of tool calls and the URI of
// resource reads.
func (p *Processor) fileAccess(in *input, fs *findings) {
	if in.ev.Kind != KindToolCall && in.ev.Kind != KindResource {
		return
	}
	for _, s := range in.args {
		if !pathCandidate(s) {
			continue
		}
		np := normalizePath(s.value)
		if in.ev.Kind == KindResource || p.on(Exfiltration) {
			if matchSensitive(np.clean, p.cfg.sensitive()) {
				p.sessions.taint(in.ev, "read of sensitive path "+np.clean, "")
			}
		}
		if !p.on(FileAccess) {
			continue
		}
		if rule, msg, sev := p.judgePath(np); rule != "" {
			fs.add(Finding{Category: FileAccess, Rule: "file_access/" + rule, Severity: sev, Message: msg,
				Evidence: excerpt(s.value, -1, 0), Path: s.path, Confidence: 0.9})
		}
	}
}

// judgePath returns the rule a normalised path breaks, or "".
func (p *Processor) judgePath(np normPath) (rule, msg string, sev Severity) {
	if len(np.tricks) > 0 {
		return np.tricks[0], "path obfuscated by " + strings.Join(np.tricks, ", "), High
	}
	if np.unc {
		return "unc", "path names a remote share", High
	}
	if np.escapes {
		return "traversal", "relative path leaves its base directory", High
	}
	if len(p.roots) == 0 {
		return "", "", 0
	}
	outside := func() (string, string, Severity) {
		if np.dotdot {
			return "traversal", "path traverses out of the allowed roots: " + np.clean, High
		}
		return "outside-roots", "path outside the allowed roots: " + np.clean, High
	}
	switch {
	case np.drive:
		return "windows-drive", "Windows drive path outside the allowed roots", High
	case np.home:
		for _, r := range p.roots {
			if within(np.clean, r.clean) {
				return "", "", 0
			}
		}
		return "home", "path under the home directory, outside the allowed roots", High
	case np.abs:
		for _, r := range p.roots {
			if !within(np.clean, r.clean) {
				continue
			}
			if r.real != "" {
				if real, ok := resolveExisting(np.clean); ok && !within(real, r.real) {
					return "symlink", "path leads through a symlink to " + real, High
				}
			}
			return "", "", 0
		}
		return outside()
	default:
		for _, r := range p.roots {
			if r.real == "" {
				continue
			}
			if real, ok := resolveExisting(path.Join(r.clean, np.clean)); ok && !within(real, r.real) {
				return "symlink", "path leads through a symlink to " + real, High
			}
			break
		}
	}
	return "", "", 0
}

// matchSensitive reports whether a cleaned path matches one of patterns,
// against any of its element suffixes.
func matchSensitive(clean string, patterns []string) bool {
	if clean == "" || clean == "." {
		return false
	}
	elems := strings.Split(strings.TrimPrefix(clean, "/"), "/")
	for k := 1; k <= len(elems) && k <= 3; k++ {
		suffix := strings.Join(elems[len(elems)-k:], "/")
		for _, pat := range patterns {
			if ok, _ := path.Match(pat, suffix); ok {
				return true
			}
		}
	}
	return false
}
