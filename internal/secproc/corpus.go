package secproc

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"text/tabwriter"
)

// The labelled corpus: testdata/corpus/{dev,heldout}_<category>.jsonl.
// Detectors are tuned on the dev files only; the held-out files measure
// them.
//
//go:embed testdata/corpus/*.jsonl
var corpusFS embed.FS

// Labelled is one line of the corpus.
type Labelled struct {
	ID    string `json:"id"`
	Label string `json:"label"` // benign | malicious
	// Category is the category a malicious event belongs to, or the one a
	// benign event looks like.
	Category Category `json:"category"`
	// Setup are earlier events of the same session (read-then-send); their
	// findings are not scored.
	Setup []Event `json:"setup,omitempty"`
	Event Event   `json:"event"`
	Note  string  `json:"note"`

	// Split is "dev" or "heldout", from the file name.
	Split string `json:"-"`
}

// Counts are the confusion counts and rates of a set of events.
type Counts struct {
	TP, FP, TN, FN int
	Precision      float64 // TP / (TP+FP)
	Recall         float64 // TP / (TP+FN)
	FPR            float64 // FP / (FP+TN)
}

func (c *Counts) rates() {
	c.Precision = ratio(c.TP, c.TP+c.FP)
	c.Recall = ratio(c.TP, c.TP+c.FN)
	c.FPR = ratio(c.FP, c.FP+c.TN)
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Metrics are a processor's results on a corpus.
//
// A malicious event is a true positive when the processor reports a
// finding of the event's category, and a false negative otherwise (even
// if it reports a finding of another category). A benign event is a false
// positive when the processor reports any finding. Per category, events
// are grouped by their label's category.
type Metrics struct {
	Overall    Counts
	ByCategory map[Category]Counts
	// Misses lists the events scored FN or FP, with the rules reported.
	Misses []Miss
}

// Miss is an event the processor got wrong.
type Miss struct {
	ID, Label string
	Category  Category
	Rules     []string
}

// Evaluate runs p on every event of corpus. Each event's session is
// namespaced by its ID, so events do not share session state.
func Evaluate(p *Processor, corpus []Labelled) Metrics {
	m := Metrics{ByCategory: map[Category]Counts{}}
	ctx := context.Background()
	for _, l := range corpus {
		for _, ev := range l.Setup {
			ev.Session = l.ID + "/" + ev.Session
			p.Inspect(ctx, ev)
		}
		ev := l.Event
		ev.Session = l.ID + "/" + ev.Session
		got := p.Inspect(ctx, ev)
		c := m.ByCategory[l.Category]
		hit := false
		if l.Label == "malicious" {
			hit = slices.ContainsFunc(got, func(f Finding) bool { return f.Category == l.Category })
			if hit {
				c.TP++
				m.Overall.TP++
			} else {
				c.FN++
				m.Overall.FN++
			}
		} else {
			hit = len(got) == 0 // "right"
			if hit {
				c.TN++
				m.Overall.TN++
			} else {
				c.FP++
				m.Overall.FP++
			}
		}
		m.ByCategory[l.Category] = c
		if !hit {
			miss := Miss{ID: l.ID, Label: l.Label, Category: l.Category}
			for _, f := range got {
				miss.Rules = append(miss.Rules, f.Rule)
			}
			m.Misses = append(m.Misses, miss)
		}
	}
	m.Overall.rates()
	for k, c := range m.ByCategory {
		c.rates()
		m.ByCategory[k] = c
	}
	return m
}

// Table renders m as a fixed-width table, one row per category and one
// for the whole.
func (m Metrics) Table() string {
	var b bytes.Buffer
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "category\tmalicious\tbenign\tTP\tFN\tFP\tprecision\trecall\tFP rate\t")
	row := func(name string, c Counts) {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\t%.3f\t%.3f\t%.3f\t\n", name, c.TP+c.FN, c.FP+c.TN,
			c.TP, c.FN, c.FP, c.Precision, c.Recall, c.FPR)
	}
	for _, cat := range Categories {
		if c, ok := m.ByCategory[cat]; ok {
			row(string(cat), c)
		}
	}
	row("overall", m.Overall)
	w.Flush()
	return b.String()
}

