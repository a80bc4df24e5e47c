package secproc

import (
	"encoding/json"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// adminToolWords in a tool's name say that it changes who may do what.
var adminToolWords = []string{"sudo", "set_role", "assign_role", "grant_role", "add_role", "grant_permission",
	"grant_access", "elevate", "escalate", "impersonate", "make_admin", "add_admin", "create_admin",
	"promote", "set_permission", "chmod", "setuid", "change_owner", "chown", "run_as_root", "become_",
	"add_to_group", "add_group_member", "assume_role"}

func adminTool(name string) bool {
	n := strings.ToLower(name)
	for _, w := range adminToolWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// roleKeys are member names whose values are roles or permissions.
var roleKeys = map[string]bool{
	"role": true, "roles": true, "permission": true, "permissions": true, "privilege": true,
	"privileges": true, "access_level": true, "group": true, "groups": true, "user_role": true,
	"new_role": true, "membership": true, "rights": true,
}

// adminFlags are member names that make an account privileged when true.
var adminFlags = map[string]bool{
	"is_admin": true, "isadmin": true, "admin": true, "superuser": true, "is_superuser": true,
	"is_root": true, "sudo": true, "is_owner": true, "site_admin": true, "is_staff": true,
}

var adminValues = map[string]bool{
	"root": true, "superuser": true, "super_user": true, "owner": true, "sudo": true, "sudoers": true,
	"wheel": true, "system:masters": true, "*": true, "all": true, "god": true, "full_access": true,
	"fullaccess": true, "domain admins": true, "write:org": true,
}

func adminValue(v string) bool {
	l := strings.ToLower(strings.TrimSpace(v))
	return adminValues[l] || strings.Contains(l, "admin")
}

var (
	// embeddedRole finds "role":"admin" inside a string of JSON.
	embeddedRole = regexp.MustCompile(`(?i)"(?:role|roles|permissions?|privileges?|access_level|groups?|is_admin|admin|superuser)"\s*:\s*\[?\s*(?:"([^"]*)"|(true))`)
	privCommands = []struct {
		rule string
		re   *regexp.Regexp
	}{
		{"sudo", regexp.MustCompile(`(?:^|[;&|(\s])(?:sudo|doas|pkexec)\s+\S`)},
		{"su-root", regexp.MustCompile(`(?:^|[;&|(\s])su\s+(?:-\s*|-l\s+|--login\s+)?(?:root\b|-\s*$|-\s*[;&|])`)},
		{"world-writable", regexp.MustCompile(`\bchmod\s+(?:-\w+\s+)*(?:0?[0-7]?7[0-7]7|a\+rwx|o\+w|ugo\+rwx)\b`)},
		{"setuid", regexp.MustCompile(`\bchmod\s+(?:-\w+\s+)*(?:[2467][0-7]{3}\b|[ugoa]*\+[rwx]*s)|\bsetcap\b|\bcap_setuid\b|\bsetuid\(`)},
		{"chown-root", regexp.MustCompile(`\bchown\s+(?:-\w+\s+)*root\b`)},
		{"group-change", regexp.MustCompile(`\b(?:usermod|gpasswd|adduser|addgroup)\b[^\n;|]*\b(?:sudo|wheel|admin|root|docker)\b`)},
		{"sudoers", regexp.MustCompile(`/etc/sudoers|\bNOPASSWD\b|\bvisudo\b`)},
		{"root-password", regexp.MustCompile(`\bpasswd\s+root\b`)},
	}
)

// privilege checks grants, admin tools, role changes and privileged
// commands in tool calls.
func (p *Processor) privilege(in *input, fs *findings) {
	if !p.on(PrivilegeEscalation) || in.ev.Kind != KindToolCall {
		return
	}
	add := func(rule, msg, evidence, path string, sev Severity) {
		fs.add(Finding{Category: PrivilegeEscalation, Rule: "privilege_escalation/" + rule, Severity: sev,
			Message: msg, Evidence: evidence, Path: path, Confidence: 0.85})
	}
	explicit := p.checkGrants(in, add)
	if adminTool(in.ev.Tool) && !explicit {
		add("admin-tool", "tool changes privileges and is not granted by name", in.ev.Tool, "tool", High)
	}
	p.roleChanges(in.argsVal, "arguments", "", add)
	for _, s := range in.args {
		p.embeddedRoles(s, add)
		if freeText(s.key) {
			continue
		}
		for _, pc := range privCommands {
			if loc := pc.re.FindStringIndex(s.value); loc != nil {
				add(pc.rule, "privileged command in a parameter ("+pc.rule+")", excerpt(s.value, loc[0], loc[1]), s.path, Critical)
				break
			}
		}
	}
}

// embeddedRoles finds `"role":"admin"` in a string that carries JSON.
func (p *Processor) embeddedRoles(s str, add func(rule, msg, evidence, path string, sev Severity)) {
	for _, m := range embeddedRole.FindAllStringSubmatchIndex(s.value, 4) {
		if m[4] >= 0 || m[2] >= 0 && adminValue(s.value[m[2]:m[3]]) {
			add("role-change", "argument sets a privileged role", excerpt(s.value, m[0], m[1]), s.path, High)
			return
		}
	}
}

// checkGrants reports tools and scopes beyond the grants that apply to the
// call. It returns whether a grant names the tool exactly.
func (p *Processor) checkGrants(in *input, add func(rule, msg, evidence, path string, sev Severity)) (explicit bool) {
	var gs []Grant
	for _, g := range p.grants {
		if g.matches(in.ev.Subject, in.ev.Upstream) {
			gs = append(gs, g)
		}
	}
	if len(gs) == 0 {
		return false
	}
	toolOK := false
	anyScope := false
	scopes := map[string]bool{}
	for _, g := range gs {
		for _, t := range g.Tools {
			if ok, _ := path.Match(t, in.ev.Tool); ok {
				toolOK = true
				explicit = explicit || t == in.ev.Tool
			}
		}
		if g.Scopes == nil {
			anyScope = true
		}
		for _, s := range g.Scopes {
			scopes[s] = true
		}
	}
	if !toolOK {
		add("tool-beyond-grant", "tool "+strconv.Quote(in.ev.Tool)+" is not granted to "+orAnyone(in.ev.Subject)+" on "+in.ev.Upstream,
			in.ev.Tool, "tool", High)
	}
	if !anyScope {
		for i, s := range in.ev.Scopes {
			if !scopes[s] {
				add("scope-beyond-grant", "scope "+strconv.Quote(s)+" is not granted", s, "scopes["+strconv.Itoa(i)+"]", High)
			}
		}
	}
	return explicit
}

func orAnyone(s string) string {
	if s == "" {
		return "an anonymous subject"
	}
	return s
}

// roleChanges walks decoded arguments for role and admin members.
func (p *Processor) roleChanges(v any, at, key string, add func(rule, msg, evidence, path string, sev Severity)) {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			p.roleChanges(v[k], memberPath(at, k), strings.ToLower(k), add)
		}
	case []any:
		for i, e := range v {
			p.roleChanges(e, at+"["+strconv.Itoa(i)+"]", key, add)
		}
	case string:
		if roleKeys[key] && adminValue(v) {
			add("role-change", "argument sets a privileged role", key+": "+v, at, High)
		}
		if adminFlags[key] && strings.EqualFold(v, "true") {
			add("role-change", "argument makes an account privileged", key+": "+v, at, High)
		}
	case bool:
		if adminFlags[key] && v {
			add("role-change", "argument makes an account privileged", key+": true", at, High)
		}
	case json.Number:
	}
}
