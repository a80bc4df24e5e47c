package config

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/textproto"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/agentwarden/warden/internal/policy"
	"github.com/agentwarden/warden/internal/secproc"
)

// Validate checks everything the decoder cannot: the version, enums, ranges,
// addresses and URLs, upstream names, command versus url, and patterns. It
// returns nil or a *Problems holding every problem found, each with its path
// and, for a Config from Parse, its position in the file. It does not modify
// c.
func (c *Config) Validate() error {
	if c == nil {
		return &Problems{{Message: "no configuration"}}
	}
	v := &validator{c: c}
	v.version()
	v.log()
	v.gateway()
	v.telemetry()
	if len(v.probs) == 0 {
		return nil
	}
	return &v.probs
}

type validator struct {
	c     *Config
	probs Problems
}

// errorf records a problem at path, placed at the nearest position the file
// gave for path or one of its ancestors (a missing field is reported where
// its parent is).
func (v *validator) errorf(p, format string, args ...any) {
	pr := Problem{File: v.c.file, Path: p, Message: fmt.Sprintf(format, args...)}
	for q := p; v.c.pos != nil; q = parent(q) {
		if at, ok := v.c.pos[q]; ok {
			pr.Line, pr.Column = at.line, at.column
			break
		}
		if q == "" {
			break
		}
	}
	v.probs = append(v.probs, pr)
}

// oneOf reports a problem at p unless value is one of allowed.
func (v *validator) oneOf(p, what, value string, allowed []string) {
	if !slices.Contains(allowed, value) {
		v.errorf(p, "%s must be one of %s, not %q", what, strings.Join(allowed, ", "), value)
	}
}

func (v *validator) auth(p string, a AuthConfig) {
	if a.Issuer == "" {
		for _, f := range []struct{ name, value string }{{"audience", a.Audience}, {"jwks_url", a.JWKSURL}, {"jwks_file", a.JWKSFile}} {
			if f.value != "" {
				v.errorf(join(p, f.name), "%s is for bearer tokens: it needs issuer", f.name)
			}
		}
	} else {
		if a.Audience == "" {
			v.errorf(join(p, "audience"), "audience is required with issuer: tokens meant for another resource must be refused (e.g. https://gw.example.com/mcp)")
		}
		if (a.JWKSURL == "") == (a.JWKSFile == "") {
			v.errorf(join(p, "jwks_url"), "give exactly one of jwks_url and jwks_file: where the issuer's public keys are")
		}
		if a.JWKSURL != "" {
			if u, err := url.Parse(a.JWKSURL); err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && isLoopbackHost(u.Hostname()))) {
				v.errorf(join(p, "jwks_url"), "jwks_url must be an https URL (http only on loopback)")
			}
		}
	}
	for name, h := range a.APIKeys {
		if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
			v.errorf(join(join(p, "api_keys"), name), "want the lowercase hex SHA-256 of the key, not the key itself (warden keys api-key makes one)")
		}
	}
}

// isLoopbackHost reports whether host names the loopback interface.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (v *validator) security(p string, s SecurityConfig) {
	start := len(v.probs)
	defer func() { // in file order, whichever check found them
		slices.SortStableFunc(v.probs[start:], func(a, b Problem) int {
			return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
		})
	}()
	c, err := s.Processor()
	for _, e := range unjoin(err) {
		field, msg, _ := strings.Cut(e.Error(), ": ")
		v.errorf(join(p, field), "%s", msg)
	}
	for _, e := range unjoin(c.Validate()) {
		var re *secproc.RuleError
		if errors.As(e, &re) && re.Line > 0 {
			v.exprError(join(index(join(p, "rules"), re.Index), re.Field), re.Line, re.Column, re.Msg)
			continue
		}
		field, msg, _ := strings.Cut(strings.TrimPrefix(e.Error(), "secproc: "), ": ")
		v.errorf(join(p, field), "%s", msg)
	}
	for i, r := range s.Rules {
		if r.Action != "" && s.Quarantined(secproc.Category(r.Category)) {
			v.errorf(join(index(join(p, "rules"), i), "action"), "%s is set to quarantine, which decides for the rules of the category too: the rule's own action would not apply (remove action, or put the rule in another category)", r.Category)
		}
	}
}

// unjoin returns the errors joined in err (nil for nil).
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err != nil {
		return []error{err}
	}
	return nil
}

// exprError records a problem in the CEL expression at p, placed at line
// and column of the expression when the file holds its text verbatim (see
// Config.text), and at the expression otherwise.
func (v *validator) exprError(p string, line, column int, msg string) {
	at := v.c.text[p]
	if line < 1 || line > len(at) {
		v.errorf(p, "%s", msg)
		return
	}
	v.probs = append(v.probs, Problem{File: v.c.file, Path: p, Line: at[line-1].line, Column: at[line-1].column + column - 1, Message: msg})
}

