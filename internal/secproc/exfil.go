package secproc

import (
	"net"
	"net/url"
	"regexp"
	"strings"
)

// destinationKeys are member names whose values are destinations.
var destinationKeys = map[string]bool{
	"url": true, "uri": true, "endpoint": true, "webhook": true, "webhook_url": true, "callback": true,
	"callback_url": true, "host": true, "hostname": true, "domain": true, "server": true, "remote": true,
	"to": true, "cc": true, "bcc": true, "recipient": true, "recipients": true, "email": true,
	"address": true, "target": true, "dest": true, "destination": true, "link": true, "href": true,
	"repo_url": true, "origin": true, "proxy": true, "base_url": true, "reply_to": true,
}

var (
	urlRe   = regexp.MustCompile(`(?i)\b(?:https?|ftp|wss?|sftp|ssh|git|gopher|ldap)://[^\s"'<>` + "`" + `]+`)
	emailRe = regexp.MustCompile(`[A-Za-z0-9._%+-]+@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})\b`)
	hostRe  = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+\.?(:\d{1,5})?$`)
	// data-like: a long run of base64 or hex, as an encoded payload would be.
	dataLike = regexp.MustCompile(`[A-Za-z0-9+/_=-]{32,}`)
)

// knownDrops are services commonly used to receive exfiltrated data; a URL
// to one is reported even in prose.
var knownDrops = []string{
	"webhook.site", "requestbin", "pipedream.net", "ngrok.io", "ngrok-free.app", "ngrok.app",
	"burpcollaborator.net", "oastify.com", "interact.sh", "pastebin.com", "transfer.sh",
	"hastebin", "termbin.com", "beeceptor.com", "mockbin", "requestcatcher.com", "canarytokens",
}

// destination is a host a string names.
type destination struct {
	host       string // lower-cased; "" if the URL does not parse
	raw        string
	start, end int
	payload    bool // the URL carries a data-like query or path
}

// extractDestinations returns the destinations in v. In free text only
// URLs count; in other fields, e-mail addresses too, and in destination
// fields (bare) a value that is a host name or an IP address.
func extractDestinations(v string, prose, destField bool) []destination {
	var out []destination
	for _, loc := range urlRe.FindAllStringIndex(v, 16) {
		raw := strings.TrimRight(v[loc[0]:loc[1]], ".,;:)]}")
		d := destination{raw: raw, start: loc[0], end: loc[0] + len(raw)}
		d.host, d.payload = parseURLHost(raw)
		out = append(out, d)
	}
	if prose {
		return out
	}
	for _, m := range emailRe.FindAllStringSubmatchIndex(v, 16) {
		if insideAny(m[0], out) {
			continue
		}
		out = append(out, destination{host: strings.ToLower(v[m[2]:m[3]]), raw: v[m[0]:m[1]], start: m[0], end: m[1]})
	}
	if len(out) == 0 && destField {
		t := strings.TrimSpace(v)
		if hostRe.MatchString(t) || net.ParseIP(t) != nil {
			h := t
			if hh, _, err := net.SplitHostPort(t); err == nil {
				h = hh
			}
			out = append(out, destination{host: strings.TrimSuffix(strings.ToLower(h), "."), raw: t, start: 0, end: len(v)})
		}
	}
	return out
}

func insideAny(i int, ds []destination) bool {
	for _, d := range ds {
		if i >= d.start && i < d.end {
			return true
		}
	}
	return false
}

// parseURLHost returns the host of a URL ("" if it does not parse cleanly:
// backslashes and the like are how parser differentials start) and whether
// it carries a data-like payload.
func parseURLHost(raw string) (host string, payload bool) {
	if strings.ContainsAny(raw, `\`) {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", false
	}
	host = strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	payload = dataLike.MatchString(u.RawQuery) || dataLike.MatchString(u.Fragment)
	return host, payload
}

// hostList is the allowlist of destinations.
type hostList struct {
	exact    map[string]bool
	suffixes []string // ".example.com"
}

func newHostList(hosts []string) hostList {
	hl := hostList{exact: map[string]bool{}}
	for _, h := range hosts {
		h = strings.ToLower(strings.TrimSuffix(h, "."))
		if s, ok := strings.CutPrefix(h, "*."); ok {
			hl.suffixes = append(hl.suffixes, "."+s)
			continue
		}
		hl.exact[h] = true
	}
	return hl
}

func (hl hostList) empty() bool { return len(hl.exact) == 0 && len(hl.suffixes) == 0 }

func (hl hostList) allows(host string) bool {
	if host == "" {
		return false
	}
	if hl.exact[host] {
		return true
	}
	for _, s := range hl.suffixes {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

func knownDrop(host string) bool {
	for _, d := range knownDrops {
		if strings.Contains(host, d) {
			return true
		}
	}
	return false
}

// sendWords in a tool's name say that it sends data somewhere.
var sendWords = []string{"send", "post", "upload", "mail", "publish", "share", "webhook", "http", "notify",
	"message", "tweet", "gist", "push", "export", "transfer", "submit", "forward", "sync", "paste", "slack"}

func sendTool(name string) bool {
	n := strings.ToLower(name)
	for _, w := range sendWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// credentialKey reports member names that hold a credential on purpose (a
// login's password): a secret there is not a leak by itself.
func credentialKey(k string) bool {
	for _, w := range []string{"password", "passwd", "token", "secret", "api_key", "apikey", "credential", "authorization", "private_key"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// exfiltration checks destinations and secrets in tool calls, secrets in
// outputs, and read-then-send.
func (p *Processor) exfiltration(in *input, fs *findings) {
	on := p.on(Exfiltration)
	switch in.ev.Kind {
	case KindToolResult, KindResource, KindPrompt:
		for _, s := range in.content {
			for _, m := range findSecrets(s.value) {
				p.sessions.taint(in.ev, "output held a "+m.kind, m.value)
				if on {
					fs.add(Finding{Category: Exfiltration, Rule: "exfiltration/secret-in-output", Severity: High,
						Message: "output contains a " + m.kind, Evidence: secretEvidence(m), Path: s.path, Confidence: confidenceOf(m)})
				}
			}
		}
	case KindToolCall:
		if on {
			p.callExfiltration(in, fs)
		}
	}
}

func secretEvidence(m secretMatch) string {
	keep := min(4, len(m.value))
	if m.kind == "private-key" {
		return m.value
	}
	return m.kind + ": " + m.value[:keep] + "[redacted]"
}

func confidenceOf(m secretMatch) float64 {
	if m.kind == "secret-assignment" || m.kind == "url-credentials" {
		return 0.7
	}
	return 0.95
}

func (p *Processor) callExfiltration(in *input, fs *findings) {
	reason, fps, tainted := p.sessions.lookup(in.ev)
	sends := sendTool(in.ev.Tool)
	for _, s := range in.args {
		prose := freeText(s.key)
		destKey := destinationKeys[s.key]
		for _, d := range extractDestinations(s.value, prose && !destKey, destKey) {
			if d.host != "" && p.hosts.allows(d.host) {
				sends = sends || destKey
				continue
			}
			rule, msg := "", ""
			switch {
			case d.host != "" && knownDrop(d.host):
				rule, msg = "known-drop", "destination is a data-collection service: "+d.host
			case prose && !destKey && !d.payload && net.ParseIP(d.host) == nil:
				continue // a link in prose
			case p.hosts.empty():
				if d.payload || net.ParseIP(d.host) != nil && !strings.HasPrefix(d.raw, "mailto") && d.host != "" {
					rule, msg = "payload-url", "URL carries an encoded payload or names a raw IP"
				}
			case d.host == "":
				rule, msg = "unparseable-destination", "destination URL does not parse cleanly"
			default:
				rule, msg = "destination-not-allowed", "destination not on the allowlist: "+d.host
			}
			sends = true
			if rule != "" {
				fs.add(Finding{Category: Exfiltration, Rule: "exfiltration/" + rule, Severity: High, Message: msg,
					Evidence: excerpt(s.value, d.start, d.end), Path: s.path, Confidence: 0.85})
			}
		}
		if !credentialKey(s.key) {
			for _, m := range findSecrets(s.value) {
				if m.kind == "secret-assignment" || m.kind == "url-credentials" || m.kind == "slack-webhook" && destKey {
					continue // a webhook URL is where its own messages go
				}
				fs.add(Finding{Category: Exfiltration, Rule: "exfiltration/secret-in-arguments", Severity: Critical,
					Message: "call sends a " + m.kind, Evidence: secretEvidence(m), Path: s.path, Confidence: 0.9})
			}
		}
		if tainted && len(fps) > 0 && replays(s.value, fps) {
			fs.add(Finding{Category: Exfiltration, Rule: "exfiltration/secret-replay", Severity: Critical,
				Message: "call sends a secret this session read earlier", Evidence: "[redacted]", Path: s.path, Confidence: 0.95})
		}
	}
	if tainted && sends {
		fs.add(Finding{Category: Exfiltration, Rule: "exfiltration/read-then-send", Severity: High,
			Message:  "session read sensitive data (" + reason + ") and now sends data out through " + in.ev.Tool,
			Evidence: in.ev.Tool, Path: "tool", Confidence: 0.75})
	}
}

// replays reports whether v contains, as a token, a secret whose
// fingerprint is in fps.
func replays(v string, fps []uint64) bool {
	for _, tok := range strings.FieldsFunc(v, func(r rune) bool {
		return r == ' ' || r == '\n' || r == '\t' || r == '"' || r == '\'' || r == '=' || r == ':' || r == ',' || r == '&' || r == '?'
	}) {
		if len(tok) < 8 {
			continue
		}
		fp := fingerprint(tok)
		for _, f := range fps {
			if f == fp {
				return true
			}
		}
	}
	return false
}
