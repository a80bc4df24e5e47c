package secproc

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Config configures a Processor. Its zero value is usable and safe: every
// category is on with its default action, no file root and no destination
// is allowed beyond what the rules below say, and sessions are bounded.
type Config struct {
	// One policy per category.
	FileAccess           Policy
	CommandInjection     Policy
	Exfiltration         Policy
	PrivilegeEscalation  Policy
	InjectedInstructions Policy

	// AllowedRoots are the directories file arguments may name (POSIX
	// paths; "/workspace"). A path outside every root is a finding. When
	// empty, only traversal out of a relative path and obfuscated paths are
	// findings. A root that is a real local directory has its symlinks
	// resolved, and so do the paths checked against it.
	AllowedRoots []string
	// SkipSymlinks turns off symlink resolution. Risk: a symlink inside a
	// root that points outside it is not seen. Set it when the roots name
	// the upstream's file system and the gateway runs elsewhere, where the
	// same paths mean something else.
	SkipSymlinks bool
	// SensitivePaths are path.Match patterns, matched against each
	// element-suffix of a cleaned path ("*.pem" matches "/a/b/k.pem",
	// ".ssh/*" matches "/home/x/.ssh/id_rsa"). Reading one taints the session
	// for read-then-send. nil means DefaultSensitivePaths; use an empty
	// non-nil slice for none.
	SensitivePaths []string

	// AllowedHosts are the destinations tool calls may name: "example.com"
	// (exactly), "*.example.com" (its subdomains, not itself). E-mail
	// addresses are checked by their domain. When empty, destinations are
	// not checked (secrets and read-then-send still are).
	AllowedHosts []string

	// Grants say which tools and scopes a subject may use on an upstream.
	// A call is checked against the grants whose Subject and Upstream match
	// it; a call no grant matches is not checked for tools and scopes.
	Grants []Grant

	// Rules are custom rules: regular expressions (RE2 syntax) and CEL
	// expressions (see Rule.When).
	Rules []Rule

	// Sessions bounds the per-session state of read-then-send.
	Sessions SessionLimits

	// Now returns the time; nil means time.Now. Tests set it.
	Now func() time.Time
}

// Policy is one category's setting.
type Policy struct {
	// Disabled turns the category off. Risk: nothing of the category is
	// detected, not even flagged; prefer Action Flag to quieten a category.
	Disabled bool
	// Action is what the gateway does about the category's findings; 0
	// means the category's default (DefaultAction).
	Action Action
}

// DefaultAction returns a category's action when its Policy leaves it 0:
// deny for file access, command injection and privilege escalation;
// require_approval for exfiltration (a person can tell a legitimate upload
// from a leak); flag for injected instructions (the text is already in the
// model's context only if the gateway lets the result pass, so operators
// who want it withheld set deny).
func DefaultAction(c Category) Action {
	switch c {
	case Exfiltration:
		return RequireApproval
	case InjectedInstructions:
		return Flag
	}
	return Deny
}

func (p Policy) action(c Category) Action {
	if p.Action == 0 {
		return DefaultAction(c)
	}
	return p.Action
}

func (c *Config) policy(cat Category) Policy {
	switch cat {
	case FileAccess:
		return c.FileAccess
	case CommandInjection:
		return c.CommandInjection
	case Exfiltration:
		return c.Exfiltration
	case PrivilegeEscalation:
		return c.PrivilegeEscalation
	case InjectedInstructions:
		return c.InjectedInstructions
	}
	return Policy{}
}

func (p *Processor) on(c Category) bool { return !p.cfg.policy(c).Disabled }

// Grant is what a subject may do on an upstream.
type Grant struct {
	Subject  string // "" or "*" matches any subject
	Upstream string // "" or "*" matches any upstream
	// Tools are path.Match patterns of tool names ("read_*").
	Tools []string
	// Scopes are the scopes a call may carry. nil means "any scope".
	Scopes []string
}

func (g Grant) matches(subject, upstream string) bool {
	return (g.Subject == "" || g.Subject == "*" || g.Subject == subject) &&
		(g.Upstream == "" || g.Upstream == "*" || g.Upstream == upstream)
}

// Rule is a custom rule: a regular expression (Pattern) or a CEL
// expression (When), exactly one of them. Its findings are
// "custom/<Name>", in Category.
type Rule struct {
	Name     string
	Category Category
	// Pattern is matched against every string of the event's arguments,
	// content and description (RE2: linear time).
	Pattern string
	// When is a CEL expression of type bool over the event (see the
	// package doc, "CEL rules"). It is compiled by New; an expression that
	// cannot be evaluated for an event denies it.
	When string
	// Kinds limits the rule to some kinds of event; nil means all.
	Kinds    []Kind
	Severity Severity // 0 means Medium
	// Action is what the rule's findings do; 0 means its category's
	// action.
	Action Action
}

