package secproc

import (
	"fmt"
	"regexp"
	"strings"
)

// Extractors of the fifth round's sources (2026-11-28): promptfoo's
// tool-discovery and RBAC examples, and the CHANGELOGs of LLM SDKs.

// npmChangelog is the CHANGELOG.md of an npm package that scripts/deps.sh
// unpacks into payloads/: one line per change, about an LLM API, as benign
// text.
func npmChangelog(pkg, split string) ExternalSource {
	return ExternalSource{Package: pkg, File: "CHANGELOG.md", Split: split,
		Path: "payloads/" + pkg + "/package/CHANGELOG.md", extract: extractMarkdownChangelog}
}

// extractPromptfooToolDiscovery reads the examples of promptfoo's
// tool-discovery plugin (src/redteam/plugins/toolDiscovery.ts): requests
// that the agent list its tools and their parameters, which planted in a
// tool's output are a directive to disclose the agent's internals.
func extractPromptfooToolDiscovery(data []byte) ([]extCase, error) {
	return promptfooExamples(data, "toolDiscovery", InjectedInstructions, shapeResult)
}

// extractPromptfooRBAC reads the examples of promptfoo's RBAC plugin
// (src/redteam/plugins/rbac.ts): requests to act beyond the user's role,
// which planted in a tool's output are a directive under a claimed
// authority.
func extractPromptfooRBAC(data []byte) ([]extCase, error) {
	return promptfooExamples(data, "rbac", InjectedInstructions, shapeResult)
}

var (
	// changelogBullet is one entry of a markdown CHANGELOG: a list item.
	changelogBullet = regexp.MustCompile(`^\s*[*-]\s+(.+)$`)
	// markdownLink is [text](target); the text is kept.
	markdownLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	// commitRef is a trailing commit or pull-request reference, (abc1234)
	// or (#123), once links are reduced to their text.
	commitRef = regexp.MustCompile(`\s*\((?:[0-9a-f]{7,40}|#\d+)(?:,\s*(?:[0-9a-f]{7,40}|#\d+))*\)\s*$`)
)

// extractMarkdownChangelog makes every list item of a markdown CHANGELOG
// (release-please's and changesets' formats: "* **api:** add …
// ([abc1234](…))", "- 1a2b3c4: fix …") a benign free-text argument and a
// benign tool result, its links reduced to their text and its trailing
// commit reference dropped. Items shorter than 20 characters (a bare
// dependency bump) are left out.
func extractMarkdownChangelog(data []byte) ([]extCase, error) {
	var out []extCase
	fence := false
	for i, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		m := changelogBullet.FindStringSubmatch(line)
		if fence || m == nil {
			continue
		}
		text := markdownLink.ReplaceAllString(m[1], "$1")
		text = strings.TrimSpace(commitRef.ReplaceAllString(text, ""))
		if len(text) < 20 {
			continue
		}
		where := fmt.Sprintf("line %d", i+1)
		out = append(out,
			extCase{text: text, label: Benign, category: CommandInjection, shape: shapeFreeText, where: where},
			extCase{text: text, label: Benign, category: InjectedInstructions, shape: shapeResult, where: where})
	}
	return out, nil
}
