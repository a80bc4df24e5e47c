package gateway

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentwarden/warden/internal/telemetry"
)

// A resources/read span names the resource as the upstream's
// resources/list answer did (its title, else its name), and names none
// the upstream did not list.
func TestResourceReadSpanNamesTheListedResource(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	rec := telemetry.NewRecorder(telemetry.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))})
	h := newHarness(t, RelayOptions{Upstream: "files", Pipeline: NewPipeline(),
		Recorder: &Records{Spans: rec, Transport: telemetry.TransportStdio}})
	exchange := func(request, result string) {
		t.Helper()
		h.send(h.client, request)
		up := h.recv(h.upstream)
		h.send(h.upstream, `{"jsonrpc":"2.0","id":`+up.ID.Raw()+`,"result":`+result+`}`)
		h.recv(h.client)
	}
	exchange(`{"jsonrpc":"2.0","id":1,"method":"resources/list"}`,
		`{"resources":[{"uri":"file:///data/config.yaml","name":"config.yaml","title":"Service configuration"},`+
			`{"uri":"file:///data/notes.txt","name":"notes.txt"}]}`)
	for _, tc := range []struct{ uri, want string }{
		{"file:///data/config.yaml", "Service configuration"},
		{"file:///data/notes.txt", "notes.txt"},
		{"file:///data/unlisted.txt", ""},
	} {
		exchange(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"`+tc.uri+`"}}`,
			`{"contents":[{"uri":"`+tc.uri+`","mimeType":"text/plain","text":"x"}]}`)
		got, ok := spanAttrs(endedSpan(t, sr, "mcp.resource.read "+tc.uri))[telemetry.AttrResourceName]
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: %s = %q (set %v), want %q", tc.uri, telemetry.AttrResourceName, got, ok, tc.want)
		}
	}
}
