package seedtable

import (
	"testing"
)

func TestParse(t *testing.T) {
	Need(t)
	spans := Spans()
	if len(spans) != 8 {
		t.Fatalf("parsed %d spans, want the seed's 8", len(spans))
	}
	byType := map[string]Span{}
	total := 0
	for _, s := range spans {
		byType[s.Type] = s
		if s.NameFmt == "" || (s.Kind != "CLIENT" && s.Kind != "SERVER") {
			t.Errorf("%s: name %q kind %q", s.Type, s.NameFmt, s.Kind)
		}
		total += len(s.Fields)
	}
	inv := byType["aitf.mcp.tool.invoke"]
	if len(inv.Fields) != 11 || len(inv.Events) != 3 {
		t.Errorf("tool.invoke: %d fields, %d events; want 11 and 3", len(inv.Fields), len(inv.Events))
	}
	if s := byType["aitf.mcp.sampling.request"]; s.Kind != "SERVER" || len(s.Fields) != 6 {
		t.Errorf("sampling.request = %+v", s)
	}
	if total != 6+2+4+11+6+3+4+6 {
		t.Errorf("parsed %d span fields in all", total)
	}
	if m := CoSAIMapping(); len(m) != 7 || m[2].CoSAI != "mcp.request.args" || m[2].AITF != "aitf.mcp.tool.input" {
		t.Errorf("CoSAI mapping = %+v", m)
	}
	if got := ControlIDs("OWASP LLM06 (Excessive Agency), MITRE ATLAS [AML.T0040](https://atlas.mitre.org/techniques/AML.T0040)"); len(got) != 2 {
		t.Errorf("ControlIDs = %v", got)
	}
}