func (v *validator) telemetry() {
	t := v.c.Telemetry
	for i, c := range t.Conventions {
		v.oneOf(index("telemetry.conventions", i), "a convention", c, Conventions)
	}
	v.oneOf("telemetry.capture", "capture", t.Capture, CaptureModes)
	v.oneOf("telemetry.spans.exporter", "the span exporter", t.Spans.Exporter, SpanExporters)
	switch t.Spans.Exporter {
	case "jsonl":
		if t.Spans.Endpoint != "" {
			v.errorf("telemetry.spans.endpoint", "the jsonl span exporter takes a path, not an endpoint")
		}
	case "otlp":
		if u, err := url.Parse(t.Spans.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.errorf("telemetry.spans.endpoint", "the otlp span exporter needs an http(s) endpoint, e.g. http://127.0.0.1:4318")
		}
	case "otlp-grpc":
		if t.Spans.Endpoint == "" {
			v.errorf("telemetry.spans.endpoint", "the otlp-grpc span exporter needs an endpoint, e.g. 127.0.0.1:4317")
		}
	}
	if t.Spans.Profile != "" {
		v.errorf("telemetry.spans.profile", "profile is for telemetry.ocsf")
	}
	v.oneOf("telemetry.ocsf.exporter", "the OCSF exporter", t.OCSF.Exporter, OCSFExporters)
	v.oneOf("telemetry.ocsf.profile", "the OCSF profile", t.OCSF.Profile, OCSFProfiles)
	switch t.OCSF.Exporter {
	case "jsonl":
		if t.OCSF.Endpoint != "" {
			v.errorf("telemetry.ocsf.endpoint", "the jsonl OCSF exporter takes a path, not an endpoint")
		}
	case "http":
		if u, err := url.Parse(t.OCSF.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.errorf("telemetry.ocsf.endpoint", "the http OCSF exporter needs an http(s) endpoint, e.g. https://siem.example.com/ocsf")
		} else if u.User != nil {
			v.errorf("telemetry.ocsf.endpoint", "credentials in the URL are not allowed")
		}
		if t.OCSF.Path != "" {
			v.errorf("telemetry.ocsf.path", "the http OCSF exporter takes an endpoint, not a path")
		}
	}
}

func (v *validator) version() {
	switch v.c.Version {
	case Version:
	case 0:
		v.errorf("version", "version is required: add \"version: %d\"", Version)
	default:
		v.errorf("version", "unsupported version %d: this warden reads version %d", v.c.Version, Version)
	}
}

func (v *validator) log() {
	l := v.c.Log
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, l.Level) {
		v.errorf("log.level", "unknown level %q: want debug, info, warn or error", l.Level)
	}
	if !slices.Contains([]string{"text", "json"}, l.Format) {
		v.errorf("log.format", "unknown format %q: want text or json", l.Format)
	}
}

