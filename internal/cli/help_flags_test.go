package cli

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

// TestHelpNamesEveryFlag: every flag a subcommand accepts (as its -h
// prints them) is named in `warden help COMMAND`, so a flag cannot be
// added or renamed without the help saying so.
func TestHelpNamesEveryFlag(t *testing.T) {
	subcommands := [][]string{
		{"gateway"}, {"demo"}, {"config", "check"},
		{"token", "hash"}, {"token", "issue"}, {"token", "verify"}, {"token", "inspect"},
		{"token", "sign"}, {"token", "revoke"},
		{"keys", "generate"}, {"keys", "list"}, {"keys", "jwks"}, {"keys", "client"},
		{"keys", "api-key"}, {"keys", "audit"},
		{"approve", "list"}, {"approve", "show"}, {"approve", "allow"}, {"approve", "deny"},
		{"audit", "verify"}, {"audit", "export"},
		{"attack", "validate"}, {"attack", "normalize"}, {"attack", "list"}, {"attack", "run"},
		{"conform", "lint"}, {"conform", "check"}, {"conform", "emit"}, {"conform", "replay"},
		{"conform", "matrix"},
		{"manifest", "keygen"}, {"manifest", "make"}, {"manifest", "sign"}, {"manifest", "verify"},
		{"manifest", "pins"},
	}
	// Flags that every gateway run takes and the usage line names.
	common := map[string]bool{"--log-level": true, "--log-format": true}
	flagLine := regexp.MustCompile(`(?m)^  -([A-Za-z0-9][A-Za-z0-9-]*)`)
	for _, sub := range subcommands {
		var out bytes.Buffer
		Run(context.Background(), append(append([]string{}, sub...), "-h"), &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out})
		flags := flagLine.FindAllStringSubmatch(out.String(), -1)
		if len(flags) == 0 && (sub[0] == "gateway" || sub[0] == "attack" || sub[0] == "conform") {
			t.Errorf("warden %s -h printed no flags:\n%s", strings.Join(sub, " "), out.String())
		}
		help := commandHelp[sub[0]]
		for _, f := range flags {
			name := "--" + f[1]
			if f[1] == "D" {
				name = "-D"
			}
			if common[name] {
				continue
			}
			if !regexp.MustCompile(regexp.QuoteMeta(name) + `\b`).MatchString(help) {
				t.Errorf("warden %s takes %s, which warden help %s does not name", strings.Join(sub, " "), name, sub[0])
			}
		}
	}
}
