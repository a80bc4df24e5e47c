package telemetry

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"unicode/utf8"
)

// CaptureMode says how tool inputs, outputs, prompt arguments and error
// messages are put into spans and OCSF events.
type CaptureMode string

// The capture modes. The zero value is CaptureRedacted.
const (
	// CaptureRedacted replaces secrets (values of sensitive JSON members
	// such as "password" or "api_key", and values that look like keys,
	// tokens or private keys) with "[REDACTED]", then caps the size. The
	// default.
	CaptureRedacted CaptureMode = "redacted"
	// CaptureCapped caps the size but does not redact. Risk: secrets in
	// tool arguments and outputs reach every exporter.
	CaptureCapped CaptureMode = "capped"
	// CaptureFull records content as it is, whatever its size. Risk: as
	// CaptureCapped, and spans may become too large for a collector.
	CaptureFull CaptureMode = "full"
	// CaptureHash records only "sha256:" and the hex SHA-256 of the content.
	CaptureHash CaptureMode = "hash"
	// CaptureOff records no content at all.
	CaptureOff CaptureMode = "off"
)

// DefaultMaxBytes is the size cap of CaptureRedacted and CaptureCapped.
const DefaultMaxBytes = 4096

// Capture configures content capture. The zero value redacts and caps at
// DefaultMaxBytes.
type Capture struct {
	Mode     CaptureMode
	MaxBytes int // 0 means DefaultMaxBytes
}

// Redacted is what replaces a secret.
const Redacted = "[REDACTED]"

// capture returns the content to record for s, and false when nothing is
// recorded (CaptureOff or empty content).
func (c Capture) capture(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	max := c.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	switch c.Mode {
	case CaptureOff:
		return "", false
	case CaptureFull:
		return s, true
	case CaptureHash:
		sum := sha256.Sum256([]byte(s))
		return "sha256:" + hex.EncodeToString(sum[:]), true
	case CaptureCapped:
		return truncate(s, max), true
	}
	// Redact what the cap will keep, with a margin so that a secret that
	// straddles the cap is matched whole; then cap.
	if len(s) > max+1024 {
		s = truncate(s, max+1024)
	}
	return truncate(Redact(s), max), true
}

// truncate cuts s to at most max bytes on a UTF-8 boundary and says so.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…[truncated " + strconv.Itoa(len(s)-cut) + " bytes]"
}

// secretMember matches a JSON member whose name suggests a secret and whose
// value is a string; the value is replaced.
var secretMember = regexp.MustCompile(`(?i)("[^"\\]*(?:passw(?:or)?d|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|authorization|credential|private[_-]?key|cookie|session[_-]?id|client[_-]?secret)[^"\\]*"\s*:\s*)"(?:[^"\\]|\\.)*"`)

// secretValue matches values that are secrets whatever their context.
var secretValue = regexp.MustCompile(alternatives(
	`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)`,
	`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`,                                                  // AWS access key id
	`\bgh[pousr]_[A-Za-z0-9]{30,}\b`,                                                 // GitHub tokens
	`\bgithub_pat_[A-Za-z0-9_]{30,}\b`,                                               // GitHub fine-grained tokens
	`\bxox[abposr]-[A-Za-z0-9-]{10,}\b`,                                              // Slack tokens
	`\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}\b`,                                       // OpenAI / Anthropic keys
	`\bAIza[0-9A-Za-z_-]{35}\b`,                                                      // Google API keys
	`\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*`,                      // JWTs and JWS
	`(?i)\bbearer\s+[A-Za-z0-9._~+/-]{8,}=*`,                                         // Authorization: Bearer …
	`(?i)\b(?:password|passwd|pwd|secret|token|api[_-]?key)\s*[=:]\s*[^\s"',;&]{4,}`, // key=value in text
	`://[^/\s:@"]+:[^/\s@"]+@`,                                                       // credentials in URLs
))

// alternatives joins regular expressions into one that matches any of them.
func alternatives(res ...string) string {
	s := ""
	for i, re := range res {
		if i > 0 {
			s += "|"
		}
		s += "(?:" + re + ")"
	}
	return s
}

// Redact replaces the secrets it recognises in s with Redacted: the string
// values of JSON members with sensitive names, and values that look like
// private keys, cloud and API keys, bearer tokens, JWTs, key=value secrets
// and credentials in URLs. It is a safety net for telemetry, not a
// guarantee: content that must never leave the gateway should be captured
// with CaptureHash or CaptureOff.
func Redact(s string) string {
	member, value := mayMatch(s)
	if member {
		s = secretMember.ReplaceAllString(s, `$1"`+Redacted+`"`)
	}
	// value was read before the members' values were replaced, which
	// adds no word (what goes in is "[REDACTED]", after a colon and
	// before a quote), so it only lets more through.
	if value {
		s = secretValue.ReplaceAllStringFunc(s, redactValue)
	}
	return s
}

func redactValue(m string) string {
	if len(m) > 3 && m[:3] == "://" { // keep the URL readable
		return "://" + Redacted + "@"
	}
	return Redacted
}

// The regular expressions are the expensive part of capturing content, and
// most content holds no secret. Every match of secretMember contains one of
// memberWords, and every match of secretValue one of valueWords, in ASCII
// letters of any case (the patterns' literal parts, lowercased; a word
// here may be shorter than the literal it stands for, which only makes the
// filter let more through). Redact runs an expression only on content that
// contains one of its words, so that the filter never changes the result;
// FuzzRedactFilter checks that against the expressions alone.
var (
	memberWords = []string{"pass", "secret", "token", "api", "access", "authorization", "credential",
		"private", "cookie", "session"}
	valueWords = []string{"-----begin", "akia", "asia", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
		"xox", "sk-", "aiza", "eyj", "bearer", "pass", "pwd", "secret", "token", "api", "://"}
)

// filterWords are memberWords and valueWords by their first byte: which
// of the two lists each is in.
var filterWords = func() (t [256][]filterWord) {
	add := func(w string, member bool) {
		for i, f := range t[w[0]] {
			if f.w == w {
				t[w[0]][i].member = t[w[0]][i].member || member
				t[w[0]][i].value = t[w[0]][i].value || !member
				return
			}
		}
		t[w[0]] = append(t[w[0]], filterWord{w: w, member: member, value: !member})
	}
	for _, w := range memberWords {
		add(w, true)
	}
	for _, w := range valueWords {
		add(w, false)
	}
	return t
}()

type filterWord struct {
	w             string
	member, value bool
}

// mayMatch reports whether s contains one of memberWords, and one of
// valueWords, in any ASCII case, in one pass and without a lower-cased
// copy. A character that case-insensitive matching folds onto an ASCII
// letter (U+017F ſ onto s, U+212A K onto k) makes both true without
// looking further.
func mayMatch(s string) (member, value bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		case c == 0xC5 && i+1 < len(s) && s[i+1] == 0xBF: // ſ
			return true, true
		case c == 0xE2 && i+2 < len(s) && s[i+1] == 0x84 && s[i+2] == 0xAA: // K
			return true, true
		}
		for _, f := range filterWords[c] {
			if (f.member && !member || f.value && !value) && hasPrefixFold(s[i:], f.w) {
				member, value = member || f.member, value || f.value
				if member && value {
					return true, true
				}
			}
		}
	}
	return member, value
}

// hasPrefixFold reports whether s starts with w (lowercase ASCII) in any
// ASCII case.
func hasPrefixFold(s, w string) bool {
	if len(s) < len(w) {
		return false
	}
	for j := 0; j < len(w); j++ {
		c := s[j]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w[j] {
			return false
		}
	}
	return true
}
