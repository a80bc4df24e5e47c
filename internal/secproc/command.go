package secproc

import (
	"regexp"
	"strings"
)

// freeTextKeys are member names whose values are prose, code or queries:
// most metacharacters there are content, not injection. Only the dangerous
// commands and freeTextInjection count there.
var freeTextKeys = map[string]bool{
	"content": true, "contents": true, "text": true, "body": true, "message": true, "msg": true,
	"description": true, "desc": true, "comment": true, "note": true, "notes": true, "summary": true,
	"title": true, "subject": true, "query": true, "q": true, "sql": true, "code": true,
	"snippet": true, "source_code": true, "prompt": true, "markdown": true, "html": true,
	"data": true, "patch": true, "diff": true, "pattern": true, "regex": true, "glob": true,
	"filter": true, "expression": true, "template": true, "language": true, "format": true,
	"caption": true, "question": true, "answer": true, "messages": true, "context": true,
	"reason": true, "instructions": true, "search": true, "input_text": true, "commit_message": true,
}

func freeText(k string) bool { return freeTextKeys[k] }

// commandKeys are member names whose values are shell commands.
var commandKeys = map[string]bool{
	"command": true, "cmd": true, "shell": true, "script": true, "exec": true, "run": true,
	"cmdline": true, "command_line": true, "bash": true, "sh": true, "powershell": true,
	"args": true, "argv": true, "commands": true, "opts": true, "options": true, "flags": true,
}