// LoadCorpus decodes the embedded corpus strictly: unknown fields, a
// label other than benign or malicious, an unknown category or kind, or a
// duplicate id are errors.
func LoadCorpus() ([]Labelled, error) {
	files, err := fs.Glob(corpusFS, "testdata/corpus/*.jsonl")
	if err != nil {
		return nil, err
	}
	var out []Labelled
	ids := map[string]string{}
	for _, name := range files {
		base := path.Base(name)
		split, _, ok := strings.Cut(base, "_")
		if !ok || split != "dev" && split != "heldout" {
			return nil, fmt.Errorf("%s: corpus files are named dev_*.jsonl or heldout_*.jsonl", base)
		}
		data, err := corpusFS.ReadFile(name)
		if err != nil {
			return nil, err
		}
		for i, line := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var l Labelled
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&l); err != nil {
				return nil, fmt.Errorf("%s:%d: %v", base, i+1, err)
			}
			if err := l.check(); err != nil {
				return nil, fmt.Errorf("%s:%d: %v", base, i+1, err)
			}
			if prev, dup := ids[l.ID]; dup {
				return nil, fmt.Errorf("%s:%d: id %q also in %s", base, i+1, l.ID, prev)
			}
			ids[l.ID] = base
			l.Split = split
			out = append(out, l)
		}
	}
	return out, nil
}

func (l Labelled) check() error {
	if l.ID == "" {
		return fmt.Errorf("no id")
	}
	if l.Label != "benign" && l.Label != "malicious" {
		return fmt.Errorf("%s: label %q", l.ID, l.Label)
	}
	if !slices.Contains(Categories, l.Category) {
		return fmt.Errorf("%s: category %q", l.ID, l.Category)
	}
	for _, ev := range append(slices.Clone(l.Setup), l.Event) {
		switch ev.Kind {
		case KindToolCall, KindToolResult, KindToolDescription, KindResource, KindPrompt:
		default:
			return fmt.Errorf("%s: kind %q", l.ID, ev.Kind)
		}
	}
	return nil
}

// CorpusConfig is the configuration the corpus is labelled against: the
// roots, hosts and grants its events assume.
func CorpusConfig() Config {
	return Config{
		AllowedRoots: []string{"/workspace", "/data/shared"},
		SkipSymlinks: true, // the corpus's paths are the upstream's, not this machine's
		AllowedHosts: []string{
			"example.com", "*.example.com", "github.com", "api.github.com", "*.githubusercontent.com",
			"docs.python.org", "pkg.go.dev", "proxy.golang.org", "internal.corp", "*.internal.corp",
			"hooks.slack.com", "registry.npmjs.org", "pypi.org",
		},
		Grants: []Grant{
			{Subject: "alice", Upstream: "files", Tools: []string{"read_file", "list_dir", "write_file", "search_files", "stat"},
				Scopes: []string{"files:read", "files:write"}},
			{Subject: "alice", Upstream: "shell", Tools: []string{"run_command"}},
			{Subject: "ci-bot", Upstream: "github", Tools: []string{"get_*", "list_*", "search_*", "create_issue", "add_comment"},
				Scopes: []string{"repo:read", "issues:write"}},
			{Subject: "guest", Tools: []string{"search*", "get_*", "read_*"}, Scopes: []string{}},
		},
	}
}

// CorpusReport evaluates a processor with CorpusConfig on the embedded
// corpus, per split.
type CorpusReport struct {
	Dev, HeldOut, All Metrics
	Events            int // events scored
}

// RunCorpus loads the embedded corpus and evaluates it (for tests,
// BENCHMARKS.md and make bench).
func RunCorpus() (CorpusReport, error) {
	corpus, err := LoadCorpus()
	if err != nil {
		return CorpusReport{}, err
	}
	p, err := New(CorpusConfig())
	if err != nil {
		return CorpusReport{}, err
	}
	var dev, held []Labelled
	for _, l := range corpus {
		if l.Split == "dev" {
			dev = append(dev, l)
		} else {
			held = append(held, l)
		}
	}
	return CorpusReport{Dev: Evaluate(p, dev), HeldOut: Evaluate(p, held), All: Evaluate(p, corpus), Events: len(corpus)}, nil
}