// RuleError is a custom rule that is not valid. Line and Column locate a
// CEL error in the rule's expression (both 1-based; 0 when the error has
// no position).
type RuleError struct {
	Index int    // in Config.Rules
	Field string // "name", "category", "pattern", "when", "severity", "action"; "" for the rule
	Msg   string

	Line, Column int
}

func (e *RuleError) Error() string {
	field := fmt.Sprintf("rules[%d]", e.Index)
	if e.Field != "" {
		field += "." + e.Field
	}
	return "secproc: " + field + ": " + e.Msg
}

type compiledRule struct {
	Rule
	re  *regexp.Regexp // a pattern rule
	cel *celRule       // a CEL rule
}

// compileRules compiles rules; the errors are *RuleError.
func compileRules(rules []Rule) ([]compiledRule, []error) {
	var out []compiledRule
	var errs []error
	for i, r := range rules {
		bad := func(field, format string, args ...any) {
			errs = append(errs, &RuleError{Index: i, Field: field, Msg: fmt.Sprintf(format, args...)})
		}
		if r.Name == "" {
			bad("name", "empty")
		}
		if !slices.Contains(Categories, r.Category) {
			bad("category", "unknown category %q", r.Category)
		}
		if r.Severity != 0 && (r.Severity < Low || r.Severity > Critical) {
			bad("severity", "unknown severity %d", r.Severity)
		}
		if r.Action < 0 || r.Action > Deny {
			bad("action", "unknown action %d", r.Action)
		} else if r.Action == ActionQuarantine {
			bad("action", "quarantine is the AG-UI relay's action, not the security processor's (want flag, require_approval or deny)")
		}
		c := compiledRule{Rule: r}
		switch {
		case r.Pattern != "" && r.When != "":
			bad("", "give pattern or when, not both")
		case r.Pattern != "":
			re, err := regexp.Compile(r.Pattern)
			if err != nil {
				bad("pattern", "does not compile: %v", err)
			}
			c.re = re
		case strings.TrimSpace(r.When) != "":
			prg, cerrs := compileWhen(i, r.When)
			errs = append(errs, cerrs...)
			c.cel = prg
		default:
			bad("", "give pattern (a regular expression) or when (a CEL expression)")
		}
		out = append(out, c)
	}
	return out, errs
}

// SessionLimits bounds per-session state.
type SessionLimits struct {
	Max int           // sessions remembered; 0 means 10000
	TTL time.Duration // how long a session stays tainted; 0 means 30 minutes
}

func (s SessionLimits) max() int {
	if s.Max <= 0 {
		return 10000
	}
	return s.Max
}

func (s SessionLimits) ttl() time.Duration {
	if s.TTL <= 0 {
		return 30 * time.Minute
	}
	return s.TTL
}

// DefaultSensitivePaths are the patterns used when Config.SensitivePaths is
// nil.
var DefaultSensitivePaths = []string{
	".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa*", "id_ed25519*", "id_ecdsa*",
	".ssh/*", ".aws/credentials", ".aws/config", ".netrc", ".npmrc", ".pypirc", ".git-credentials",
	".docker/config.json", ".kube/config", "credentials.json", "secrets.*", "shadow", "passwd",
}

// Validate reports every problem of c at once, each named by its field.
// The problems of rules are *RuleError.
func (c Config) Validate() error {
	_, err := c.check()
	return err
}

// check validates c and compiles its rules.
func (c Config) check() ([]compiledRule, error) {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("secproc: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	for _, cat := range Categories {
		if a := c.policy(cat).Action; a < 0 || a > Deny {
			bad(string(cat)+".action", "unknown action %d", a)
		} else if a == ActionQuarantine {
			bad(string(cat)+".action", "quarantine is the AG-UI relay's action, not the security processor's (want flag, require_approval or deny)")
		}
	}
	for i, r := range c.AllowedRoots {
		if r == "" || !(strings.HasPrefix(r, "/") || strings.HasPrefix(r, "~/")) {
			bad(fmt.Sprintf("allowed_roots[%d]", i), "%q is not an absolute path", r)
		}
	}
	for i, s := range c.SensitivePaths {
		if _, err := path.Match(s, ""); err != nil {
			bad(fmt.Sprintf("sensitive_paths[%d]", i), "%v", err)
		}
	}
	for i, h := range c.AllowedHosts {
		if h == "" || strings.ContainsAny(strings.TrimPrefix(h, "*."), "*/:@ ") {
			bad(fmt.Sprintf("allowed_hosts[%d]", i), "%q is not a host or *.domain", h)
		}
	}
	for i, g := range c.Grants {
		for j, t := range g.Tools {
			if _, err := path.Match(t, ""); err != nil {
				bad(fmt.Sprintf("grants[%d].tools[%d]", i, j), "%v", err)
			}
		}
	}
	rules, rerrs := compileRules(c.Rules)
	errs = append(errs, rerrs...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return rules, nil
}

func (c Config) sensitive() []string {
	if c.SensitivePaths == nil {
		return DefaultSensitivePaths
	}
	return c.SensitivePaths
}
