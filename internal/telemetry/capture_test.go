package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/agentwarden/warden/internal/ocsf"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// canaries are planted secrets; none may reach an exporter with the default
// capture settings. Each is built so that the parts match no pattern on
// their own and the test source itself holds no real-looking key.
var canaries = []string{
	"AKIA" + "CANARY7Q2W3E4R5T",                                        // AWS access key id
	"ghp_" + strings.Repeat("Cn4ry", 8),                                // GitHub token
	"sk-" + "proj-" + strings.Repeat("canary0", 4),                     // API key
	"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjYW5hcnkifQ.c2lnbmF0dXJlY2FuYXJ5", // JWT
	"hunter2-canary-password",                                          // by member name
	"canary-client-secret-77",                                          // by member name
	"MIIEcanaryPRIVATEKEYBODY",                                         // inside a PEM block
	"canary-bearer-token-abcdef",                                       // Authorization: Bearer
	"s3cr3t-canary-in-url",                                             // URL credentials
}

// memorySink collects OCSF events as JSON.
type memorySink struct {
	mu  sync.Mutex
	out []string
}

func (s *memorySink) Emit(e ocsf.Event) {
	b, _ := json.Marshal(e)
	s.mu.Lock()
	s.out = append(s.out, string(b))
	s.mu.Unlock()
}

func TestNoCanaryReachesAnExporter(t *testing.T) {
	args := fmt.Sprintf(`{"aws":%q,"note":"use %s please","cfg":{"password":%q,"client_secret":%q},"key":"-----BEGIN RSA PRIVATE KEY-----\n%s\n-----END RSA PRIVATE KEY-----","hdr":"Authorization: Bearer %s","db":"postgres://admin:%s@db.internal/x","jwt":%q}`,
		canaries[0], canaries[1], canaries[4], canaries[5], canaries[6], canaries[7], canaries[8], canaries[3])
	output := fmt.Sprintf(`{"content":[{"type":"text","text":"env: OPENAI_API_KEY=%s GITHUB=%s"}]}`, canaries[2], canaries[1])
	ops := []*Operation{
		{Method: "tools/call", Tool: "deploy", Upstream: "ops", RequestID: "1",
			Params: []byte(`{"name":"deploy","arguments":` + args + `}`), Arguments: []byte(args), Result: []byte(output),
			Approval: "approved", Approver: "alice"},
		{Method: "tools/call", Tool: "deploy", Upstream: "ops", RequestID: "2", Arguments: []byte(args),
			Error: &RPCError{Code: -32000, Message: "failed with token=" + canaries[7] + " key " + canaries[0]}},
		{Method: "tools/call", Tool: "deploy", Upstream: "ops", RequestID: "3", Arguments: []byte(args),
			Denial: &Denial{Stage: "policy", Rule: "r", Reason: "secret " + canaries[2] + " in arguments"}},
		{Method: "prompts/get", Upstream: "ops", RequestID: "4", Params: []byte(`{"name":"p","arguments":` + args + `}`)},
	}
	for _, profile := range []ocsf.Profile{ocsf.ProfileStandard, ocsf.ProfileAITF} {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		sink := &memorySink{}
		r := NewRecorder(Options{TracerProvider: tp, OCSFSink: sink, OCSFProfile: profile})
		for _, op := range ops {
			r.Record(context.Background(), op)
		}
		dump, _ := json.Marshal(exp.GetSpans().Snapshots())
		all := string(dump) + strings.Join(sink.out, "\n")
		if !strings.Contains(all, Redacted) {
			t.Fatalf("%s: nothing was redacted; is content captured at all?", profile)
		}
		for _, c := range canaries {
			if strings.Contains(all, c) {
				t.Errorf("%s: canary %q reached an exporter", profile, c)
			}
		}
		if len(sink.out) < len(ops) {
			t.Errorf("%s: %d OCSF events for %d operations", profile, len(sink.out), len(ops))
		}
	}
}

