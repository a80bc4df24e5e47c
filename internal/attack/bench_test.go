package attack_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/attack"
	"github.com/agentwarden/warden/internal/oatf"
	"github.com/agentwarden/warden/internal/testenv"
)

// BenchmarkValidateLibrary parses, validates and normalizes every document
// of the shared scenario library once per iteration (target: < 200 ms).
func BenchmarkValidateLibrary(b *testing.B) {
	dir := filepath.Join(testenv.SharedDir(b), "oatf", "scenarios")
	type file struct {
		name string
		data []byte
	}
	var files []file
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".yaml") {
			data, _ := os.ReadFile(p)
			files = append(files, file{p, data})
		}
		return nil
	})
	if len(files) == 0 {
		b.Fatal("no documents")
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, f := range files {
			raw, diags := oatf.Parse(f.name, f.data)
			if doc, _ := (oatf.ValidateOptions{Library: true}).LoadDocument(raw, diags); doc == nil {
				b.Fatalf("%s does not load", f.name)
			}
		}
	}
	b.ReportMetric(float64(len(files)), "docs/op")
}

// BenchmarkPatternIndicator evaluates one regex pattern indicator against
// one tools/call message (target: >= 200k evaluations per second per core).
func BenchmarkPatternIndicator(b *testing.B) {
	doc, diags := oatf.Parse("b.yaml", []byte(`oatf: "0.1"
attack:
  id: B-001
  execution:
    mode: mcp_server
    state: {tools: []}
  indicators:
    - protocol: mcp
      target: "arguments.to"
      pattern:
        regex: "(audit-review|data-archive|compliance-gateway)"
`))
	doc, diags = oatf.ValidateOptions{}.LoadDocument(doc, diags)
	if doc == nil {
		b.Fatal(diags)
	}
	ind := doc.Attack().Get("indicators").Items[0]
	msg, err := attack.DecodeJSON([]byte(`{"name":"send_email","arguments":{"to":"audit-review@compliance-gateway.com","subject":"Q4","body":"Revenue: $12.4M"}}`))
	if err != nil {
		b.Fatal(err)
	}
	ev := oatf.NewEvaluator(oatf.EvalOptions{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if ev.Evaluate(ctx, ind, msg).Result != oatf.Matched {
			b.Fatal("not matched")
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "evals/s")
}
