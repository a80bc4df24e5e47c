// Package config reads warden's configuration file.
//
// A file goes through three steps, and each reports every problem it finds
// rather than stopping at the first:
//
//	bytes ──► Default() ──► strict decode ──► Validate() ──► *Config
//	                         │                 │
//	                         └─► *Problems      └─► *Problems
//	          (unknown fields, wrong types,     (ranges, enums, URLs, names,
//	           duplicate keys, anchors, tags)    command xor url, patterns)
//
// Each key of the file is spelled once, as the yaml tag of its field in
// Config (schema.go lists the other tags the decoder reads). The decoder
// walks the YAML node tree itself instead of using yaml.Unmarshal, so it
// can reject what Unmarshal silently accepts: duplicate keys, anchors,
// aliases and merge keys, explicit tags, YAML 1.1 octals and booleans such
// as "yes", and a second document. Unquoted scalars read as
// strings keep their text exactly as written ("1.10" stays "1.10").
//
// Every problem is addressed by its path ("gateway.upstreams[2].url") and,
// when the Config came from a file, by line and column. Parsing has no side
// effects: it reads no environment variables and touches no files. Secrets
// are referenced as ${env:NAME} in env and headers values and expanded only
// when a transport asks for them (Upstream.ResolvedEnv, ResolvedHeaders).
//
// Typical use:
//
//	cfg, err := config.Load("warden.yaml")
//	if err != nil {
//		return err // one problem per line: "warden.yaml:7:10: gateway.listen.addr: ..."
//	}
//
// The file format is documented in docs/config.md.
package config

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"time"

	"github.com/agentwarden/warden/internal/policy"
	"github.com/agentwarden/warden/internal/secproc"
)

// Version is the only configuration file version this package reads.
const Version = 1

// Defaults for fields the file leaves out.
const (
	DefaultLogLevel           = "info"
	DefaultLogFormat          = "text"
	DefaultAddr               = "127.0.0.1:8787"
	DefaultPath               = "/mcp"
	DefaultMaxMessageBytes    = 4 << 20 // 4 MiB
	DefaultMaxDepth           = 64
	DefaultRequestTimeout     = 5 * time.Minute
	DefaultSessionIdleTimeout = 30 * time.Minute
	// DefaultDrainTimeout is how long a stopping gateway lets calls in
	// flight finish (gateway.limits.drain_timeout); MaxDrainTimeout bounds it.
	DefaultDrainTimeout    = 10 * time.Second
	MaxDrainTimeout        = 10 * time.Minute
	DefaultShutdownTimeout = 2 * time.Second
	// Defaults of the listener's bounds (gateway.limits): sessions
	// overall and per principal, live children per stdio upstream, and the
	// time a request's headers and body may take to arrive.
	DefaultMaxSessions             = 4096
	DefaultMaxSessionsPerPrincipal = 256
	DefaultMaxChildrenPerUpstream  = 64
	DefaultHeaderTimeout           = 10 * time.Second
	DefaultBodyTimeout             = 30 * time.Second
)

// Bounds on gateway.limits, inclusive.
const (
	MinMaxMessageBytes = 1 << 10 // 1 KiB
	MaxMaxMessageBytes = 64 << 20
	MinMaxDepth        = 2
	MaxMaxDepth        = 1000
	MaxMaxSessions     = 1000000
	MaxMaxChildren     = 10000
	MinReadTimeout     = time.Second // header_timeout and body_timeout
	MaxHeaderTimeout   = 5 * time.Minute
	MaxBodyTimeout     = time.Hour
)

// Transport names returned by Upstream.Transport.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
)

// Config is a whole configuration file. Build one with Load, with Parse and
// Validate, or in code starting from Default.
type Config struct {
	// Version is the file format version; it must be 1. Files must state it.
	Version   int             `yaml:"version"`
	Log       LogConfig       `yaml:"log"`
	Gateway   GatewayConfig   `yaml:"gateway"`
	Telemetry TelemetryConfig `yaml:"telemetry"`

	file string              // file name for problems; "" when built in code
	pos  map[string]position // path → where its value is in the file
	// text maps the path of a CEL expression to where each of its lines
	// starts in the file, when its lines are the file's text verbatim (a
	// plain or quoted scalar on one line, or a literal block), so that a
	// CEL error's position is a position in the file.
	text map[string][]position
}

// LogConfig configures warden's own log.
type LogConfig struct {
	// Level is "debug", "info", "warn" or "error".
	Level string `yaml:"level"`
	// Format is "text" or "json".
	Format string `yaml:"format"`
}

