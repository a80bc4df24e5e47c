package secproc

import (
	"context"
	"encoding/json"
	"testing"
)

// BenchmarkInspectToolCall measures a typical tools/call: a file path, a
// URL and a short message, all benign.
func BenchmarkInspectToolCall(b *testing.B) {
	p, err := New(CorpusConfig())
	if err != nil {
		b.Fatal(err)
	}
	ev := Event{Kind: KindToolCall, Upstream: "files", Session: "s", Subject: "alice", Tool: "write_file",
		Arguments: json.RawMessage(`{"path":"/workspace/reports/2024/q3.md","content":"# Q3\nRevenue grew 12%; see https://docs.python.org/3/ for the script.\n","mode":"overwrite"}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if fs := p.Inspect(ctx, ev); len(fs) != 0 {
			b.Fatal(fs)
		}
	}
}

// BenchmarkInspectToolResult measures a 4 KiB text result.
func BenchmarkInspectToolResult(b *testing.B) { benchToolResult(b, CorpusConfig()) }

// benchToolResult inspects a clean 4 KiB text result under cfg.
func benchToolResult(b *testing.B, cfg Config) {
	p, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	text := ""
	for len(text) < 4096 {
		text += "The build finished in 12.3s; 240 tests passed and 0 failed. See the report for details.\n"
	}
	c, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}})
	ev := Event{Kind: KindToolResult, Upstream: "files", Session: "s", Tool: "run_tests", Content: c}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if fs := p.Inspect(ctx, ev); len(fs) != 0 {
			b.Fatal(fs)
		}
	}
}
