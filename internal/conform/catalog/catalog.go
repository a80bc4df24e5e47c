// Package catalog is AgentConform's clause catalog: one record per normative
// sentence (or list item) of each protocol specification, embedded from
// YAML. Models cite clauses by id in their source_refs; a clause says what
// the text requires (modality), of whom (actor), which AASM principles it
// bears on, its taxonomy class, and whether the text is ambiguous.
//
// Quotes are short fragments, enough to find the sentence; the url points
// at the section. The catalog is read once and is immutable: Default is
// safe for concurrent use.
package catalog

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/agentwarden/warden/internal/conform/ir"
)

// Source kinds: where a clause's text comes from. In every kind a
// parenthesised Quote ("(no clause) ...") records an absence: the source
// says nothing on the matter, and the words are warden's.
const (
	// FromSpecification: Quote is a fragment of the specification itself,
	// word for word ("…" marks words left out); Document and Section name
	// the specification's page and heading.
	FromSpecification = "specification"
	// FromPaperProse: the protocol's own text is not available (ANP's white
	// paper, ACP's RFDs), so Quote is a fragment of AgentRFC's prose about
	// it, word for word; Document is the paper and Section its heading.
	FromPaperProse = "paper-prose"
	// FromWardenReading: neither the specification nor the paper has words
	// for the clause; Quote is warden's own statement of what the model
	// assumes, and the clause's note says what it rests on.
	FromWardenReading = "warden-reading"
)

// PaperDocument is the Document of a clause that quotes AgentRFC or rests
// on it.
const PaperDocument = "AgentRFC (arXiv:2603.23801)"

// SourceKinds lists the source kinds.
var SourceKinds = []string{FromSpecification, FromPaperProse, FromWardenReading}

// SourceRef locates a clause in its specification.
type SourceRef struct {
	Document string `json:"document"`
	Section  string `json:"section"`
	URL      string `json:"url"`
	// Kind says what Quote is: FromSpecification, FromPaperProse or
	// FromWardenReading.
	Kind  string `json:"kind"`
	Quote string `json:"quote"`
}

// Clause is one normative clause.
type Clause struct {
	ID            string    `json:"id"`
	Protocol      string    `json:"protocol"`
	SpecVersion   string    `json:"spec_version"`
	SourceRef     SourceRef `json:"source_ref"`
	Modality      string    `json:"modality"`
	Actor         string    `json:"actor"`
	ConditionalOn []string  `json:"conditional_on,omitempty"`
	Ambiguous     bool      `json:"ambiguous"`
	AmbiguityNote string    `json:"ambiguity_note,omitempty"`
	Principles    []string  `json:"principles"`
	Taxonomy      string    `json:"taxonomy"`
	File          string    `json:"-"` // the catalog file it came from
}

// Protocols are the protocols the catalog covers, in matrix order.
var Protocols = []string{"MCP", "A2A", "ANP", "ACP-Cap", "ACP-Client"}

// Catalog is a set of clauses by id.
type Catalog struct {
	clauses []Clause
	byID    map[string]int
}

// Clause returns the clause with the given id.
func (c *Catalog) Clause(id string) (Clause, bool) {
	i, ok := c.byID[id]
	if !ok {
		return Clause{}, false
	}
	return c.clauses[i], true
}

// Has reports whether id is in the catalog (for ir.LintOptions.Clause).
func (c *Catalog) Has(id string) bool { _, ok := c.byID[id]; return ok }

// All returns every clause, in file order.
func (c *Catalog) All() []Clause { return slices.Clone(c.clauses) }

// Documents returns the distinct documents of a protocol's revision.
func (c *Catalog) Documents(protocol, version string) []string {
	var docs []string
	for _, cl := range c.clauses {
		if cl.Protocol == protocol && cl.SpecVersion == version && !slices.Contains(docs, cl.SourceRef.Document) {
			docs = append(docs, cl.SourceRef.Document)
		}
	}
	sort.Strings(docs)
	return docs
}

// file is the YAML shape of one catalog file: the protocol revision once,
// then compact clause records.
type file struct {
	Protocol    string       `yaml:"protocol"`
	SpecVersion string       `yaml:"spec_version"`
	BaseURL     string       `yaml:"base_url"`
	SourceKind  string       `yaml:"source_kind"` // default FromSpecification
	Clauses     []clauseYAML `yaml:"clauses"`
}