// commandTool reports whether a tool's name says it runs commands.
func commandTool(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"command", "exec", "shell", "bash", "terminal", "run_script", "powershell", "execute", "ssh"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// shellRule is a rule name, its pattern, and the strings of which the
// lower-cased value must hold one for the pattern to be tried (a cheap
// filter: most arguments hold no shell syntax at all).
type shellRule struct {
	rule string
	re   *regexp.Regexp
	pre  []string
}

// dangerous are commands that are harmful wherever they appear in a
// command or a parameter: each is a rule name and a pattern.
var dangerous = []shellRule{
	{"pipe-to-shell", regexp.MustCompile(`(?i)\b(?:curl|wget|fetch|iwr|invoke-webrequest)\b[^|;&\n]*\|\s*(?:sudo\s+)?(?:ba|z|da|k|c)?sh\b`), []string{"|"}},
	{"pipe-to-shell", regexp.MustCompile(`(?i)\b(?:curl|wget)\b[^|;&\n]*\|\s*(?:sudo\s+)?(?:python[23]?|perl|ruby|php|node)\b`), []string{"|"}},
	{"decode-to-shell", regexp.MustCompile(`(?i)\bbase64\b[^|;\n]*\|\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b`), []string{"|"}},
	{"rm-root", regexp.MustCompile(`(?i)\brm\s+(?:-{1,2}[\w-]+\s+)*-[a-z]*r[a-z]*\s+(?:-{1,2}[\w-]+\s+)*(?:/\*?|~/?|\$home/?|/(?:etc|usr|var|home|root|boot|bin)/?)(?:\s|$|;|&|\|)`), []string{"rm"}},
	{"rm-root", regexp.MustCompile(`(?i)--no-preserve-root`), []string{"--no-preserve-root"}},
	{"reverse-shell", regexp.MustCompile(`(?i)\b(?:nc|ncat|netcat)\b[^\n|;]*\s-[a-z]*[ec]\s`), []string{"nc", "netcat"}},
	{"reverse-shell", regexp.MustCompile(`(?i)/dev/(?:tcp|udp)/`), []string{"/dev/"}},
	{"reverse-shell", regexp.MustCompile(`(?i)\bsocat\b[^\n]*\bexec:`), []string{"socat"}},
	{"reverse-shell", regexp.MustCompile(`(?i)\b(?:python[23]?|perl|ruby|php)\b\s+-[a-z]*[erc]\s+.*(?:socket\.socket|fsockopen|tcpsocket\.new|socket\(\s*s)`), []string{"sock"}},
	{"disk-wipe", regexp.MustCompile(`(?i)\bmkfs(?:\.\w+)?\s+/dev/|\bdd\b[^\n]*\bof=/dev/(?:sd|nvme|hd|disk|xvd)`), []string{"mkfs", "of=/dev/"}},
	// Process substitution of a download: bash <(curl …) runs what it fetches.
	{"pipe-to-shell", regexp.MustCompile(`(?i)<\(\s*(?:curl|wget|fetch|iwr)\b`), []string{"<("}},
	{"fork-bomb", regexp.MustCompile(`:\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:`), []string{":("}},
	{"ifs-evasion", regexp.MustCompile(`\$\{?IFS\}?`), []string{"ifs"}},
	{"system-file-write", regexp.MustCompile(`>>?\s*/etc/(?:passwd|shadow|sudoers|cron|profile|ld\.so|rc\.local|ssh/)|>>?\s*~?/\S*\.ssh/authorized_keys`), []string{">"}},
	{"powershell-download", regexp.MustCompile(`(?i)\b(?:iex|invoke-expression)\b[^\n]*downloadstring|\bpowershell(?:\.exe)?\b[^\n]*\s-e(?:nc|ncodedcommand)?\s+[a-z0-9+/=]{16,}`), []string{"iex", "invoke-expression", "powershell"}},
	// Server-side includes and string interpolation that run a command
	// (<!--#exec cmd="…"-->, Perl @{[system "…"]}, Ruby #{`…`}).
	{"code-execution", regexp.MustCompile(`(?i)<!--#\s*exec\s+cmd\s*=|@\{\[\s*(?:system|exec|qx)\b|#\{\s*(?:` + "`" + `|%x|system\b|exec\b|spawn\b|io\.popen)|%x\(\s*['"][^'"]*['"]\s*\)`), []string{"<!--#", "@{[", "#{", "%x("}},
	{"argument-injection", regexp.MustCompile(`(?i)(?:^|\s|=|')(?:--upload-pack|--receive-pack|--checkpoint-action=exec|--to-command|--use-compress-program|-o\s*proxycommand|-o\s*localcommand|--rsh)\b`), []string{"--", "-o"}},
}

// injection finds a separator followed by a command in a parameter that
// is not a command.
var injection = []shellRule{
	{"command-substitution", regexp.MustCompile("\\$\\([^)]*\\)|`[^`]+`"), []string{"$(", "`"}},
	{"command-chaining", regexp.MustCompile(`(?i)(?:;|&&|\|\|?|&|\n|\r|%0a)\s*(?:sudo\s+)?(?:` + shellWords +
		`|head|tail|iex|reg|net)(?:\s|$|;|&|\||>|<|"|'|\)|` + "`" + `)`), []string{";", "&", "|", "\n", "\r", "%0a"}},
	{"redirection", regexp.MustCompile(`>\s*/(?:etc|tmp|dev|root|usr|bin|var)/`), []string{">"}},
	{"absolute-binary", absoluteBinary, []string{"bin/"}},
	// A call that runs a command from code (Ruby, Perl, PHP, Python): a
	// parameter that is not code does not call system("…").
	{"code-execution", regexp.MustCompile(`(?i)(?:\b(?:system|exec|popen|spawn|passthru|shell_exec|proc_open|eval|assert|instance_eval|class_eval)\s*\(\s*['"]|%x\(|\bKernel\.\w+|\b(?:os|subprocess)\.(?:system|popen|call|run|check_output)\s*\()`), []string{"(", "kernel."}},
	// A whole value that is a command: a command word, alone or with its
	// arguments, that a separator ends or starts (`id|`, `;id;`, `&set&`),
	// or whose arguments are options or paths (`uname -a`, `cat /etc/passwd`).
	{"command-value", commandValue, []string{";", "&", "|", "\x00", "\n"}},
	{"command-value", commandLine, []string{" ", "\t"}},
	// A program reached through a traversal (`../../usr/bin/env|`).
	{"absolute-binary", traversalBinary, []string{"bin/"}},
	// Brace expansion that runs a command without a space ({cat,/etc/passwd}).
	{"brace-expansion", braceCommand, []string{"{"}},
}

// Whole values that are a command (see injection): commandValue is a
// command word with a separator on either side, in any member; commandLine
// a command word followed only by options, paths and variables, in a
// member that does not hold free text.
var (
	commandValue = regexp.MustCompile(`(?i)^[\s'"]*(?:(?:;|&&?|\|\|?|\n)[ \t]*(?:` + shellWords + `|` + probeWords + `)(?:[ \t]+[^;&|\n]*)?[ \t;&|]*|(?:` + shellWords + `|` + probeWords + `)(?:[ \t]+[^;&|\n]*)?[ \t]*(?:;|&&?|\|\|?|\x00)[ \t;&|\x00]*)['"]?$`)
	commandLine  = regexp.MustCompile(`(?i)^[ \t]*(?:` + shellWords + `|` + probeWords + `)(?:[ \t]+(?:-{1,2}[a-z][\w-]*|/[\w./-]*|\$\{?\w+\}?|\d[\d.]*))+[ \t]*$`)
	// traversalBinary is a program named through ../ and a bin directory,
	// used as a command: followed by a separator, an option or a path.
	traversalBinary = regexp.MustCompile(`(?:\.\./)+(?:usr/)?(?:local/)?s?bin/[\w.+-]+(?:[ \t]*(?:[|;&]|$)|[ \t]+[-/$])`)
	braceCommand    = regexp.MustCompile(`(?i)\{(?:` + shellWords + `),[^{}\s]*\}`)
)

// probeWords are commands an attacker runs to see where a chain landed,
// Windows ones included; they count only as a whole value (see
// commandValue), since as words they are common in prose.
const probeWords = `set|ver|ipconfig|systeminfo|tasklist|hostname|net\s+user|uname\s+-a`

// absoluteBinary is a separator followed by a program named by its
// absolute path (`; /bin/cat`, `| /usr/bin/id`): shell syntax in any
// argument.
var absoluteBinary = regexp.MustCompile(`(?i)(?:;|&&|\|\|?|&|\n|\r|\$\(|` + "`" + `)[ \t]*(?:/usr)?(?:/local)?/s?bin/[\w.+-]+`)

// shellWords are commands an injected chain runs: to look around (id,
// uname, ls, cat), to fetch or connect (curl, nc, ping, nslookup), to
// wait (sleep), to change or destroy (rm, chmod, dd).
const shellWords = `sh|bash|zsh|dash|ksh|rm|curl|wget|cat|nc|ncat|netcat|python[23]?|perl|ruby|php|node|id|whoami|uname|` +
	`env|printenv|ping|sleep|nslookup|dig|host|chmod|chown|touch|ls|powershell|cmd|certutil|bitsadmin|mshta|rundll32|` +
	`tftp|telnet|ftp|scp|ssh|crontab|useradd|usermod|passwd|kill|reboot|shutdown|mkfs|dd|base64|eval|exec|xargs|nohup|` +
	`sudo|su|echo|cp|mv|tar|find|awk|sed|export|systemctl|ifconfig|netstat|ps|dir|read|type|more|wmic`

// freeTextInjection is shell syntax that is injection even in prose, code
// or a query: a separator followed by a command that takes an option, a
// path or a variable, or ends the chain (`; cat /etc/passwd`, `&& whoami;`),
// or after `;`, `|`, `&&` or `||` ends the value (`|id`); a command
// substitution of such a command; and a program named by its absolute
// path after a separator. A command word followed by plain words (`rock &
// roll`, `tea; cat lovers`) is prose, and so is one that ends the value
// after ` & ` or a line break (`my dog & cat`, a list ending in `sleep`).
var freeTextInjection = []shellRule{
	{"command-chaining", regexp.MustCompile(`(?i)(?:;|&&|\|\|?|&|\n|\r)[ \t]*(?:sudo[ \t]+)?(?:` + shellWords +
		`)(?:[ \t]*[;&|]|[ \t]+(?:[-/~$'"\\]|[a-z]:\\))`), []string{";", "&", "|", "\n", "\r"}},
	{"command-chaining", regexp.MustCompile(`(?i)(?:;|&&|\|\|?)[ \t]*(?:sudo[ \t]+)?(?:` + shellWords + `)[ \t]*$`), []string{";", "&", "|"}},
	{"command-substitution", regexp.MustCompile(`(?i)\$\([ \t]*(?:` + shellWords + `)(?:[ \t]+[^)]*)?\)`), []string{"$("}},
	{"absolute-binary", absoluteBinary, []string{"bin/"}},
	// A whole value that is a command substitution (`id`, `touch /tmp/x`):
	// inline code in prose sits among words.
	{"command-substitution", regexp.MustCompile("(?i)^[ \t]*`[ \t]*(?:" + shellWords + ")(?:[ \t][^`]*)?`[ \t]*$"), []string{"`"}},
	// A chained command whose arguments are numbers, closed by a
	// separator or the end of the value (`;sleep 60;`, `| ping 5 &`):
	// prose goes on with words.
	{"command-chaining", regexp.MustCompile(`(?i)(?:;|&&|\|\|?|&)[ \t]*(?:sudo[ \t]+)?(?:` + shellWords +
		`)(?:[ \t]+\d+)+[ \t]*(?:[;&|]|$)`), []string{";", "&", "|"}},
	// A whole value that is a command with a separator (`id|`, `;id;`).
	{"command-value", commandValue, []string{";", "&", "|", "\x00", "\n"}},
	// A substitution glued to a word (a`sleep 60`): markdown's
	// inline code stands apart from the words around it.
	{"command-substitution", regexp.MustCompile("(?i)[\\w'\"=]`(?:" + shellWords + ")(?:[ \t][^`]*)?`"), []string{"`"}},
	{"absolute-binary", traversalBinary, []string{"bin/"}},
	{"brace-expansion", braceCommand, []string{"{"}},
}

// argument injection: a whole value that is an option, or an option
// followed by a value, writing where nothing should be written.
var (
	dangerousOption = regexp.MustCompile(`(?i)^(?:--upload-pack|--receive-pack|--exec|-exec|--checkpoint-action|--to-command|--use-compress-program|-oproxycommand|-olocalcommand|--rsh|--post-file|--config|-k|--output|-o|--output-document|-O)(?:=|\s|$)`)
	outputOption    = regexp.MustCompile(`^(?:-o|-O|--output|--output-document|--log-file|-a|--append-output)$`)
	outputJoined    = regexp.MustCompile(`^(?:--output|--output-document|--log-file|-o|-O)=?(\S+)`)
	systemPath      = regexp.MustCompile(`^(?:/etc|/usr|/bin|/sbin|/lib|/root|/boot|/var/spool|/var/lib|/dev|/proc|/sys)(?:/|$)|^~/\.|^/home/[^/]+/\.`)
)

// positionalKeys are member names whose values a tool typically passes to
// a program as a positional argument; longOption is a value that is an
// option instead.
var (
	positionalKeys = map[string]bool{
		"branch": true, "ref": true, "revision": true, "rev": true, "tag": true, "commit": true,
		"host": true, "hostname": true, "remote": true, "repo": true, "repository": true,
		"package": true, "pkg": true, "module": true, "name": true, "target": true,
	}
	longOption = regexp.MustCompile(`^--?[A-Za-z][\w-]*(?:=.*)?$`)
)

// commandInjection checks the arguments of tool calls.
func (p *Processor) commandInjection(in *input, fs *findings) {
	if !p.on(CommandInjection) || in.ev.Kind != KindToolCall {
		return
	}
	cmdTool := commandTool(in.ev.Tool)
	for _, s := range in.args {
		free := freeText(s.key)
		command := cmdTool || commandKeys[s.key]
		found := false
		for vi, v := range shellVariants(s.value) {
			if found = p.checkCommand(s, v, vi > 0, command, free, fs); found {
				break
			}
		}
		// Base64 in an argument is mostly a file's content: only the
		// dangerous commands count in what it decodes to.
		for _, d := range base64Commands(s.value) {
			if found {
				break
			}
			found = p.checkCommand(s, d, true, true, free, fs)
		}
		if !free {
			p.checkArgumentInjection(in, s, fs)
		}
	}
}

// checkCommand reports the first rule v breaks; decoded says v is a decoded
// form of the value, command that the value is a command, free that it is
// free text.
func (p *Processor) checkCommand(s str, v string, decoded, command, free bool, fs *findings) bool {
	add := func(rule string, loc []int, sev Severity, msg string) bool {
		if decoded {
			rule += "-encoded"
		}
		fs.add(Finding{Category: CommandInjection, Rule: "command_injection/" + rule, Severity: sev,
			Message: msg, Evidence: excerpt(v, loc[0], loc[1]), Path: s.path, Confidence: 0.9})
		return true
	}
	lower := strings.ToLower(v)
	for _, d := range dangerous {
		if !mayMatch(lower, d.pre) {
			continue
		}
		if loc := d.re.FindStringIndex(v); loc != nil {
			return add(d.rule, loc, Critical, "dangerous command in a parameter ("+d.rule+")")
		}
	}
	if command {
		return false // a command may chain and substitute
	}
	rules := injection
	if free {
		rules = freeTextInjection
	}
	for _, r := range rules {
		if !mayMatch(lower, r.pre) {
			continue
		}
		if loc := r.re.FindStringIndex(v); loc != nil {
			return add(r.rule, loc, High, "shell syntax in a parameter ("+r.rule+")")
		}
	}
	return false
}

// checkArgumentInjection looks for options smuggled in as values.
func (p *Processor) checkArgumentInjection(in *input, s str, fs *findings) {
	v := strings.TrimSpace(s.value)
	if !strings.HasPrefix(v, "-") {
		return
	}
	report := func(msg string) {
		fs.add(Finding{Category: CommandInjection, Rule: "command_injection/argument-injection", Severity: High,
			Message: msg, Evidence: excerpt(s.value, -1, 0), Path: s.path, Confidence: 0.85})
	}
	if m := outputJoined.FindStringSubmatch(v); m != nil && systemPath.MatchString(m[1]) {
		report("option writes to a system path")
		return
	}
	if s.index >= 0 && outputOption.MatchString(v) {
		sib := in.siblings(s)
		for i, t := range sib {
			if t.index == s.index && i+1 < len(sib) && systemPath.MatchString(sib[i+1].value) {
				report("option writes to a system path")
				return
			}
		}
	}
	// An option where a tool expects a name it passes on to a program
	// as a positional argument (a branch, a host, a package) is injected
	// (git checkout --version, ping --help).
	if positionalKeys[s.key] && !commandTool(in.ev.Tool) && longOption.MatchString(v) {
		report("parameter value is a command-line option")
		return
	}
	// A whole value that is a dangerous option, in a field that is not a
	// list of options, is injected.
	if !commandKeys[s.key] && !commandTool(in.ev.Tool) && dangerousOption.MatchString(v) && s.index < 0 {
		report("parameter value is a command-line option")
	}
}