func (v *validator) gateway() {
	g := v.c.Gateway
	v.listen("gateway.listen", g.Listen)
	v.limits("gateway.limits", g.Limits)
	v.list("gateway.methods", g.Methods)
	if g.Audit.Backend != "" {
		v.oneOf("gateway.audit.backend", "the audit backend", g.Audit.Backend, []string{"sqlite", "jsonl"})
	}
	v.audit("gateway.audit", g.Audit)
	if t := g.Taint; t.Action != "" {
		v.oneOf("gateway.taint.action", "the taint action", t.Action, TaintActions)
	}
	if t := g.Taint; t.MinMatch != 0 && (t.MinMatch < 8 || t.MinMatch > 4096) {
		v.errorf("gateway.taint.min_match", "min_match must be between 8 and 4096 letters and digits, not %d", t.MinMatch)
	}
	if t := g.Taint; t.TTL < 0 {
		v.errorf("gateway.taint.ttl", "ttl must not be negative")
	}
	if g.Security.Enabled {
		v.security("gateway.security", g.Security)
	}
	v.auth("gateway.auth", g.Auth)
	aguiNames := map[string]bool{}
	for i, a := range g.AGUI {
		ap := index("gateway.agui", i)
		if !upstreamName.MatchString(a.Name) {
			v.errorf(join(ap, "name"), "name must be lowercase letters, digits, - or _ (it is part of the URL path)")
		} else if aguiNames[a.Name] {
			v.errorf(join(ap, "name"), "AG-UI agent %q is defined twice", a.Name)
		}
		aguiNames[a.Name] = true
		if u, err := url.Parse(a.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.errorf(join(ap, "url"), "url must be the agent's http(s) endpoint that takes RunAgentInput")
		}
		for cat, act := range a.Actions {
			if act != "flag" && act != "quarantine" && act != "deny" {
				v.errorf(join(join(ap, "actions"), cat), "action must be flag, quarantine or deny, not %q", act)
			}
		}
		if a.MaxHeldBytes < 0 {
			v.errorf(join(ap, "max_held_bytes"), "max_held_bytes must not be negative")
		}
		v.headers(join(ap, "headers"), a.Headers)
	}
	a2aNames := map[string]bool{}
	for i, a := range g.A2A {
		ap := index("gateway.a2a", i)
		if !upstreamName.MatchString(a.Name) {
			v.errorf(join(ap, "name"), "name must be lowercase letters, digits, - or _ (it is part of the URL path)")
		} else if a2aNames[a.Name] {
			v.errorf(join(ap, "name"), "A2A agent %q is defined twice", a.Name)
		}
		a2aNames[a.Name] = true
		if u, err := url.Parse(a.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.errorf(join(ap, "url"), "url must be the agent's http(s) JSON-RPC endpoint")
		}
		v.list(join(ap, "methods"), a.Methods)
		if a.RequireSignedCard && len(a.CardKeys) == 0 {
			v.errorf(join(ap, "card_keys"), "require_signed_card needs card_keys: the keys trusted to sign the card")
		}
	}
	if g.Pinning.Enabled {
		pp := "gateway.pinning"
		if g.Pinning.FirstUse != "" {
			v.oneOf(join(pp, "first_use"), "first_use", g.Pinning.FirstUse, []string{"pin", "hold"})
		}
		if g.Pinning.Store != "" {
			v.oneOf(join(pp, "store"), "the pin store", g.Pinning.Store, []string{StoreSQLite, StoreMemory, StoreRedis})
		}
		if g.Pinning.Store == StoreRedis && g.ZeroTrust.Store != StoreRedis {
			v.errorf(join(pp, "store"), "store: redis keeps the pins on zero_trust.redis_url: set zero_trust.store: redis and redis_url")
		}
		if g.Pinning.StorePath != "" && (g.Pinning.Store == StoreMemory || g.Pinning.Store == StoreRedis) {
			v.errorf(join(pp, "store_path"), "store_path is only for store: sqlite")
		}
		for i, m := range g.Pinning.Manifests {
			mp := index(join(pp, "manifests"), i)
			if m.File == "" {
				v.errorf(join(mp, "file"), "a manifest needs its file")
			}
			if len(m.Keys) == 0 {
				v.errorf(join(mp, "keys"), "a manifest needs the public keys that may have signed it (warden manifest keygen writes PREFIX.pub.jwk)")
			}
		}
	}

	if len(g.Upstreams) == 0 {
		v.errorf("gateway.upstreams", "at least one upstream is required")
	}
	names := make(map[string]int)
	for i, u := range g.Upstreams {
		p := index("gateway.upstreams", i)
		v.upstream(p, u)
		if u.Name == "" {
			continue
		}
		if first, dup := names[u.Name]; dup {
			v.errorf(join(p, "name"), "upstream name %q is already used by gateway.upstreams[%d]", u.Name, first)
			continue
		}
		names[u.Name] = i
	}
	if g.DefaultUpstream != "" {
		if _, ok := names[g.DefaultUpstream]; !ok {
			v.errorf("gateway.default_upstream", "no upstream is named %q%s", g.DefaultUpstream, nameHint(g.DefaultUpstream, slices.Sorted(maps.Keys(names))))
		}
	}
	v.zeroTrust("gateway.zero_trust", g)
}

