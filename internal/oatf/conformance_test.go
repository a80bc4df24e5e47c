package oatf

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestOATFConformance runs the shared OATF conformance suite
// (../shared/oatf/conformance next to the module root, or
// $OATF_CONFORMANCE_DIR). Every failing case is reported on stdout by its id
// ("FAIL VAL-005j: ..."), and the last line is "N passed, M failed", with
// or without -v. (go test itself drops a passing package's output unless
// -v is given or the test runs in the package's folder: `cd internal/oatf
// && go test -run TestOATFConformance`.)
func TestOATFConformance(t *testing.T) {
	dir := conformanceDir(t)
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".meta.yaml") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	r := &conformanceRun{t: t}
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f)
		rel = filepath.ToSlash(rel)
		switch {
		case strings.HasPrefix(rel, "parse/valid/"):
			r.parseCorpus(rel, f, true)
		case strings.HasPrefix(rel, "parse/invalid/"):
			r.parseCorpus(rel, f, false)
		default:
			r.suite(rel, f)
		}
	}
	if r.passed == 0 {
		fmt.Println("FAIL: no conformance case ran")
		t.Fail()
	}
	// Printed, not logged: t.Log is shown only under -v or on failure, and
	// after the test's other output.
	fmt.Printf("%d passed, %d failed\n", r.passed, r.failed)
}

type conformanceRun struct {
	t              *testing.T
	passed, failed int
}

func (r *conformanceRun) result(id, problem string) {
	if problem == "" {
		r.passed++
		return
	}
	r.failed++
	fmt.Printf("FAIL %s: %s\n", id, problem)
	r.t.Fail()
}

// conformanceDir finds the fixtures, skipping (or failing under
// WARDEN_REQUIRE_DEPS=1) when they are not there.
func conformanceDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("OATF_CONFORMANCE_DIR")
	if dir == "" {
		if root := moduleRoot(); root != "" {
			dir = filepath.Join(filepath.Dir(root), "shared", "oatf", "conformance")
		}
	}
	if fi, err := os.Stat(dir); dir == "" || err != nil || !fi.IsDir() {
		msg := fmt.Sprintf("OATF conformance fixtures not found at %q (set OATF_CONFORMANCE_DIR)", dir)
		if os.Getenv("WARDEN_REQUIRE_DEPS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

// moduleRoot walks up from the working directory to warden's go.mod.
func moduleRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			strings.Contains(string(data), "module github.com/agentwarden/warden\n") {
			return dir
		}
		if filepath.Dir(dir) == dir {
			return ""
		}
	}
}

func (r *conformanceRun) parseCorpus(rel, path string, valid bool) {
	text, err := os.ReadFile(path)
	if err != nil {
		r.result(rel, err.Error())
		return
	}
	doc, diags := Parse(rel, text)
	switch {
	case valid && doc == nil:
		r.result(rel, fmt.Sprintf("valid document rejected: %v", Errors(diags)))
	case !valid && doc != nil && strings.Contains(rel, "unknown-fields") && hasRule(Warnings(diags), RuleUnknownField):
		r.result(rel, "") // the fixture allows accepting unknown fields with warnings
	case !valid && doc != nil:
		r.result(rel, "invalid document accepted")
	default:
		r.result(rel, "")
	}
}

func hasRule(diags []Diagnostic, rule string) bool {
	for _, d := range diags {
		if d.Rule == rule {
			return true
		}
	}
	return false
}

func (r *conformanceRun) suite(rel, path string) {
	text, err := os.ReadFile(path)
	if err != nil {
		r.result(rel, err.Error())
		return
	}
	cases, diags := DecodeYAML(rel, text)
	if HasErrors(diags) || cases.Kind != Seq {
		r.result(rel, fmt.Sprintf("cannot read suite: %v", diags))
		return
	}
	for _, c := range cases.Items {
		id := c.Get("id").StringOr(rel)
		r.result(id, runCase(rel, c.Get("input"), c.Get("expected")))
	}
}