// SlogLevel returns Level as a slog.Level; it returns slog.LevelInfo for a
// level Validate would reject.
func (l LogConfig) SlogLevel() slog.Level {
	switch l.Level {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// GatewayConfig configures the MCP gateway: where it listens, what it
// accepts, and the upstream servers it fronts.
type GatewayConfig struct {
	Listen ListenConfig `yaml:"listen"`
	Limits LimitsConfig `yaml:"limits"`
	// Methods applies to every upstream and is checked before the upstream's
	// own Methods list.
	Methods List `yaml:"methods"`
	// DefaultUpstream names the upstream served at Listen.Path. When empty
	// and there is exactly one upstream, that one is served there; see
	// DefaultUpstreamName.
	DefaultUpstream string `yaml:"default_upstream"`
	// Upstreams are the MCP servers behind the gateway, each served at
	// Listen.Path + "/" + Name. A valid Config has at least one.
	Upstreams []Upstream `yaml:"upstreams" what:"upstreams"`
	// ZeroTrust configures the zero-trust stage for the upstreams whose
	// RequireToken lists tools.
	ZeroTrust ZeroTrustConfig `yaml:"zero_trust"`
	// Admin is the admin listener (approvals), separate from Listen.
	Admin AdminConfig `yaml:"admin"`
	// Audit is the hash-chained audit log of every message handled.
	Audit AuditConfig `yaml:"audit"`
	// Security is the security processor (internal/secproc).
	Security SecurityConfig `yaml:"security"`
	// Taint follows untrusted answer text into consequential requests
	// (AgentRFC CS). On unless disabled.
	Taint TaintConfig `yaml:"taint"`
	// Auth authenticates the listener's clients (AASM P1).
	Auth AuthConfig `yaml:"auth"`
	// Pinning pins every upstream's tool definitions (AASM P2).
	Pinning PinningConfig `yaml:"pinning"`
	// AGUI are the AG-UI agents served through the gateway, each at
	// /agui/<name> (see docs/agui.md).
	AGUI []AGUIUpstream `yaml:"agui" what:"AG-UI agents ({name, url, ...})"`
	// A2A are the A2A agents served through the gateway, each at
	// <listen.path>/../a2a/<name> (see docs/a2a.md).
	A2A []A2AUpstream `yaml:"a2a" what:"A2A agents ({name, url, ...})"`
}

// AGUIUpstream is one AG-UI agent behind the gateway. Headers values may
// reference secrets as ${env:NAME}.
type AGUIUpstream struct {
	Name         string            `yaml:"name"`
	URL          string            `yaml:"url"`
	Headers      map[string]string `yaml:"headers"`
	Actions      map[string]string `yaml:"actions"` // finding category → flag, quarantine or deny
	MaxHeldBytes int               `yaml:"max_held_bytes"`
}

// A2AUpstream is one A2A agent behind the gateway.
type A2AUpstream struct {
	Name    string `yaml:"name"`
	URL     string `yaml:"url"`      // the agent's JSON-RPC endpoint
	CardURL string `yaml:"card_url"` // "" means the well-known path on URL's origin
	Methods List   `yaml:"methods"`
	// AllowExtendedCard lets the authenticated extended card through
	// unverified (risky: see docs/a2a.md).
	AllowExtendedCard bool `yaml:"allow_extended_card"`
	// AllowInternalWebhooks lets push notification configs name webhooks
	// in the agent's own network (loopback, private, link-local): off, a
	// client cannot make the agent call them (docs/a2a.md).
	AllowInternalWebhooks bool `yaml:"allow_internal_webhooks"`
	// CardKeys are JWKS files of keys trusted to sign the agent card;
	// RequireSignedCard refuses an unsigned card.
	CardKeys          []string `yaml:"card_keys"`
	RequireSignedCard bool     `yaml:"require_signed_card"`
	// Delegation (AASM P3, INV-7).
	Delegation A2ADelegation `yaml:"delegation"`
	// RequireApproval are the methods (patterns) that need a person's
	// consent (AASM P5): each such request is held for approval
	// (zero_trust.hold_for_approval with the admin channel), or refused
	// where nothing can hold it.
	RequireApproval []Pattern `yaml:"require_approval"`
}

// A2ADelegation configures delegation-chain checks.
type A2ADelegation struct {
	Require bool   `yaml:"require"`
	Agent   string `yaml:"agent"`
	MaxHops int    `yaml:"max_hops"`
	// Roots maps a principal to the scopes it may delegate.
	Roots map[string][]string `yaml:"roots"`
	// Keys maps an issuer (principal or agent) to a JWKS file of the keys
	// its hops are signed with.
	Keys map[string]string `yaml:"keys"`
}

// PinningConfig configures tool pinning (internal/pin): a changed tool
// definition (a rug pull) is blocked until a person re-approves it.
type PinningConfig struct {
	Enabled bool `yaml:"enabled" present:"true"`
	// FirstUse is "pin" (trust the first definition seen) or "hold" (a new
	// tool waits for a person too).
	FirstUse string `yaml:"first_use"`
	// Store is "sqlite" (DATA_DIR/pins.db, or StorePath), "memory" or
	// "redis" (ZeroTrust.RedisURL, shared by every gateway on it; needs
	// ZeroTrust.Store "redis"). "" means redis when ZeroTrust.Store is
	// redis and StorePath is empty, else sqlite: see PinStore.
	Store     string `yaml:"store"`
	StorePath string `yaml:"store_path"`
	// Manifests are signed manifests (warden manifest sign) and the public
	// keys that may have signed them.
	Manifests []ManifestConfig `yaml:"manifests" what:"manifests ({file, keys})"`
}

// PinStore returns where the pins of g live: Pinning.Store when set;
// otherwise "redis" when the zero-trust state is in Redis (gateways that
// share it share their pins too) and no StorePath names a file; otherwise
// "sqlite".
func (g GatewayConfig) PinStore() string {
	switch {
	case g.Pinning.Store != "":
		return g.Pinning.Store
	case g.ZeroTrust.Store == StoreRedis && g.Pinning.StorePath == "":
		return StoreRedis
	}
	return StoreSQLite
}

// ManifestConfig is one signed manifest.
type ManifestConfig struct {
	File string   `yaml:"file"`
	Keys []string `yaml:"keys"`
}

// AuthConfig configures client authentication on the HTTP listener: OAuth
// 2.1 bearer JWTs from an issuer, local API keys, or both. When set, every
// request needs a credential, and the principal it names is whom each call
// acts for (zero-trust tokens are checked against it).
type AuthConfig struct {
	Issuer   string `yaml:"issuer"`
	Audience string `yaml:"audience"`
	JWKSURL  string `yaml:"jwks_url"`
	JWKSFile string `yaml:"jwks_file"`
	// SubjectClaim names the claim identifying the principal; "" is "sub".
	SubjectClaim string `yaml:"subject_claim"`
	// APIKeys maps a principal's name to the lowercase hex SHA-256 of its
	// key (warden keys api-key prints both).
	APIKeys map[string]string `yaml:"api_keys"`
}

// Enabled reports whether the listener authenticates clients.
func (a AuthConfig) Enabled() bool { return a.Issuer != "" || len(a.APIKeys) > 0 }

// ListenTLS is the listener's TLS: a certificate and key (PEM files), and
// optionally the CA (PEM) whose client certificates are required.
type ListenTLS struct {
	CertFile     string `yaml:"cert_file"`
	KeyFile      string `yaml:"key_file"`
	ClientCAFile string `yaml:"client_ca_file"`
}

// Enabled reports whether the listener serves HTTPS.
func (t ListenTLS) Enabled() bool { return t.CertFile != "" }

// TaintConfig configures taint tracking (internal/taint): text from a tool
// answer, a resource or an A2A agent's answer is untrusted, and a request
// that carries a copied run of it to a higher-tier tool, a sink tool or an
// A2A agent needs approval.
type TaintConfig struct {
	// Disabled turns tracking off (enabled: false).
	Disabled bool `yaml:"enabled" decode:"invert"`
	// Action is what a tainted request gets: "require_approval" (the
	// default: held for a person where the gateway holds calls, refused
	// where it cannot), "deny" or "flag" (relayed and recorded).
	Action string `yaml:"action"`
	// MinMatch is the shortest copied run that counts, in letters and
	// digits; 0 means 32.
	MinMatch int `yaml:"min_match"`
	// SinkTools are tools (patterns) that no untrusted text may reach
	// without approval, whatever their tier.
	SinkTools []Pattern `yaml:"sink_tools"`
	// TTL is how long an answer taints; 0 means one hour.
	TTL time.Duration `yaml:"ttl"`
}

// TaintActions are the values of gateway.taint.action.
var TaintActions = []string{"require_approval", "deny", "flag"}

// SecurityConfig configures the security processor: which categories it
// checks, what each finding does, and what is allowed.
type SecurityConfig struct {
	Enabled bool `yaml:"enabled" present:"true"`
	// Actions by category (file_access, command_injection, exfiltration,
	// privilege_escalation, prompt_injection): "deny", "require_approval",
	// "quarantine", "flag" or "off"; "" is the category's default.
	Actions        map[string]string `yaml:",inline" keys:"file_access command_injection exfiltration privilege_escalation prompt_injection" present:"{}"`
	AllowedRoots   []string          `yaml:"allowed_roots"`
	AllowedHosts   []string          `yaml:"allowed_hosts"`
	SensitivePaths []string          `yaml:"sensitive_paths"`
	Grants         []SecurityGrant   `yaml:"grants" what:"grants ({subject, upstream, tools, scopes})"`
	// Rules are custom rules: regular expressions and CEL expressions.
	Rules []SecurityRule `yaml:"rules" what:"rules ({name, category, pattern or when, severity, action})"`
}

// SecurityGrant is what a subject may do on an upstream.
type SecurityGrant struct {
	Subject  string   `yaml:"subject"`
	Upstream string   `yaml:"upstream"`
	Tools    []string `yaml:"tools"`
	Scopes   []string `yaml:"scopes"`
}

// SecurityRule is a custom rule of the security processor: a regular
// expression (Pattern) or a CEL expression (When), exactly one of them
// (see secproc.Rule).
type SecurityRule struct {
	Name     string `yaml:"name"`
	Category string `yaml:"category"`
	Pattern  string `yaml:"pattern"`
	When     string `yaml:"when" decode:"expr"`
	// Severity is "low", "medium", "high" or "critical"; "" is medium.
	Severity string `yaml:"severity"`
	// Action is "deny", "require_approval" or "flag"; "" is the
	// category's action. Quarantine is set for a category, not a rule.
	Action string `yaml:"action"`
}

// Quarantined reports whether category's action is "quarantine": what the
// processor finds of it in an upstream's answer is replaced by an inert
// marker, and the answer goes through; in a call it is only flagged.
func (s SecurityConfig) Quarantined(category secproc.Category) bool {
	return s.Actions[string(category)] == "quarantine"
}

// Processor returns the security processor's configuration and, joined,
// the problems found converting it, each as "field: message" (what is
// wrong is left at its zero value; secproc.Config.Validate reports the
// rest).
func (s SecurityConfig) Processor() (secproc.Config, error) {
	var c secproc.Config
	var errs []error
	for _, cat := range slices.Sorted(maps.Keys(s.Actions)) {
		a := s.Actions[cat]
		var p *secproc.Policy
		switch secproc.Category(cat) {
		case secproc.FileAccess:
			p = &c.FileAccess
		case secproc.CommandInjection:
			p = &c.CommandInjection
		case secproc.Exfiltration:
			p = &c.Exfiltration
		case secproc.PrivilegeEscalation:
			p = &c.PrivilegeEscalation
		case secproc.InjectedInstructions:
			p = &c.InjectedInstructions
		default:
			errs = append(errs, fmt.Errorf("%s: unknown category", cat))
			continue
		}
		switch a {
		case "":
		case "off":
			p.Disabled = true
		case "quarantine":
			p.Action = secproc.Flag // the gateway quarantines what is found in answers: see Quarantined
		default:
			act, err := secproc.ParseAction(a)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: action %q: want deny, require_approval, quarantine, flag or off", cat, a))
			}
			p.Action = act
		}
	}
	c.AllowedRoots, c.AllowedHosts, c.SensitivePaths = s.AllowedRoots, s.AllowedHosts, s.SensitivePaths
	for _, g := range s.Grants {
		c.Grants = append(c.Grants, secproc.Grant{Subject: g.Subject, Upstream: g.Upstream, Tools: g.Tools, Scopes: g.Scopes})
	}
	for i, r := range s.Rules {
		pr := secproc.Rule{Name: r.Name, Category: secproc.Category(r.Category), Pattern: r.Pattern, When: r.When}
		if r.Severity != "" {
			sev, err := secproc.ParseSeverity(r.Severity)
			if err != nil {
				errs = append(errs, fmt.Errorf("rules[%d].severity: severity %q: want low, medium, high or critical", i, r.Severity))
			}
			pr.Severity = sev
		}
		switch r.Action {
		case "":
		case "quarantine":
			errs = append(errs, fmt.Errorf("rules[%d].action: quarantine is set for a category, not a rule: set %s: quarantine, or give the rule deny, require_approval or flag", i, r.Category))
		default:
			act, err := secproc.ParseAction(r.Action)
			if err != nil {
				errs = append(errs, fmt.Errorf("rules[%d].action: action %q: want deny, require_approval or flag", i, r.Action))
			}
			pr.Action = act
		}
		c.Rules = append(c.Rules, pr)
	}
	return c, errors.Join(errs...)
}

// AuditConfig configures the gateway's audit log (internal/audit). With it
// enabled, every message the gateway handles is recorded before it leaves,
// and a message whose record cannot be written does not go through.
type AuditConfig struct {
	Enabled bool `yaml:"enabled" present:"true"`
	// Backend is "jsonl" (the group-commit file) or "sqlite"; "" (the
	// default) is jsonl, except that an existing SQLite log at the path
	// goes on as sqlite (audit.KindAuto).
	Backend string `yaml:"backend"`
	// Path is the log file; "" means DATA_DIR/audit.jsonl (audit.db for
	// sqlite, and for the default backend when DATA_DIR/audit.db exists),
	// DATA_DIR being zero_trust.data_dir or the default data dir.
	Path string `yaml:"path"`
	// SigningKey is the private audit key (a JWK file, `warden keys
	// audit`) that signs checkpoints; "" writes none, and the log can then
	// be rewritten by anyone who can write its file without verify seeing
	// it.
	SigningKey string `yaml:"signing_key"`
	// CheckpointEvery is how many records may follow a checkpoint; 0
	// means audit.DefaultCheckpointEvery (1000).
	CheckpointEvery int `yaml:"checkpoint_every"`
	// CheckpointInterval is how long records may wait unattested; 0 means
	// audit.DefaultCheckpointInterval (10s).
	CheckpointInterval time.Duration `yaml:"checkpoint_interval"`
	// Witness is a file that also receives every checkpoint (one JSON
	// line each), and WitnessURL an http(s) URL each is POSTed to.
	Witness    string `yaml:"witness"`
	WitnessURL string `yaml:"witness_url"`
}

// TelemetryConfig configures spans and OCSF events (internal/telemetry).
type TelemetryConfig struct {
	// Conventions are the attribute names emitted: "aitf" and/or "otel";
	// empty means both.
	Conventions []string `yaml:"conventions"`
	// Capture is how tool inputs and outputs appear in spans and events:
	// "redacted" (default: secrets masked, 4 KiB cap), "capped", "full",
	// "hash" or "off".
	Capture string `yaml:"capture"`
	// Propagate adds warden's trace context to forwarded requests'
	// params._meta (default true).
	Propagate bool `yaml:"propagate"`
	// Metrics serves Prometheus metrics at /metrics on the listener.
	Metrics bool `yaml:"metrics"`
	// Spans is where spans go: exporter "none" (default), "jsonl" (to
	// Path), "stdout", "otlp" (OTLP over HTTP to Endpoint, a URL) or
	// "otlp-grpc" (OTLP over gRPC to Endpoint, host:port or a URL).
	Spans ExporterConfig `yaml:"spans" present:"{exporter: jsonl}"`
	// OCSF is where OCSF events go: exporter "none" (default), "jsonl"
	// (to Path) or "http" (POSTed to Endpoint), in Profile "standard"
	// (default) or "aitf".
	OCSF ExporterConfig `yaml:"ocsf" present:"{exporter: jsonl}"`
}

// ExporterConfig is one telemetry destination.
type ExporterConfig struct {
	Exporter string `yaml:"exporter"`
	Path     string `yaml:"path"`
	Endpoint string `yaml:"endpoint"`
	Profile  string `yaml:"profile"`
}

// Telemetry exporters, capture modes and OCSF profiles.
var (
	SpanExporters = []string{"none", "jsonl", "stdout", "otlp", "otlp-grpc"}
	OCSFExporters = []string{"none", "jsonl", "http"}
	CaptureModes  = []string{"redacted", "capped", "full", "hash", "off"}
	OCSFProfiles  = []string{"standard", "aitf"}
	Conventions   = []string{"aitf", "otel"}
)

// AdminConfig is warden's admin listener: the approval API that warden
// approve talks to. It answers loopback Host names only.
type AdminConfig struct {
	// Addr is where it listens; default 127.0.0.1:8788. Started only when
	// calls can be held for approval.
	Addr string `yaml:"addr"`
	// ConfirmLevels are the classification levels (1..5) whose calls the
	// console approves only after the approver types the first 6
	// characters of the parameters_hash. nil means [1, 2, 3], the levels of
	// Tier 2 and above; an empty list turns the gesture off (risk: one
	// click approves any call).
	ConfirmLevels []int `yaml:"confirm_levels" what:"classification levels"`
	// Approvers is the two-person rule: for a classification level, how
	// many distinct approvers (2..10) must approve a call of that level
	// before it runs. Levels not listed need one.
	Approvers map[int]int `yaml:"approvers" decode:"approvers"`
	// Webhook, when its URL is set, is told of each call that starts
	// waiting for approval.
	Webhook WebhookConfig `yaml:"webhook"`
	// OIDC, when its ClientID is set, lets operators log in to the console
	// through gateway.auth.issuer (authorization code with PKCE).
	OIDC AdminOIDC `yaml:"oidc"`
}

// AdminOIDC is the console's client at the OIDC issuer of gateway.auth.
type AdminOIDC struct {
	ClientID string `yaml:"client_id"`
	// ClientSecretFile holds the secret of a confidential client; "" for
	// a public client.
	ClientSecretFile string `yaml:"client_secret_file"`
	// RedirectURL is the callback registered at the issuer; "" means
	// http://<admin.addr>/console/oidc/callback.
	RedirectURL string `yaml:"redirect_url"`
}

// WebhookConfig announces held calls (internal/console, StartWebhook).
type WebhookConfig struct {
	// URL receives one POST per held call: http or https, no credentials.
	URL string `yaml:"url"`
	// Slack sends a Slack-compatible {"text": ...} body instead of JSON.
	Slack bool `yaml:"slack"`
	// ConsoleURL is the console as people open it, for the link to each
	// call; "" means http://<admin.addr>.
	ConsoleURL string `yaml:"console_url"`
}

// DefaultAdminAddr is the admin listener's default address.
const DefaultAdminAddr = "127.0.0.1:8788"

// ZeroTrustConfig configures the Zero-Trust Tool Invocation Standard: where
// the signing keys live, where used token ids are recorded, and whom calls
// act for.
type ZeroTrustConfig struct {
	// DataDir holds the key ring (DataDir/keys) and, for the sqlite store,
	// the state file. "" means the platform default ($WARDEN_DATA_DIR, else
	// the user's data directory).
	DataDir string `yaml:"data_dir"`
	// Store records used token ids: "sqlite" (default, durable), "memory"
	// (lost on restart: a token could be replayed after one) or "redis"
	// (shared by several gateways).
	Store string `yaml:"store"`
	// StorePath is the sqlite file; "" means DataDir/state.db.
	StorePath string `yaml:"store_path"`
	// RedisURL is the Redis server for Store "redis" (redis://, rediss://
	// or unix://).
	RedisURL string `yaml:"redis_url"`
	// Subject is the principal every call acts for, compared with a token's
	// sub. Required while warden does not authenticate clients itself.
	Subject string `yaml:"subject"`
	// Skew is the clock tolerance for a token's nbf and exp; 0..60s.
	Skew time.Duration `yaml:"skew"`
	// StoreTimeout is the longest each consumption of a token's or a DPoP
	// proof's id waits for Store; 10ms..30s. Past it the call is refused
	// (store-timeout) and the token counts as used on this gateway.
	StoreTimeout time.Duration `yaml:"store_timeout"`
	// Audience and Issuer are what tokens must carry; "" means warden's
	// defaults ("warden-gateway", "warden").
	Audience string `yaml:"audience"`
	Issuer   string `yaml:"issuer"`
	// Persona, if set, is the CoSAI-RM persona a token's presenter must hold
	// (the standard's step 3a), e.g. personaAgenticProvider; tokens must
	// carry it. Tokens warden issues on approval carry it.
	Persona string `yaml:"persona"`
	// RequireDPoP refuses tokens that are not bound to a DPoP key (cnf.jkt).
	// Tokens that are bound always need a valid proof.
	RequireDPoP bool `yaml:"require_dpop"`
	// HoldForApproval holds a call that needs a token but has none until a
	// person approves it through the admin API (warden approve); warden then
	// issues the token itself. Without it such a call is refused.
	HoldForApproval bool `yaml:"hold_for_approval"`
	// ApprovalTimeout is how long a held call waits; 0 means 5 minutes.
	ApprovalTimeout time.Duration `yaml:"approval_timeout"`
	// Classification rules give tool calls a data classification level,
	// 1 (most sensitive) to 5; the level selects the tier of the standard
	// whose requirements are enforced (internal/policy). A classified call
	// always needs a token.
	Classification []ClassRule `yaml:"classification" what:"rules ({level, when, name})"`
	// ApprovalChannels are who may decide on a held call: ApprovalAdmin (an
	// operator, through the admin API: warden approve, the console) and
	// ApprovalElicitation (the client's own user, asked through MCP
	// elicitation). Empty means [admin]. The first decision wins.
	ApprovalChannels []string `yaml:"approval_channels"`
	// ClientKeys pins, per subject, the file of the public JWK whose
	// signatures Tier 3 tools require.
	ClientKeys map[string]string `yaml:"client_keys"`
	// PublicURL is how clients reach the listener (scheme and host, e.g.
	// https://gw.example.com), for the htu of DPoP proofs; "" means
	// http://<listen.addr>. It is configured, never taken from a client's
	// Host header.
	PublicURL string `yaml:"public_url"`
}

// ClassRule is one classification rule: when the CEL expression When is
// true for a call, the call has at least classification Level.
type ClassRule struct {
	Name  string `yaml:"name"`
	Level int    `yaml:"level"`
	When  string `yaml:"when"`
}

// Mandate is one pre-approved invocation. Arguments is JSON text (not YAML),
// so that exactly what is written is what gets hashed.
type Mandate struct {
	Tool      string `yaml:"tool"`
	Arguments string `yaml:"arguments"`
}

// Approval channels.
const (
	ApprovalAdmin       = "admin"
	ApprovalElicitation = "elicitation"
)

// PolicyRules returns the classification rules for policy.NewClassifier.
func (z ZeroTrustConfig) PolicyRules() []policy.Rule {
	rules := make([]policy.Rule, len(z.Classification))
	for i, r := range z.Classification {
		rules[i] = policy.Rule{Name: r.Name, Level: r.Level, When: r.When}
	}
	return rules
}

// Channel reports whether held calls may be decided through channel.
func (z ZeroTrustConfig) Channel(channel string) bool {
	if len(z.ApprovalChannels) == 0 {
		return channel == ApprovalAdmin
	}
	return slices.Contains(z.ApprovalChannels, channel)
}

// Zero-trust stores.
const (
	StoreSQLite = "sqlite"
	StoreMemory = "memory"
	StoreRedis  = "redis"
)

// Personas are the CoSAI-RM personas of the Zero-Trust Tool Invocation
// Standard.
var Personas = []string{"personaEndUser", "personaApplicationDeveloper", "personaPlatformProvider",
	"personaAgenticProvider", "personaModelServing", "personaGovernance", "personaModelProvider", "personaModelConsumer"}

// DefaultSkew is the default clock tolerance for tokens.
const DefaultSkew = 5 * time.Second

// DefaultStoreTimeout is how long a consumption waits for the replay store
// by default, and MinStoreTimeout..MaxStoreTimeout the range allowed.
const (
	DefaultStoreTimeout = 500 * time.Millisecond
	MinStoreTimeout     = 10 * time.Millisecond
	MaxStoreTimeout     = 30 * time.Second
)

// RequiresTokens reports whether any upstream requires zero-trust tokens.
func (g GatewayConfig) RequiresTokens() bool {
	if len(g.ZeroTrust.Classification) > 0 {
		return true
	}
	for _, u := range g.Upstreams {
		if len(u.RequireToken.Allow) > 0 || len(u.RequireSignature.Allow) > 0 {
			return true
		}
	}
	return false
}

// DefaultUpstreamName returns the name of the upstream served at
// Listen.Path: DefaultUpstream when set, else the only upstream's name when
// there is exactly one, else "".
func (g GatewayConfig) DefaultUpstreamName() string {
	if g.DefaultUpstream != "" {
		return g.DefaultUpstream
	}
	if len(g.Upstreams) == 1 {
		return g.Upstreams[0].Name
	}
	return ""
}

// Upstream returns the upstream called name.
func (g GatewayConfig) Upstream(name string) (Upstream, bool) {
	for _, u := range g.Upstreams {
		if u.Name == name {
			return u, true
		}
	}
	return Upstream{}, false
}

// ListenConfig says where the gateway's Streamable HTTP endpoint listens and
// which requests it accepts as coming from a legitimate client.
type ListenConfig struct {
	// Addr is host:port. Port 0 picks a free port. A host that is not a
	// loopback address exposes the gateway to the network; it is allowed, and
	// the CLI warns (see Loopback).
	Addr string `yaml:"addr"`
	// Path is the URL path of the default upstream; upstream NAME is served
	// at Path + "/" + NAME. It starts with '/' and is clean (no trailing '/',
	// no "//", "." or ".." segments).
	Path string `yaml:"path"`
	// AllowedHosts are Host header values accepted besides the listen
	// address itself and the loopback names: "host" or "host:port", lower
	// case.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// AllowedOrigins are Origin header values accepted from browsers:
	// "scheme://host[:port]", lower case, no path.
	AllowedOrigins []string `yaml:"allowed_origins"`
	// InsecureDisableHostCheck turns off the Host and Origin checks that
	// protect a local gateway from DNS-rebinding attacks, in which a web page
	// the user visits sends requests to the gateway and drives the upstream
	// tools. Only turn it off behind a proxy that does these checks itself.
	InsecureDisableHostCheck bool `yaml:"insecure_disable_host_check"`
	// TLS serves the listener over HTTPS; with ClientCAFile, every client
	// must present a certificate that CA issued (mutual TLS, AASM P1).
	TLS ListenTLS `yaml:"tls"`
}

// Loopback reports whether Addr's host is a loopback address or "localhost",
// that is, whether the gateway is reachable only from this machine. An empty
// host (":8787") listens on every interface and is not loopback.
func (l ListenConfig) Loopback() bool {
	host, _, err := net.SplitHostPort(l.Addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// LimitsConfig bounds what one client can make the gateway do.
type LimitsConfig struct {
	// MaxMessageBytes is the largest JSON-RPC message accepted, in bytes.
	MaxMessageBytes int `yaml:"max_message_bytes"`
	// MaxDepth is the deepest JSON nesting accepted.
	MaxDepth int `yaml:"max_depth"`
	// RequestTimeout bounds the wait for an upstream's response.
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// SessionIdleTimeout closes a client session after this long without
	// traffic.
	SessionIdleTimeout time.Duration `yaml:"session_idle_timeout"`
	// DrainTimeout is how long a stopping gateway (SIGTERM, SIGINT) lets
	// calls in flight finish before it answers them with -32035, rule
	// shutdown; 0 answers them at once.
	DrainTimeout time.Duration `yaml:"drain_timeout"`

	// MaxSessions bounds the client sessions of the HTTP listener, all
	// upstreams together; a stateless request counts while in flight.
	MaxSessions int `yaml:"max_sessions"`
	// MaxSessionsPerPrincipal bounds them per authenticated client
	// (gateway.auth), or per client IP address without authentication.
	MaxSessionsPerPrincipal int `yaml:"max_sessions_per_principal"`
	// MaxChildrenPerUpstream bounds the live child processes of each stdio
	// upstream, one per stateful HTTP session (the child that stateless
	// requests share is not counted).
	MaxChildrenPerUpstream int `yaml:"max_children_per_upstream"`
	// HeaderTimeout and BodyTimeout bound the time an HTTP request's
	// headers, then its body, may take to arrive. Neither bounds a
	// response: an SSE stream may last.
	HeaderTimeout time.Duration `yaml:"header_timeout"`
	BodyTimeout   time.Duration `yaml:"body_timeout"`
}

// Upstream is one MCP server behind the gateway, reached either by running
// Command (stdio) or at URL (Streamable HTTP); a valid Upstream has exactly
// one of the two.
type Upstream struct {
	// Name identifies the upstream in URLs, logs and audit records:
	// [a-z0-9][a-z0-9_-]{0,62}, unique in the file.
	Name string `yaml:"name"`

	// Command is the program and its arguments (stdio only). No shell is
	// involved.
	Command []string `yaml:"command"`
	// Env sets variables in the child's environment (stdio only). Values may
	// contain ${env:NAME} references; see ResolvedEnv.
	Env map[string]string `yaml:"env"`
	// PassEnv names the variables copied from warden's own environment into
	// the child's (stdio only). nil means the transport's default set; an
	// empty, non-nil list passes nothing.
	PassEnv []string `yaml:"pass_env"`
	// Dir is the child's working directory (stdio only); empty means
	// warden's. A relative Dir is relative to warden's working directory, not
	// to the config file.
	Dir string `yaml:"dir"`

	// URL is the server's Streamable HTTP endpoint, http or https (HTTP only).
	URL string `yaml:"url"`
	// Headers are sent with every request to URL (HTTP only). Values may
	// contain ${env:NAME} references; see ResolvedHeaders. warden never
	// forwards the client's own Authorization header upstream; credentials
	// for the upstream belong here.
	Headers map[string]string `yaml:"headers"`

	// ShutdownTimeout bounds a graceful shutdown of the connection (for
	// stdio: closing stdin and waiting for the child before killing it).
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// Methods limits the JSON-RPC methods a client may call on this upstream,
	// after the gateway-wide list.
	Methods List `yaml:"methods"`
	// Tools limits tools/call by tool name.
	Tools List `yaml:"tools"`
	// RequireToken lists (in Allow) the tools whose calls need a zero-trust
	// token bound to the caller, the tool and the exact arguments.
	RequireToken List `yaml:"require_token" decode:"allowlist"`
	// Mandates are pre-approved invocations (binding mode B, "pre-defined"):
	// a call whose tool and canonical arguments equal a mandate's gets a
	// token from warden itself, bound to exactly those arguments.
	Mandates []Mandate `yaml:"mandates" what:"mandates"`
	// RequireSignature lists (in Allow) the tools that also need the
	// client's signature by a key pinned in zero_trust.client_keys (Tier 3).
	// They need a token too.
	RequireSignature List `yaml:"require_signature" decode:"allowlist"`
	// SessionCredential, if set (HTTP only), gives each client session its
	// own upstream credential: a short-lived JWT that warden signs with its
	// zero-trust key ring and revokes when the session closes (AASM P8).
	SessionCredential *SessionCredential `yaml:"session_credential"`
}

// SessionCredential configures the per-session upstream credential of an
// HTTP upstream (gateway.upstreams[].session_credential).
type SessionCredential struct {
	// Header carries the credential: "Authorization" (the default) as
	// "Bearer <jwt>", any other header as the bare JWT.
	Header string `yaml:"header"`
	// TTL is the credential's lifetime (default DefaultSessionCredentialTTL);
	// warden renews it, for a session still open, once half of it has passed.
	TTL time.Duration `yaml:"ttl"`
}

// Bounds and defaults of session_credential.
const (
	DefaultSessionCredentialHeader = "Authorization"
	DefaultSessionCredentialTTL    = 10 * time.Minute
	MinSessionCredentialTTL        = 30 * time.Second
	MaxSessionCredentialTTL        = time.Hour
)

// setDefaults gives a session_credential its defaults, before the decoder
// reads it.
func (s *SessionCredential) setDefaults() {
	s.Header, s.TTL = DefaultSessionCredentialHeader, DefaultSessionCredentialTTL
}

// SessionCredentials reports whether any upstream has a session_credential
// (it needs the zero-trust key ring and revocation registry).
func (g GatewayConfig) SessionCredentials() bool {
	for _, u := range g.Upstreams {
		if u.SessionCredential != nil {
			return true
		}
	}
	return false
}

// Transport returns TransportStdio for an upstream with a Command,
// TransportHTTP for one with a URL, and "" for one with neither (which
// Validate rejects).
func (u Upstream) Transport() string {
	switch {
	case u.Command != nil:
		return TransportStdio
	case u.URL != "":
		return TransportHTTP
	}
	return ""
}

// Default returns a Config holding every default and no upstreams. Parse
// starts from it, except that a file must state its version.
func Default() *Config {
	return &Config{
		Version: Version,
		Log:     LogConfig{Level: DefaultLogLevel, Format: DefaultLogFormat},
		Gateway: GatewayConfig{
			Listen: ListenConfig{Addr: DefaultAddr, Path: DefaultPath},
			Limits: LimitsConfig{
				MaxMessageBytes:    DefaultMaxMessageBytes,
				MaxDepth:           DefaultMaxDepth,
				RequestTimeout:     DefaultRequestTimeout,
				SessionIdleTimeout: DefaultSessionIdleTimeout,
				DrainTimeout:       DefaultDrainTimeout,

				MaxSessions:             DefaultMaxSessions,
				MaxSessionsPerPrincipal: DefaultMaxSessionsPerPrincipal,
				MaxChildrenPerUpstream:  DefaultMaxChildrenPerUpstream,
				HeaderTimeout:           DefaultHeaderTimeout,
				BodyTimeout:             DefaultBodyTimeout,
			},
			ZeroTrust: ZeroTrustConfig{Store: StoreSQLite, Skew: DefaultSkew, StoreTimeout: DefaultStoreTimeout},
			Admin:     AdminConfig{Addr: DefaultAdminAddr},
			Audit:     AuditConfig{},
		},
		Telemetry: TelemetryConfig{Capture: "redacted", Propagate: true,
			Spans: ExporterConfig{Exporter: "none"}, OCSF: ExporterConfig{Exporter: "none", Profile: "standard"}},
	}
}

// NewUpstream returns an entry of gateway.upstreams holding every default,
// as the file decoder starts each one (and warden gateway --stdio its own).
func NewUpstream() Upstream {
	return Upstream{ShutdownTimeout: DefaultShutdownTimeout}
}

// setDefaults gives a new entry of gateway.upstreams its defaults, before
// the decoder reads it.
func (u *Upstream) setDefaults() { *u = NewUpstream() }

// Load reads the file at path, parses it and validates the result. On a
// problem in the file it returns a nil Config and a *Problems listing every
// problem of the first failing step (decode, then validate).
func Load(path string) (*Config, error) {
	cfg, err := Read(path)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Read reads and parses the file at path without validating it: for a
// caller that completes the configuration first (warden gateway --stdio
// puts its command in place of the file's upstreams) and then validates it.
func Read(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return Parse(data, path)
}

// Parse decodes data, a YAML configuration file, on top of Default. filename
// is used only in problem reports. It does not validate the result: call
// Validate (Load does both). On decode problems it returns a nil Config and a
// *Problems listing all of them.
func Parse(data []byte, filename string) (*Config, error) {
	c := Default()
	c.Version = 0 // a file must say which version it is
	c.file = filename
	c.pos = make(map[string]position)
	c.text = make(map[string][]position)
	d := &decoder{file: filename, pos: c.pos, text: c.text}
	d.decodeFile(data, c)
	if len(d.probs) > 0 {
		slices.SortStableFunc(d.probs, func(a, b Problem) int {
			return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
		})
		return nil, &d.probs
	}
	return c, nil
}