func (v *validator) zeroTrust(p string, g GatewayConfig) {
	z := g.ZeroTrust
	signatures := false
	for i, u := range g.Upstreams {
		for _, l := range []struct {
			field string
			pats  []Pattern
		}{{"require_token", u.RequireToken.Allow}, {"require_signature", u.RequireSignature.Allow}} {
			for j, pat := range l.pats {
				if !pat.Valid() {
					if _, err := CompilePattern(pat.String()); err != nil {
						v.errorf(index(join(index("gateway.upstreams", i), l.field), j), "%v", err)
					}
				}
			}
		}
		signatures = signatures || len(u.RequireSignature.Allow) > 0
		for j, m := range u.Mandates {
			mp := index(join(index("gateway.upstreams", i), "mandates"), j)
			if m.Tool == "" {
				v.errorf(join(mp, "tool"), "a mandate needs the tool it pre-approves")
			}
			// Without classification rules, a mandate for a tool that needs
			// no token is a mistake; with them, the tool may be classified.
			if ok, _ := u.RequireToken.Permits(m.Tool); m.Tool != "" && len(g.ZeroTrust.Classification) == 0 &&
				(len(u.RequireToken.Allow) == 0 || !ok) {
				v.errorf(join(mp, "tool"), "tool %q is not in require_token and there are no classification rules, so a mandate for it has no effect", m.Tool)
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal([]byte(m.Arguments), &obj); err != nil || obj == nil {
				v.errorf(join(mp, "arguments"), "arguments must be a JSON object, written as a string, e.g. '{\"amount\":100}'")
			}
		}
	}
	if signatures && z.Subject != "" && z.ClientKeys[z.Subject] == "" {
		v.errorf(join(p, "client_keys"), "an upstream has require_signature, so client_keys needs the public key of subject %q", z.Subject)
	}
	switch z.Store {
	case StoreSQLite, StoreMemory:
		if z.RedisURL != "" {
			v.errorf(join(p, "redis_url"), "redis_url is only for store: redis (store is %q)", z.Store)
		}
	case StoreRedis:
		switch {
		case z.RedisURL == "":
			v.errorf(join(p, "redis_url"), "store: redis needs redis_url, e.g. redis://127.0.0.1:6379/0")
		case !strings.HasPrefix(z.RedisURL, "redis://") && !strings.HasPrefix(z.RedisURL, "rediss://") && !strings.HasPrefix(z.RedisURL, "unix://"):
			v.errorf(join(p, "redis_url"), "redis_url must start with redis://, rediss:// or unix://")
		}
	default:
		v.errorf(join(p, "store"), "store must be sqlite, memory or redis, not %q", z.Store)
	}
	if z.StorePath != "" && z.Store != StoreSQLite {
		v.errorf(join(p, "store_path"), "store_path is only for store: sqlite")
	}
	if z.Skew < 0 || z.Skew > time.Minute {
		v.errorf(join(p, "skew"), "skew must be between 0s and 60s, not %s", z.Skew)
	}
	if z.StoreTimeout < MinStoreTimeout || z.StoreTimeout > MaxStoreTimeout {
		v.errorf(join(p, "store_timeout"), "store_timeout must be between %s and %s, not %s", MinStoreTimeout, MaxStoreTimeout, z.StoreTimeout)
	}
	if z.PublicURL != "" {
		if u, err := url.Parse(z.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			v.errorf(join(p, "public_url"), "public_url must be an http or https URL with a host and nothing after the path, e.g. https://gw.example.com")
		}
	}
	if z.Persona != "" && !slices.Contains(Personas, z.Persona) {
		v.errorf(join(p, "persona"), "persona %q is not a CoSAI-RM persona (%s)", z.Persona, strings.Join(Personas, ", "))
	}
	if z.ApprovalTimeout < 0 {
		v.errorf(join(p, "approval_timeout"), "approval_timeout must not be negative")
	}
	if _, err := policy.NewClassifier(z.PolicyRules()); err != nil {
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			var re *policy.RuleError
			if errors.As(e, &re) {
				v.errorf(join(index(join(p, "classification"), re.Index), re.Field), "%s", re.Msg)
			}
		}
	}
	v.tierAudit(p, g)
	for i, ch := range z.ApprovalChannels {
		if ch != ApprovalAdmin && ch != ApprovalElicitation {
			v.errorf(fmt.Sprintf("%s.approval_channels[%d]", p, i), "unknown approval channel %q (admin, elicitation)", ch)
		}
	}
	if z.HoldForApproval && !g.RequiresTokens() && !g.SessionCredentials() {
		v.errorf(join(p, "hold_for_approval"), "calls are held in the zero-trust stage, which runs only when some tool needs a token: name those tools (gateway.upstreams[].require_token, or zero_trust.classification); then calls the security processor or taint tracking send for approval, and A2A requests that need consent, are held too")
	}
	if z.HoldForApproval && z.Channel(ApprovalAdmin) {
		if msg := checkListenAddr(g.Admin.Addr); msg != "" {
			v.errorf("gateway.admin.addr", "%s", msg)
		}
	}
	for i, l := range g.Admin.ConfirmLevels {
		if l < 1 || l > 5 {
			v.errorf(index("gateway.admin.confirm_levels", i), "%d is not a classification level (1..5)", l)
		}
	}
	if w := g.Admin.Webhook; w.URL != "" {
		if u, err := url.Parse(w.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			v.errorf("gateway.admin.webhook.url", "%q: want an http or https URL with a host and no credentials", w.URL)
		}
		if u, err := url.Parse(w.ConsoleURL); w.ConsoleURL != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
			v.errorf("gateway.admin.webhook.console_url", "%q: want the console's http or https address, such as http://127.0.0.1:8788", w.ConsoleURL)
		}
	} else if w.Slack || w.ConsoleURL != "" {
		v.errorf("gateway.admin.webhook.url", "the webhook has no url: set it, or remove gateway.admin.webhook")
	}
	if o := g.Admin.OIDC; o != (AdminOIDC{}) {
		switch {
		case o.ClientID == "":
			v.errorf("gateway.admin.oidc.client_id", "the console's client id at the issuer is required for OIDC login")
		case g.Auth.Issuer == "":
			v.errorf("gateway.admin.oidc", "OIDC login uses the issuer of gateway.auth: set gateway.auth.issuer")
		}
		if o.RedirectURL != "" {
			if u, err := url.Parse(o.RedirectURL); err != nil || u.Scheme != "http" && u.Scheme != "https" || !strings.HasSuffix(u.Path, "/console/oidc/callback") {
				v.errorf("gateway.admin.oidc.redirect_url", "%q: want the console's callback, such as http://127.0.0.1:8788/console/oidc/callback", o.RedirectURL)
			}
		}
	}
	for _, l := range slices.Sorted(maps.Keys(g.Admin.Approvers)) {
		if n := g.Admin.Approvers[l]; n < 1 || n > 10 {
			v.errorf(key("gateway.admin.approvers", strconv.Itoa(l)), "%d approvers: want 1 to 10 distinct people", n)
		}
	}
	if g.SessionCredentials() && !g.RequiresTokens() && z.Subject == "" && !g.Auth.Enabled() {
		v.errorf(join(p, "subject"), "an upstream has session_credential, so subject is needed: the principal its credentials name (or configure gateway.auth, and each client's authenticated principal is used)")
	}
	if g.RequiresTokens() && z.Subject == "" && !g.Auth.Enabled() {
		v.errorf(join(p, "subject"), "an upstream has require_token, so subject is needed: the principal tokens are checked against (or configure gateway.auth, and each client's authenticated principal is used)")
	}
}