// runCase runs one case and returns "" or what went wrong.
func runCase(rel string, in, want *Value) (problem string) {
	defer func() {
		if p := recover(); p != nil {
			problem = fmt.Sprintf("panic: %v", p)
		}
	}()
	dir, file := filepath.Split(rel)
	switch strings.TrimSuffix(dir, "/") {
	case "validate":
		return caseValidate(in, want)
	case "normalize":
		return caseNormalize(in, want)
	case "roundtrip":
		return caseRoundtrip(in)
	case "evaluate":
		return caseEvaluate(in, want)
	case "verdict":
		return caseVerdict(in, want)
	case "primitives":
		return casePrimitive(strings.TrimSuffix(file, ".yaml"), in, want)
	}
	return "no runner for " + rel
}

func parseInput(in *Value) (*Document, []Diagnostic) {
	return Parse("input", []byte(in.StringOr("")))
}

func caseValidate(in, want *Value) string {
	doc, diags := parseInput(in)
	if doc != nil {
		diags = append(diags, Validate(doc)...)
	}
	errs, warns := Errors(diags), Warnings(diags)
	if w := want.Get("valid"); w != nil && w.Bool && len(errs) > 0 {
		return fmt.Sprintf("want valid, got errors %v", errs)
	}
	if p := missing(want.Get("errors"), errs); p != "" {
		return p
	}
	if e := want.Get("errors"); e != nil && len(e.Items) == 0 && len(errs) > 0 {
		return fmt.Sprintf("want no errors, got %v", errs)
	}
	if w := want.Get("warnings"); w != nil && len(w.Items) == 0 && len(warns) > 0 {
		return fmt.Sprintf("want no warnings, got %v", warns)
	}
	return missing(want.Get("warnings"), warns)
}

// missing reports expected {rule, path?} entries absent from got.
func missing(expected *Value, got []Diagnostic) string {
	for _, e := range expected.itemsOrNil() {
		rule, path := e.Get("rule").StringOr(""), e.Get("path")
		found := false
		for _, d := range got {
			found = found || (d.Rule == rule && (!present(path) || d.Path == path.Str))
		}
		if !found {
			return fmt.Sprintf("missing %s at %s; got %v", rule, path.StringOr("(any path)"), got)
		}
	}
	return ""
}

func caseNormalize(in, want *Value) string {
	doc, diags := parseInput(in)
	if doc == nil {
		return fmt.Sprintf("input does not parse: %v", diags)
	}
	exp, diags := Parse("expected", []byte(want.StringOr("")))
	if exp == nil {
		return fmt.Sprintf("expected does not parse: %v", diags)
	}
	before := doc.Root.Clone()
	got := Normalize(doc)
	if !Equal(doc.Root, before) {
		return "Normalize mutated its input"
	}
	if !Equal(got.Root, exp.Root) {
		g, _ := Serialize(got)
		e, _ := Serialize(exp)
		return fmt.Sprintf("normalized document differs\n--- got\n%s--- want\n%s", g, e)
	}
	if again := Normalize(got); !Equal(again.Root, got.Root) {
		return "Normalize is not idempotent"
	}
	return ""
}

func caseRoundtrip(in *Value) string {
	doc, diags := parseInput(in)
	if doc == nil {
		return fmt.Sprintf("input does not parse: %v", diags)
	}
	first := Normalize(doc)
	text, err := Serialize(first)
	if err != nil {
		return err.Error()
	}
	doc2, diags := Parse("serialized", text)
	if doc2 == nil {
		return fmt.Sprintf("serialized output does not parse: %v\n%s", diags, text)
	}
	if second := Normalize(doc2); !Equal(first.Root, second.Root) {
		return fmt.Sprintf("round trip changed the document:\n%s", text)
	}
	return ""
}

// mockSemantic returns a fixed score.
type mockSemantic float64

func (m mockSemantic) Score(context.Context, string, *Value) (float64, error) { return float64(m), nil }