func TestCaptureModes(t *testing.T) {
	big := `{"text":"` + strings.Repeat("é", 5000) + `"}`
	cases := []struct {
		c     Capture
		in    string
		check func(string, bool) bool
	}{
		{Capture{}, `{"password":"x1"}`, func(s string, ok bool) bool { return ok && s == `{"password":"[REDACTED]"}` }},
		{Capture{}, big, func(s string, ok bool) bool {
			return ok && strings.Contains(s, "…[truncated ") && len(s) < DefaultMaxBytes+40 && !strings.Contains(s, "\uFFFD")
		}},
		{Capture{Mode: CaptureCapped, MaxBytes: 10}, `{"password":"x1"}`, func(s string, ok bool) bool { return ok && strings.HasPrefix(s, `{"password`) }},
		{Capture{Mode: CaptureFull}, big, func(s string, ok bool) bool { return ok && s == big }},
		{Capture{Mode: CaptureHash}, "abc", func(s string, ok bool) bool {
			return ok && s == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
		}},
		{Capture{Mode: CaptureOff}, "abc", func(s string, ok bool) bool { return !ok && s == "" }},
	}
	for i, tc := range cases {
		if s, ok := tc.c.capture(tc.in); !tc.check(s, ok) {
			t.Errorf("case %d (%s): capture = %.80q, %v", i, tc.c.Mode, s, ok)
		}
	}
}

func TestRedactKeepsOrdinaryText(t *testing.T) {
	for _, s := range []string{
		`{"path":"/data/config.yaml","max_tokens":100}`,
		"fetch the report and summarise it",
		`{"author":"Jane","tokens_used":12}`,
	} {
		if got := Redact(s); got != s {
			t.Errorf("Redact(%q) = %q, want it unchanged", s, got)
		}
	}
}

func TestOffModeRecordsNoContent(t *testing.T) {
	op := *goldens["aitf.mcp.tool.invoke"].op
	span := record(t, Options{Capture: Capture{Mode: CaptureOff}}, &op)
	a := attrMap(span.Attributes())
	for _, k := range []string{"aitf.mcp.tool.input", "aitf.mcp.tool.output", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"} {
		if _, ok := a[k]; ok {
			t.Errorf("capture off: %s recorded", k)
		}
	}
}

// redactUnfiltered is Redact without its word filter: both expressions on
// everything.
func redactUnfiltered(s string) string {
	s = secretMember.ReplaceAllString(s, `$1"`+Redacted+`"`)
	return secretValue.ReplaceAllStringFunc(s, redactValue)
}

// FuzzRedactFilter checks that the word filter in front of the expressions
// never changes what Redact returns.
func FuzzRedactFilter(f *testing.F) {
	for _, c := range canaries {
		f.Add(c)
	}
	for _, s := range []string{
		`{"message":"bench"}`, `{"Api_Key":"x"}`, `{"ſecret":"x"}`, `{"toKen":"x"}`, `TOKEN=abcdef`,
		`Authorization: BEARER abcdefgh12`, `https://u:p@host/`, "-----BEGIN EC PRIVATE KEY-----\nabc",
		`{"content":[{"type":"text","text":"hello"}]}`, `pwd: hunter22`, `GHS_` + strings.Repeat("a", 36),
		strings.Repeat("x", 1500) + `"password":"p"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Redact(s), redactUnfiltered(s); got != want {
			t.Fatalf("Redact(%q) = %q, want %q", s, got, want)
		}
	})
}

// TestRawOrStringDecodesAsBefore: captured content goes into OCSF as
// itself when it is JSON, else as a JSON string; the quick refusal of text
// that cannot be JSON decodes to the same value json.Valid and
// json.Marshal made of it.
func TestRawOrStringDecodesAsBefore(t *testing.T) {
	for _, s := range []string{`{"a":1}`, ` [1, 2]`, `"q"`, `-1.5`, `12`, `true`, `null`, "\t\n{}",
		"", " ", "bench", "File written", "123abc", "nope", "<b>&amp;</b>", "bad \xff utf-8", "trailing {\"a\":1}", "{not json"} {
		var before []byte
		if json.Valid([]byte(s)) {
			before = []byte(s)
		} else {
			before, _ = json.Marshal(s)
		}
		var want, got any
		if err := json.Unmarshal(before, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(rawOrString(s), &got); err != nil {
			t.Errorf("%q: %s is not JSON: %v", s, rawOrString(s), err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %s decodes to %#v, want %#v", s, rawOrString(s), got, want)
		}
	}
}

// BenchmarkRedactCommon is the redaction of what a tools/call commonly
// carries, with no secret: its arguments, its output text and its result.
func BenchmarkRedactCommon(b *testing.B) {
	in := []string{`{"message":"bench"}`, "bench", `{"content":[{"type":"text","text":"bench"}]}`,
		`{"path":"/home/user/projects/warden/README.md","encoding":"utf-8"}`}
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range in {
			Redact(s)
		}
	}
}