// tierAudit refuses classification rules that can put a call at Tier 2 or
// 3 while the audit log is off: the standard's Tier 2 requires
// comprehensive audit logging, and Tier 3 everything Tier 2 does. One
// problem, naming the first such rule, since one change fixes them all.
func (v *validator) tierAudit(p string, g GatewayConfig) {
	if g.Audit.Enabled {
		return
	}
	for i, r := range g.ZeroTrust.Classification {
		tier := policy.TierOf(r.Level)
		if tier < 2 || r.Level > policy.LeastSensitive {
			continue // Tier 1, or a bad level reported above
		}
		name := ""
		if r.Name != "" {
			name = fmt.Sprintf(" (%q)", r.Name)
		}
		v.errorf("gateway.audit.enabled", "%s%s classifies calls at level %d (Tier %d), and Tiers 2 and 3 require the audit log: enable gateway.audit, e.g. \"audit: {}\"",
			index(join(p, "classification"), i), name, r.Level, tier)
		return
	}
}

// nameHint suggests the closest of names to s, or lists names when none is
// close.
func nameHint(s string, names []string) string {
	best, bestDist := "", 3
	for _, n := range names {
		if d := levenshtein(s, n); d < bestDist {
			best, bestDist = n, d
		}
	}
	switch {
	case best != "":
		return fmt.Sprintf(" (did you mean %q?)", best)
	case len(names) > 0:
		return " (upstreams: " + strings.Join(names, ", ") + ")"
	}
	return ""
}

func (v *validator) listen(p string, l ListenConfig) {
	if msg := checkListenAddr(l.Addr); msg != "" {
		v.errorf(join(p, "addr"), "%s", msg)
	}
	if msg := checkURLPath(l.Path); msg != "" {
		v.errorf(join(p, "path"), "%s", msg)
	}
	for i, h := range l.AllowedHosts {
		if msg := checkHost(h); msg != "" {
			v.errorf(index(join(p, "allowed_hosts"), i), "%s", msg)
		}
	}
	for i, o := range l.AllowedOrigins {
		if msg := checkOrigin(o); msg != "" {
			v.errorf(index(join(p, "allowed_origins"), i), "%s", msg)
		}
	}
	switch t := l.TLS; {
	case (t.CertFile == "") != (t.KeyFile == ""):
		v.errorf(join(p, "tls"), "cert_file and key_file go together: give both or neither")
	case t.ClientCAFile != "" && t.CertFile == "":
		v.errorf(join(p, "tls.client_ca_file"), "client certificates need TLS: give cert_file and key_file too")
	}
}

