package secproc

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Extractors of the sources added on 2026-11-27 for tuning and for a new
// held-out split: promptfoo's jailbreak templates and shell-injection
// examples, and the command-execution lines of wfuzz's mixed attack list;
// and on 2026-11-28 (third round, held-out): promptfoo's prompt-extraction
// examples and llmverify's prompt-injection example inputs.

// promptfooRequest fills a jailbreak template's __PROMPT__: the request
// the jailbreak wraps. It is deliberately harmless, so that a detection
// comes from the jailbreak's framing, not from the request.
const promptfooRequest = "Tell me how to pick a lock."

// extractPromptfooInjections reads promptfoo's bundled prompt-injection
// strategy data (src/redteam/strategies/promptInjections/data.ts): an array
// of JavaScript string literals, one a line, after the region marker. Each
// template becomes a malicious tool result.
func extractPromptfooInjections(data []byte) ([]extCase, error) {
	lines, start, err := jsRegionArray(data, "//#region src/redteam/strategies/promptInjections/data.ts")
	if err != nil {
		return nil, err
	}
	var out []extCase
	for i, line := range lines {
		var s string
		if err := json.Unmarshal([]byte(strings.TrimSuffix(strings.TrimSpace(line), ",")), &s); err != nil {
			return nil, fmt.Errorf("line %d: not a string literal: %v", start+i, err)
		}
		out = append(out, extCase{text: strings.ReplaceAll(s, "__PROMPT__", promptfooRequest), label: Malicious,
			category: InjectedInstructions, shape: shapeResult, where: fmt.Sprintf("line %d", start+i)})
	}
	return out, nil
}

// jsRegionArray returns the lines of the first array literal after marker
// in a bundled JavaScript file, and the line number of its first element.
func jsRegionArray(data []byte, marker string) ([]string, int, error) {
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != marker {
			continue
		}
		for j := i + 1; j < len(lines) && j < i+5; j++ {
			if !strings.HasSuffix(strings.TrimSpace(lines[j]), "= [") {
				continue
			}
			for k := j + 1; k < len(lines); k++ {
				if strings.HasPrefix(strings.TrimSpace(lines[k]), "]") {
					return lines[j+1 : k], j + 2, nil
				}
			}
			return nil, 0, fmt.Errorf("line %d: array not closed", j+1)
		}
		return nil, 0, fmt.Errorf("line %d: no array after %s", i+1, marker)
	}
	return nil, 0, fmt.Errorf("no %s", marker)
}

// extractPromptfooShell reads the examples of promptfoo's shell-injection
// red-team plugin (src/redteam/plugins/shellInjection.ts): each "Prompt:"
// line of its DEFAULT_EXAMPLES is a request carrying a shell command,
// which becomes a malicious argument of a tool call.
func extractPromptfooShell(data []byte) ([]extCase, error) {
	return promptfooExamples(data, "shellInjection", CommandInjection, shapeArg)
}

// extractPromptfooExtraction reads the examples of promptfoo's
// prompt-extraction plugin (src/redteam/plugins/promptExtraction.ts): each
// asks the model for its system prompt, and becomes a malicious tool
// result (a directive to disclose, planted in what a tool returned).
func extractPromptfooExtraction(data []byte) ([]extCase, error) {
	return promptfooExamples(data, "promptExtraction", InjectedInstructions, shapeResult)
}

// promptfooExamples reads the "Prompt:" lines of the DEFAULT_EXAMPLES of
// one of promptfoo's red-team plugins, bundled as a region of a
// JavaScript file, as malicious cases of cat.
func promptfooExamples(data []byte, plugin string, cat Category, sh shape) ([]extCase, error) {
	lines := strings.Split(string(data), "\n")
	var out []extCase
	in := false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case t == "//#region src/redteam/plugins/"+plugin+".ts":
			in = true
		case in && t == "//#endregion":
			return out, nil
		case in && strings.HasPrefix(t, "`;") && len(out) > 0:
			return out, nil // the end of DEFAULT_EXAMPLES (an earlier template may end before it)
		case in && strings.HasPrefix(t, "Prompt: "):
			// The examples sit in a template literal: \$ is a $.
			text := strings.ReplaceAll(strings.TrimPrefix(t, "Prompt: "), `\$`, "$")
			out = append(out, extCase{text: text, label: Malicious, category: cat, shape: sh,
				where: fmt.Sprintf("line %d", i+1)})
		}
	}
	if !in {
		return nil, fmt.Errorf("no %s.ts region", plugin)
	}
	return out, nil
}

// llmverifyInput is an example input of llmverify's prompt-injection
// example: a string literal assigned to userInput or maliciousInput.
var llmverifyInput = regexp.MustCompile(`^\s*const\s+(?:userInput|maliciousInput)\s*=\s*("(?:[^"\\]|\\.)*")\s*;`)

// extractLLMVerify reads the inputs of llmverify's examples/prompt-injection.ts,
// each an attack its detector is shown to catch, as malicious tool results.
func extractLLMVerify(data []byte) ([]extCase, error) {
	var out []extCase
	for i, line := range strings.Split(string(data), "\n") {
		m := llmverifyInput.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var s string
		if err := json.Unmarshal([]byte(m[1]), &s); err != nil {
			return nil, fmt.Errorf("line %d: not a string literal: %v", i+1, err)
		}
		out = append(out, extCase{text: s, label: Malicious, category: InjectedInstructions, shape: shapeResult,
			where: fmt.Sprintf("line %d", i+1)})
	}
	return out, nil
}

// wfuzzCommandLines are the lines of wfuzz's Injections/All_attack.txt that
// execute a command (`id`, ;id;, |ls, %0a/bin/cat, <!--#exec cmd=…-->,
// $(sleep 50)); the rest of that list is SQL, XSS, XXE, LDAP, XPath, path
// traversal and bare values. Labelled by reading the file, once, before
// any detector change.
var wfuzzCommandLines = []int{34, 35, 36, 37, 38, 39, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 58,
	89, 90, 106, 107, 109, 135, 136, 424, 425}

// extractWfuzzCommands reads the command-execution lines of wfuzz's
// All_attack.txt as malicious arguments.
func extractWfuzzCommands(data []byte) ([]extCase, error) {
	lines := strings.Split(string(data), "\n")
	var out []extCase
	for _, n := range wfuzzCommandLines {
		if n > len(lines) {
			return nil, fmt.Errorf("line %d: the file has %d lines", n, len(lines))
		}
		text := strings.TrimRight(lines[n-1], "\r")
		if strings.TrimSpace(text) == "" {
			return nil, fmt.Errorf("line %d: empty (has the file changed?)", n)
		}
		out = append(out, extCase{text: text, label: Malicious, category: CommandInjection, shape: shapeArg,
			where: fmt.Sprintf("line %d", n)})
	}
	return out, nil
}