func caseEvaluate(in, want *Value) string {
	opts := EvalOptions{NoCEL: in.Get("cel_evaluator").StringOr("") == "absent"}
	if s := in.Get("semantic_evaluator"); present(s) && s.Get("present").Bool {
		opts.Semantic = mockSemantic(s.Get("mock_score").Number())
	}
	got := NewEvaluator(opts).Evaluate(context.Background(), in.Get("indicator"), in.Get("message"))
	if got.Result != want.StringOr("") {
		return fmt.Sprintf("got %s (%s %s), want %s", got.Result, got.ErrorKind, got.Message, want.StringOr(""))
	}
	return ""
}

func caseVerdict(in, want *Value) string {
	var refs []IndicatorRef
	for _, ind := range in.Get("indicators").itemsOrNil() {
		refs = append(refs, IndicatorRef{ID: ind.Get("id").StringOr(""), Tier: ind.Get("tier").StringOr("")})
	}
	var results []IndicatorVerdict
	for _, v := range in.Get("verdicts").itemsOrNil() {
		results = append(results, IndicatorVerdict{IndicatorID: v.Get("indicator_id").StringOr(""), Result: v.Get("result").StringOr("")})
	}
	got := ComputeVerdict(in.Get("correlation_logic").StringOr("any"), refs, results)
	s := want.Get("evaluation_summary")
	wantSummary := Summary{int(s.Get("matched").Int), int(s.Get("not_matched").Int), int(s.Get("error").Int), int(s.Get("skipped").Int)}
	if got.Result != want.Get("result").StringOr("") || got.Summary != wantSummary {
		return fmt.Sprintf("got %s %+v, want %s %+v", got.Result, got.Summary, want.Get("result").StringOr(""), wantSummary)
	}
	return ""
}

func nonNull(v *Value) *Value {
	if present(v) {
		return v
	}
	return nil
}

func expectValue(got, want *Value) string {
	if present(want) != present(got) || (present(want) && !Equal(got, want)) {
		return fmt.Sprintf("got %s, want %s", CompactJSON(got), CompactJSON(want))
	}
	return ""
}

func extractorMap(v *Value) map[string]string {
	m := map[string]string{}
	for _, p := range v.pairsOrNil() {
		m[p.Key] = p.Value.StringOr("")
	}
	return m
}

func casePrimitive(name string, in, want *Value) string {
	switch name {
	case "compute-effective-state":
		return expectValue(ComputeEffectiveState(in.Get("phases").Items, int(in.Get("phase_index").Int)), want)
	case "evaluate-condition":
		return expectBool(EvaluateCondition(in.Get("condition"), in.Get("value")), want)
	case "evaluate-predicate":
		return expectBool(EvaluatePredicate(in.Get("predicate"), in.Get("value")), want)
	case "evaluate-extractor":
		s, ok := EvaluateExtractor(ExtractorFromValue(in.Get("extractor")), in.Get("message"), in.Get("direction").StringOr(""))
		var got *Value
		if ok {
			got = NewString(s)
		}
		return expectValue(got, want)
	case "evaluate-trigger":
		return caseTrigger(in, want)
	case "extract-protocol":
		return expectValue(NewString(ExtractProtocol(in.Get("mode").StringOr(""))), want)
	case "interpolate-template":
		s, _ := InterpolateTemplate(in.Get("template").StringOr(""), extractorMap(in.Get("extractors")),
			nonNull(in.Get("request")), nonNull(in.Get("response")))
		return expectValue(NewString(s), want)
	case "interpolate-value":
		v, _ := InterpolateValue(in.Get("value"), extractorMap(in.Get("extractors")), nonNull(in.Get("request")), nonNull(in.Get("response")))
		return expectValue(v, want)
	case "parse-duration":
		text := in.StringOr(in.Get("duration").StringOr(""))
		d, err := ParseDuration(text)
		if e := want.Get("error"); present(e) && e.Bool {
			if err == nil {
				return fmt.Sprintf("want an error, got %v", d)
			}
			return ""
		}
		if err != nil || int64(d.Seconds()) != want.Get("seconds").Int {
			return fmt.Sprintf("got %v (%v), want %d s", d, err, want.Get("seconds").Int)
		}
		return ""
	case "resolve-simple-path":
		got, found := ResolveSimplePath(in.Get("path").StringOr(""), in.Get("value"))
		if want.Kind == Map && len(want.Pairs) == 2 && want.Get("found").Bool && want.Has("value") {
			if !found || got.Kind != Null {
				return fmt.Sprintf("want found null, got %s (found=%v)", CompactJSON(got), found)
			}
			return ""
		}
		if !found {
			got = nil
		}
		return expectValue(got, want)
	case "resolve-wildcard-path":
		return expectValue(NewSeq(ResolveWildcardPath(in.Get("path").StringOr(""), in.Get("value"))...), want.Get("values"))
	case "select-response":
		return expectValue(SelectResponse(in.Get("entries").itemsOrNil(), in.Get("request")), want)
	}
	return "no runner for primitive " + name
}