type clauseYAML struct {
	ID            string   `yaml:"id"`
	Kind          string   `yaml:"kind"` // overrides the file's source_kind
	Doc           string   `yaml:"doc"`
	Section       string   `yaml:"section"`
	Path          string   `yaml:"path"`
	URL           string   `yaml:"url"`
	Quote         string   `yaml:"quote"`
	Modality      string   `yaml:"modality"`
	Actor         string   `yaml:"actor"`
	ConditionalOn []string `yaml:"conditional_on"`
	Ambiguous     bool     `yaml:"ambiguous"`
	Note          string   `yaml:"note"`
	Principles    []string `yaml:"principles"`
	Taxonomy      string   `yaml:"taxonomy"`
}

//go:embed clauses/*.yaml
var embedded embed.FS

var (
	defaultOnce sync.Once
	defaultCat  *Catalog
	defaultErr  error
)

// Default returns the embedded catalog. It panics never: a broken embedded
// catalog is reported as an error (and caught by this package's tests).
func Default() (*Catalog, error) {
	defaultOnce.Do(func() { defaultCat, defaultErr = Load(embedded, "clauses") })
	return defaultCat, defaultErr
}

// Load reads every .yaml file of dir in fsys.
func Load(fsys fs.FS, dir string) (*Catalog, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	c := &Catalog{byID: map[string]int{}}
	for _, e := range entries {
		if path.Ext(e.Name()) != ".yaml" {
			continue
		}
		name := path.Join(dir, e.Name())
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		if err := c.add(data, name); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *Catalog) add(data []byte, name string) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f file
	if err := dec.Decode(&f); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	kind := f.SourceKind
	if kind == "" {
		kind = FromSpecification
	}
	for _, y := range f.Clauses {
		if _, dup := c.byID[y.ID]; dup {
			return fmt.Errorf("%s: clause %s is defined twice", name, y.ID)
		}
		kind := kind
		if y.Kind != "" {
			kind = y.Kind
		}
		url := y.URL
		if url == "" {
			url = f.BaseURL + y.Path
		}
		cl := Clause{ID: y.ID, Protocol: f.Protocol, SpecVersion: f.SpecVersion,
			SourceRef: SourceRef{Document: y.Doc, Section: y.Section, URL: url, Kind: kind, Quote: y.Quote},
			Modality:  y.Modality, Actor: y.Actor, ConditionalOn: y.ConditionalOn, Ambiguous: y.Ambiguous,
			AmbiguityNote: y.Note, Principles: y.Principles, Taxonomy: y.Taxonomy, File: name}
		c.byID[cl.ID] = len(c.clauses)
		c.clauses = append(c.clauses, cl)
	}
	return nil
}

// Problems returns what is wrong with a clause record, empty when it is
// well formed.
func (cl Clause) Problems() []string {
	var ps []string
	req := func(v, what string) {
		if v == "" {
			ps = append(ps, what+" is empty")
		}
	}
	req(cl.ID, "id")
	req(cl.Protocol, "protocol")
	req(cl.SpecVersion, "spec_version")
	req(cl.SourceRef.Document, "source_ref.document")
	req(cl.SourceRef.Section, "source_ref.section")
	req(cl.SourceRef.URL, "source_ref.url")
	req(cl.SourceRef.Quote, "source_ref.quote")
	req(cl.Actor, "actor")
	if !slices.Contains(SourceKinds, cl.SourceRef.Kind) {
		ps = append(ps, fmt.Sprintf("source kind %q is not one of %v", cl.SourceRef.Kind, SourceKinds))
	}
	if !slices.Contains(Protocols, cl.Protocol) {
		ps = append(ps, fmt.Sprintf("protocol %q is not one of %v", cl.Protocol, Protocols))
	}
	if !slices.Contains(ir.Modalities, cl.Modality) {
		ps = append(ps, fmt.Sprintf("modality %q is not one of %v", cl.Modality, ir.Modalities))
	}
	if !slices.Contains(ir.Classes, cl.Taxonomy) {
		ps = append(ps, fmt.Sprintf("taxonomy %q is not one of %v", cl.Taxonomy, ir.Classes))
	}
	if len(cl.Principles) == 0 {
		ps = append(ps, "no principles")
	}
	for _, p := range cl.Principles {
		if !slices.Contains(ir.Principles, p) {
			ps = append(ps, fmt.Sprintf("principle %q is not one of %v", p, ir.Principles))
		}
	}
	if cl.SourceRef.Kind == FromWardenReading && cl.AmbiguityNote == "" {
		ps = append(ps, "source kind "+FromWardenReading+" without a note saying what the clause rests on")
	}
	if cl.Ambiguous && cl.AmbiguityNote == "" && cl.Modality != "NOT_SPECIFIED" {
		ps = append(ps, "ambiguous without a note")
	}
	if len(cl.SourceRef.Quote) > 160 {
		ps = append(ps, "quote longer than 160 characters: keep quotes short")
	}
	return ps
}