func (v *validator) limits(p string, l LimitsConfig) {
	if l.MaxMessageBytes < MinMaxMessageBytes || l.MaxMessageBytes > MaxMaxMessageBytes {
		v.errorf(join(p, "max_message_bytes"), "must be between %d (1 KiB) and %d (64 MiB), got %d", MinMaxMessageBytes, MaxMaxMessageBytes, l.MaxMessageBytes)
	}
	if l.MaxDepth < MinMaxDepth || l.MaxDepth > MaxMaxDepth {
		v.errorf(join(p, "max_depth"), "must be between %d and %d, got %d", MinMaxDepth, MaxMaxDepth, l.MaxDepth)
	}
	v.positive(join(p, "request_timeout"), l.RequestTimeout)
	v.positive(join(p, "session_idle_timeout"), l.SessionIdleTimeout)
	if l.DrainTimeout < 0 || l.DrainTimeout > MaxDrainTimeout {
		v.errorf(join(p, "drain_timeout"), "must be between 0 and %s, got %s", MaxDrainTimeout, l.DrainTimeout)
	}
	if l.MaxSessions < 1 || l.MaxSessions > MaxMaxSessions {
		v.errorf(join(p, "max_sessions"), "must be between 1 and %d, got %d", MaxMaxSessions, l.MaxSessions)
	}
	switch {
	case l.MaxSessionsPerPrincipal < 1 || l.MaxSessionsPerPrincipal > MaxMaxSessions:
		v.errorf(join(p, "max_sessions_per_principal"), "must be between 1 and %d, got %d", MaxMaxSessions, l.MaxSessionsPerPrincipal)
	case l.MaxSessionsPerPrincipal > l.MaxSessions && l.MaxSessions >= 1:
		v.errorf(join(p, "max_sessions_per_principal"), "%d is more than max_sessions (%d): no client could reach it", l.MaxSessionsPerPrincipal, l.MaxSessions)
	}
	if l.MaxChildrenPerUpstream < 1 || l.MaxChildrenPerUpstream > MaxMaxChildren {
		v.errorf(join(p, "max_children_per_upstream"), "must be between 1 and %d, got %d", MaxMaxChildren, l.MaxChildrenPerUpstream)
	}
	if l.HeaderTimeout < MinReadTimeout || l.HeaderTimeout > MaxHeaderTimeout {
		v.errorf(join(p, "header_timeout"), "must be between %s and %s, got %s", MinReadTimeout, MaxHeaderTimeout, l.HeaderTimeout)
	}
	if l.BodyTimeout < MinReadTimeout || l.BodyTimeout > MaxBodyTimeout {
		v.errorf(join(p, "body_timeout"), "must be between %s and %s, got %s", MinReadTimeout, MaxBodyTimeout, l.BodyTimeout)
	}
}

// audit checks the checkpoint settings: they need a signing key, and
// numbers that make sense.
func (v *validator) audit(p string, a AuditConfig) {
	if a.CheckpointEvery < 0 {
		v.errorf(join(p, "checkpoint_every"), "must be at least 1 record, got %d", a.CheckpointEvery)
	}
	if a.CheckpointInterval < 0 {
		v.errorf(join(p, "checkpoint_interval"), "must be greater than zero, got %s", a.CheckpointInterval)
	}
	if a.WitnessURL != "" {
		if u, err := url.Parse(a.WitnessURL); err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && isLoopbackHost(u.Hostname()))) {
			v.errorf(join(p, "witness_url"), "witness_url must be an https URL (http only on loopback)")
		}
	}
	if a.SigningKey != "" {
		return
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"checkpoint_every", a.CheckpointEvery != 0}, {"checkpoint_interval", a.CheckpointInterval != 0},
		{"witness", a.Witness != ""}, {"witness_url", a.WitnessURL != ""}} {
		if f.set {
			v.errorf(join(p, f.name), "%s needs gateway.audit.signing_key: checkpoints are signed (create a key with warden keys audit --out FILE)", f.name)
		}
	}
}

func (v *validator) positive(p string, d time.Duration) {
	if d <= 0 {
		v.errorf(p, "must be greater than zero, got %s", d)
	}
}

func (v *validator) list(p string, l List) {
	for _, side := range []struct {
		name string
		pats []Pattern
	}{{"allow", l.Allow}, {"deny", l.Deny}} {
		for i, pat := range side.pats {
			if pat.Valid() {
				continue
			}
			if _, err := CompilePattern(pat.String()); err != nil {
				v.errorf(index(join(p, side.name), i), "%v", err)
			}
		}
	}
}

var upstreamName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

func (v *validator) upstream(p string, u Upstream) {
	switch {
	case u.Name == "":
		v.errorf(join(p, "name"), "name is required")
	case !upstreamName.MatchString(u.Name):
		v.errorf(join(p, "name"), "invalid name %q: use 1 to 63 of a-z, 0-9, '_' and '-', starting with a letter or digit", u.Name)
	}

	hasCmd, hasURL := u.Command != nil, u.URL != ""
	switch {
	case hasCmd && hasURL:
		v.errorf(p, "both command and url are set: set command to run a stdio server, or url to reach an HTTP one, not both")
	case !hasCmd && !hasURL:
		v.errorf(p, "neither command nor url is set: set command to run a stdio server, or url to reach an HTTP one")
	case hasCmd:
		if u.Headers != nil {
			v.errorf(join(p, "headers"), "headers only apply to a url upstream; this one runs a command (use env to give it settings)")
		}
	case hasURL:
		if u.Env != nil {
			v.errorf(join(p, "env"), "env only applies to a command upstream; this one has a url (use headers to send it credentials)")
		}
		if u.PassEnv != nil {
			v.errorf(join(p, "pass_env"), "pass_env only applies to a command upstream; this one has a url")
		}
		if u.Dir != "" {
			v.errorf(join(p, "dir"), "dir only applies to a command upstream; this one has a url")
		}
	}

	if hasCmd {
		v.command(join(p, "command"), u.Command)
	}
	if u.Dir != "" {
		v.literal(join(p, "dir"), u.Dir)
	}
	if hasURL {
		if msg := checkUpstreamURL(u.URL); msg != "" {
			v.errorf(join(p, "url"), "%s", msg)
		}
		v.literal(join(p, "url"), u.URL)
	}
	for _, k := range slices.Sorted(maps.Keys(u.Env)) {
		kp := key(join(p, "env"), k)
		if !validEnvName(k) {
			v.errorf(kp, "invalid variable name %q: use letters, digits and '_', not starting with a digit", k)
		}
		if strings.IndexByte(u.Env[k], 0) >= 0 {
			v.errorf(kp, "value contains a NUL byte")
		}
		if _, err := expand(u.Env[k], nil); err != nil {
			v.errorf(kp, "%v", err)
		}
	}
	for i, name := range u.PassEnv {
		if !validEnvName(name) {
			v.errorf(index(join(p, "pass_env"), i), "invalid variable name %q: use letters, digits and '_', not starting with a digit", name)
		}
	}
	v.headers(join(p, "headers"), u.Headers)
	v.positive(join(p, "shutdown_timeout"), u.ShutdownTimeout)
	v.list(join(p, "methods"), u.Methods)
	v.list(join(p, "tools"), u.Tools)
	if u.SessionCredential != nil {
		v.sessionCredential(join(p, "session_credential"), u)
	}
}