func expectBool(got bool, want *Value) string {
	if want.Kind != Bool || got != want.Bool {
		return fmt.Sprintf("got %v, want %s", got, CompactJSON(want))
	}
	return ""
}

func caseTrigger(in, want *Value) string {
	trig, err := TriggerFromValue(in.Get("trigger"))
	if err != nil {
		return err.Error()
	}
	var ev *ProtocolEvent
	if e := in.Get("event"); present(e) {
		ev = &ProtocolEvent{Type: e.Get("event_type").StringOr(""), Content: e.Get("content")}
	}
	elapsed, err := ParseDuration(in.Get("elapsed").StringOr("0s"))
	if err != nil {
		return err.Error()
	}
	got := EvaluateTrigger(trig, ev, elapsed, TriggerState{EventCount: int(in.Get("state").Get("event_count").Int)})
	result := "not_advanced"
	if got.Advanced {
		result = "advanced"
	}
	if result != want.Get("result").StringOr("") || got.Reason != want.Get("reason").StringOr("") ||
		int64(got.State.EventCount) != want.Get("state").Get("event_count").Int {
		return fmt.Sprintf("got %s %q count=%d, want %s", result, got.Reason, got.State.EventCount, CompactJSON(want))
	}
	return ""
}

// TestOATFConformanceReport runs TestOATFConformance in a child test process
// without -v against a suite of one passing and one failing case: the
// failing case is reported by id, and "1 passed, 1 failed" is the last line
// the test prints; against the passing case alone, "1 passed, 0 failed".
func TestOATFConformanceReport(t *testing.T) {
	if os.Getenv("OATF_CONFORMANCE_CHILD") != "" {
		t.Skip("running as the child of TestOATFConformanceReport")
	}
	const pass = `- id: DUR-001
  input: "30s"
  expected: {seconds: 30}
`
	const fail = `- id: DUR-BAD
  input: "1m"
  expected: {seconds: 61}
`
	for _, tc := range []struct {
		suite string
		last  string // the line before go test's own verdict line
		fails bool
	}{
		{pass + fail, "1 passed, 1 failed", true},
		{pass, "1 passed, 0 failed", false},
	} {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "primitives"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "primitives", "parse-duration.yaml"), []byte(tc.suite), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestOATFConformance$", "-test.count=1")
		cmd.Env = append(os.Environ(), "OATF_CONFORMANCE_DIR="+dir, "OATF_CONFORMANCE_CHILD=1")
		out, err := cmd.Output()
		if failed := err != nil; failed != tc.fails {
			t.Fatalf("child failed=%v (%v), want %v:\n%s", failed, err, tc.fails, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		// Without -v, go test's own lines close the output: PASS, or
		// "--- FAIL: TestOATFConformance (…)" and FAIL.
		at := len(lines) - 2
		if tc.fails {
			at--
		}
		if at < 0 || lines[at] != tc.last {
			t.Errorf("output does not end with %q:\n%s", tc.last, out)
		}
		if got := strings.Contains(string(out), "FAIL DUR-BAD: "); got != tc.fails {
			t.Errorf("failing case reported by id: %v, want %v:\n%s", got, tc.fails, out)
		}
	}
}
