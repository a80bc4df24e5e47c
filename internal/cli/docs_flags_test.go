package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsNameOnlyRealFlags: every `warden COMMAND [SUBCOMMAND] ... --flag`
// written in README.md, ARCHITECTURE.md and docs/*.md names a flag that
// command takes, so a renamed or removed flag cannot live on in the docs.
func TestDocsNameOnlyRealFlags(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"), filepath.Join(root, "ARCHITECTURE.md"))
	grouped := map[string]bool{"config": true, "token": true, "keys": true, "approve": true,
		"audit": true, "attack": true, "conform": true, "manifest": true}
	flagLine := regexp.MustCompile(`(?m)^  -([A-Za-z0-9][A-Za-z0-9-]*)`)
	known := map[string]map[string]bool{} // "attack run" → its flags
	flagsOf := func(cmd []string) map[string]bool {
		key := strings.Join(cmd, " ")
		if f, ok := known[key]; ok {
			return f
		}
		var out bytes.Buffer
		Run(context.Background(), append(append([]string{}, cmd...), "-h"), &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out})
		f := map[string]bool{}
		for _, m := range flagLine.FindAllStringSubmatch(out.String(), -1) {
			f["--"+m[1]] = true
		}
		known[key] = f
		return f
	}
	use := regexp.MustCompile("warden ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?([^`\n|]*)")
	flag := regexp.MustCompile(`(?:^|\s|\[)(--[a-z][a-z0-9-]*)`)
	checked := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range use.FindAllStringSubmatch(line, -1) {
				cmd := []string{m[1]}
				if grouped[m[1]] {
					if m[2] == "" {
						continue
					}
					cmd = append(cmd, m[2])
				} else if _, ok := commandHelp[m[1]]; !ok {
					continue // not a command: "warden makes", "warden gateway's"
				}
				takes := flagsOf(cmd)
				if len(takes) == 0 {
					continue // a command whose -h lists no flags parses its own
				}
				for _, f := range flag.FindAllStringSubmatch(m[3], -1) {
					checked++
					if !takes[f[1]] {
						t.Errorf("%s:%d: warden %s has no flag %s", filepath.Base(file), i+1, strings.Join(cmd, " "), f[1])
					}
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d flags found in the docs: the pattern no longer finds the command lines", checked)
	}
}
