package secproc

import (
	"math"
	"regexp"
	"strings"
)

// secretPattern is one kind of secret. group is the submatch holding the
// secret (0: the whole match); generic patterns need an entropy check.
type secretPattern struct {
	name    string
	re      *regexp.Regexp
	group   int
	generic bool
	pre     []string // the lower-cased text must contain one (see mayMatch)
}

var secretPatterns = []secretPattern{
	{name: "private-key", re: regexp.MustCompile(`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----`), pre: []string{"private key"}},
	{name: "aws-access-key", re: regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b`), pre: []string{"akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa"}},
	{name: "aws-secret-key", re: regexp.MustCompile(`(?i)aws_?secret_?(?:access_?)?key["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})(?:[^A-Za-z0-9/+=]|$)`), group: 1, pre: []string{"secret"}},
	{name: "github-token", re: regexp.MustCompile(`\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b`), pre: []string{"gh"}},
	{name: "github-token", re: regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{40,}\b`), pre: []string{"github_pat_"}},
	{name: "slack-token", re: regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`), pre: []string{"xox"}},
	{name: "slack-webhook", re: regexp.MustCompile(`https://hooks\.slack\.com/services/T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]+`), pre: []string{"hooks.slack.com"}},
	{name: "stripe-key", re: regexp.MustCompile(`\b[sr]k_live_[A-Za-z0-9]{20,}\b`), pre: []string{"k_live_"}},
	{name: "anthropic-key", re: regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{20,}`), pre: []string{"sk-ant-"}},
	{name: "openai-key", re: regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`), pre: []string{"sk-"}},
	{name: "google-api-key", re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`), pre: []string{"aiza"}},
	{name: "jwt", re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), pre: []string{"eyj"}},
	{name: "url-credentials", re: regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^/\s:@"']+:([^/\s:@"']{6,})@`), group: 1, generic: true, pre: []string{"://"}},
	{name: "secret-assignment", re: regexp.MustCompile(`(?i)(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|auth[_-]?key|client[_-]?secret|private[_-]?key|credentials?)s?["']?\s*[:=]\s*["']?([^\s"',;]{8,})`), group: 1, generic: true, pre: []string{"passw", "pwd", "secret", "token", "key", "credential"}},
}

// secretMatch is one secret found in a string.
type secretMatch struct {
	kind       string
	start, end int // the match, for the excerpt
	value      string
}

// findSecrets returns the secrets in s. Every pattern is within a line, and
// scanning line by line keeps Go's regexp on its fast paths.
func findSecrets(s string) []secretMatch {
	var out []secretMatch
	off := 0
	for line := range strings.SplitAfterSeq(s, "\n") {
		for _, m := range findSecretsLine(line) {
			m.start += off
			m.end += off
			out = append(out, m)
		}
		off += len(line)
	}
	return out
}

func findSecretsLine(s string) []secretMatch {
	var out []secretMatch
	lower := strings.ToLower(s)
	for _, p := range secretPatterns {
		if !mayMatch(lower, p.pre) {
			continue
		}
		for _, m := range p.re.FindAllStringSubmatchIndex(s, 8) {
			vs, ve := m[2*p.group], m[2*p.group+1]
			if vs < 0 {
				continue
			}
			v := s[vs:ve]
			if placeholder(v) || p.generic && (!looksRandom(v) || strings.HasPrefix(strings.ToLower(v), "http")) {
				continue
			}
			out = append(out, secretMatch{kind: p.name, start: m[0], end: m[1], value: v})
		}
	}
	return out
}

// placeholder reports values that documentation and templates use in place
// of a secret.
func placeholder(v string) bool {
	l := strings.ToLower(v)
	for _, w := range []string{"example", "xxxx", "****", "<", "${", "{{", "$(", "changeme", "your_", "your-",
		"placeholder", "dummy", "redacted", "…", "...", "sample", "test_", "fake", "%s", "env:", "vault:"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return strings.HasPrefix(l, "$")
}

// looksRandom is the check for generic secrets: long enough, mixed
// character classes, and a Shannon entropy above that of words.
func looksRandom(v string) bool {
	if len(v) < 8 {
		return false
	}
	var lower, upper, digit, other int
	for _, r := range v {
		switch {
		case r >= 'a' && r <= 'z':
			lower = 1
		case r >= 'A' && r <= 'Z':
			upper = 1
		case r >= '0' && r <= '9':
			digit = 1
		default:
			other = 1
		}
	}
	classes := lower + upper + digit + other
	e := entropy(v)
	switch {
	case classes >= 3:
		return e >= 3.0
	case classes == 2 && digit == 1:
		return len(v) >= 16 && e >= 3.3
	}
	return false
}

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	var e float64
	n := float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			e -= p * math.Log2(p)
		}
	}
	return e
}

// redactSecrets replaces each secret in s by its first four characters and
// "[redacted]".
func redactSecrets(s string) string {
	ms := findSecrets(s)
	if len(ms) == 0 {
		return s
	}
	for _, m := range ms {
		if m.value == "" || !strings.Contains(s, m.value) {
			continue
		}
		keep := min(4, len(m.value))
		s = strings.ReplaceAll(s, m.value, m.value[:keep]+"[redacted]")
	}
	return s
}