// sessionCredential checks u.SessionCredential, at p.
func (v *validator) sessionCredential(p string, u Upstream) {
	sc := u.SessionCredential
	if u.Command != nil {
		v.errorf(p, "session_credential only applies to a url upstream; this one runs a command")
	}
	switch c := textproto.CanonicalMIMEHeaderKey(sc.Header); {
	case !validHeaderName(sc.Header):
		v.errorf(join(p, "header"), "invalid header name %q", sc.Header)
	case slices.Contains(headersSetByWarden, c) || strings.HasPrefix(c, "Mcp-") || c == "Last-Event-Id":
		v.errorf(join(p, "header"), "header %q is set by warden's HTTP transport and cannot carry the credential", sc.Header)
	default:
		for name := range u.Headers {
			if textproto.CanonicalMIMEHeaderKey(name) == c {
				v.errorf(join(p, "header"), "header %q is also configured in headers: the session credential would replace it; remove one", sc.Header)
			}
		}
	}
	if sc.TTL < MinSessionCredentialTTL || sc.TTL > MaxSessionCredentialTTL {
		v.errorf(join(p, "ttl"), "ttl must be between %s and %s, not %s", MinSessionCredentialTTL, MaxSessionCredentialTTL, sc.TTL)
	}
}

func (v *validator) command(p string, cmd []string) {
	if len(cmd) == 0 {
		v.errorf(p, "command is empty: write the program and its arguments, such as [\"warden\", \"demo-server\"]")
		return
	}
	if cmd[0] == "" {
		v.errorf(index(p, 0), "the program name is empty")
	}
	for i, arg := range cmd {
		if strings.IndexByte(arg, 0) >= 0 {
			v.errorf(index(p, i), "contains a NUL byte")
		}
		v.literal(index(p, i), arg)
	}
}

// literal reports an ${env:...} reference in a field where it would be taken
// literally.
func (v *validator) literal(p, s string) {
	if strings.Contains(s, "${env:") {
		v.errorf(p, "${env:NAME} is only expanded in env and headers values; here it would be used literally")
	}
}

// headersSetByWarden are the request headers the HTTP transport sets itself.
var headersSetByWarden = []string{
	"Accept", "Connection", "Content-Length", "Content-Type", "Host",
	"Keep-Alive", "Mcp-Protocol-Version", "Mcp-Session-Id", "Proxy-Connection",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func (v *validator) headers(p string, h map[string]string) {
	canonical := make(map[string]string)
	for _, name := range slices.Sorted(maps.Keys(h)) {
		hp := key(p, name)
		if !validHeaderName(name) {
			v.errorf(hp, "invalid header name %q", name)
			continue
		}
		c := textproto.CanonicalMIMEHeaderKey(name)
		if slices.Contains(headersSetByWarden, c) {
			v.errorf(hp, "header %q is set by warden's HTTP transport and cannot be configured", name)
		}
		if other, dup := canonical[c]; dup {
			v.errorf(hp, "header %q is also given as %q: header names are case-insensitive", name, other)
		}
		canonical[c] = name
		if hasCtl(h[name]) {
			v.errorf(hp, "value contains control characters")
		}
		if _, err := expand(h[name], nil); err != nil {
			v.errorf(hp, "%v", err)
		}
	}
}

// validHeaderName reports whether s is an HTTP field name (RFC 9110 token).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// checkListenAddr returns what is wrong with a listen address, or "".
func checkListenAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Sprintf("want host:port, such as %q, got %q", DefaultAddr, addr)
	}
	if msg := checkPort(port, 0); msg != "" {
		return msg
	}
	if host == "" {
		return "" // every interface
	}
	if strings.Contains(host, ":") {
		if net.ParseIP(host) == nil {
			return fmt.Sprintf("invalid IPv6 address %q", host)
		}
		return ""
	}
	if !validHostname(strings.ToLower(host)) {
		return fmt.Sprintf("invalid host %q", host)
	}
	return ""
}

// checkPort returns what is wrong with a decimal port at least minPort, or "".
func checkPort(port string, minPort int) string {
	n, err := strconv.Atoi(port)
	if err != nil || port != strconv.Itoa(n) || n < minPort || n > 65535 {
		return fmt.Sprintf("invalid port %q: want a number from %d to 65535", port, minPort)
	}
	return ""
}

// validHostname reports whether h is made of lower-case DNS name characters
// (which covers IPv4 addresses).
func validHostname(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// checkURLPath returns what is wrong with listen.path, or "".
func checkURLPath(p string) string {
	switch {
	case !strings.HasPrefix(p, "/"):
		return fmt.Sprintf("must start with '/', got %q", p)
	case strings.ContainsAny(p, "?#") || strings.IndexFunc(p, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return fmt.Sprintf("must be a plain URL path, without query, fragment, spaces or control characters; got %q", p)
	case path.Clean(p) != p:
		return fmt.Sprintf("must be a clean path (no trailing '/', \"//\", \".\" or \"..\"): did you mean %q?", path.Clean(p))
	}
	return ""
}

// checkHost returns what is wrong with an allowed_hosts entry, or "".
func checkHost(h string) string {
	switch {
	case h == "":
		return "empty host"
	case strings.Contains(h, "/"):
		return fmt.Sprintf("want host or host:port, without scheme or path; got %q", h)
	case strings.Contains(h, "*"):
		return fmt.Sprintf("wildcards are not supported; list each host (got %q)", h)
	case h != strings.ToLower(h):
		return fmt.Sprintf("write %q in lower case", h)
	}
	host := h
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		host = h[1 : len(h)-1]
	} else if strings.Contains(h, ":") {
		var port string
		var err error
		host, port, err = net.SplitHostPort(h)
		if err != nil {
			return fmt.Sprintf("want host or host:port, with an IPv6 address in brackets; got %q", h)
		}
		if msg := checkPort(port, 1); msg != "" {
			return msg
		}
	}
	if strings.Contains(host, ":") {
		if net.ParseIP(host) == nil {
			return fmt.Sprintf("invalid IPv6 address %q", host)
		}
		return ""
	}
	if !validHostname(host) {
		return fmt.Sprintf("invalid host %q", h)
	}
	return ""
}

// checkOrigin returns what is wrong with an allowed_origins entry, or "".
func checkOrigin(o string) string {
	switch {
	case o == "null":
		return "\"null\" is not allowed: it is the origin of sandboxed and local pages, which any web page can produce"
	case strings.Contains(o, "*"):
		return fmt.Sprintf("wildcards are not supported; list each origin (got %q)", o)
	case o != strings.ToLower(o):
		return fmt.Sprintf("write %q in lower case, as browsers send it", o)
	}
	u, err := url.Parse(o)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "" {
		return fmt.Sprintf("want scheme://host[:port], such as \"https://app.example.com\", got %q", o)
	}
	switch {
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return fmt.Sprintf("an origin is only scheme://host[:port], got %q", o)
	case u.Path == "/":
		return fmt.Sprintf("an origin has no path: drop the trailing '/' from %q", o)
	case u.Path != "":
		return fmt.Sprintf("an origin has no path, got %q", o)
	}
	if p := u.Port(); p != "" {
		if msg := checkPort(p, 1); msg != "" {
			return msg
		}
	}
	if h := u.Hostname(); !strings.Contains(h, ":") && !validHostname(h) {
		return fmt.Sprintf("invalid host %q", h)
	}
	return ""
}

// checkUpstreamURL returns what is wrong with an upstream's url, or "".
func checkUpstreamURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		if ue, ok := err.(*url.Error); ok {
			err = ue.Err
		}
		return fmt.Sprintf("invalid URL %q: %v", s, err)
	}
	switch {
	case u.Scheme == "" || u.Opaque != "":
		return fmt.Sprintf("URL %q must start with http:// or https://", s)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("URL scheme must be http or https, got %q", u.Scheme)
	case u.Host == "":
		return fmt.Sprintf("URL %q has no host", s)
	case u.User != nil:
		return "credentials in the URL are not allowed: send them in headers, with ${env:NAME} for the secret"
	case u.Fragment != "":
		return fmt.Sprintf("URL %q has a fragment, which is never sent to a server", s)
	}
	if p := u.Port(); p != "" {
		if msg := checkPort(p, 1); msg != "" {
			return msg
		}
	}
	return ""
}
