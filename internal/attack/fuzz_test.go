package attack

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/oatf"
	"github.com/agentwarden/warden/internal/transport"
)

// FuzzAGUIStream feeds arbitrary bytes to the AG-UI stream parser (SSE
// framing, JSON decoding, naming, enrichment). It must never panic; every
// event name it yields is lower case; toolCallName is only ever added to
// tool_call_args, tool_call_end and tool_call_chunk, and only the name of
// the call's start.
func FuzzAGUIStream(f *testing.F) {
	f.Add([]byte("data: {\"type\":\"TOOL_CALL_START\",\"toolCallId\":\"c\",\"toolCallName\":\"x\"}\n\ndata: {\"type\":\"TOOL_CALL_END\",\"toolCallId\":\"c\"}\n\n"))
	f.Add([]byte("event: TOOL_CALL_ARGS\ndata: {\"toolCallId\":\"c\",\"delta\":\"{}\"}\n\n"))
	f.Add([]byte("data: {\"type\":\"ToolCallChunk\",\"toolCallId\":\"c\"}\r\n\r\n: comment\n\n"))
	f.Add([]byte("data: [1,2]\n\ndata: {\"type\":1}\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		er := transport.NewEventReader(bytes.NewReader(data), 1<<16)
		p := newStreamParser()
		for range 1000 {
			ev, err := er.Next()
			if errors.Is(err, io.EOF) || err != nil {
				break
			}
			hadName := bytes.Contains(ev.Data, []byte(`"toolCallName"`))
			name, content, err := p.parse(ev)
			if err != nil {
				continue
			}
			if name != strings.ToLower(name) {
				t.Fatalf("event name %q is not lower case", name)
			}
			if !hadName && content.Has("toolCallName") {
				switch name {
				case "tool_call_args", "tool_call_end", "tool_call_chunk":
					tc := p.byID[content.Get("toolCallId").StringOr("")]
					if tc == nil || content.Get("toolCallName").StringOr("") != tc.name {
						t.Fatalf("enriched %s with %v, not its start's name", name, content.Get("toolCallName"))
					}
				default:
					t.Fatalf("%s gained a toolCallName", name)
				}
			}
		}
		p.pending()
	})
}

// FuzzDecodeJSON: the ordered decoder never panics, and what it accepts
// re-encodes to JSON it accepts again, identically.
func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(`{"b":1,"a":[true,null,"x",1.5]}`))
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Add([]byte(`[[[[[]]]]]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := DecodeJSON(data)
		if err != nil {
			return
		}
		out := encodeJSON(v)
		v2, err := DecodeJSON(out)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", out, err)
		}
		if out2 := encodeJSON(v2); !bytes.Equal(out, out2) {
			t.Fatalf("unstable: %s then %s", out, out2)
		}
	})
}

// FuzzA2AStream feeds arbitrary bytes to the a2a_client's stream parsing
// (SSE framing, JSON-RPC response decoding, A2A 1.0 → OATF conversion). It
// must never panic; every event is the stream's method, task/status (whose
// content is a status-update) or task/artifact (an artifact-update); the
// conversion is idempotent; and an item written back in 1.0 form and read
// again keeps its kind.
func FuzzA2AStream(f *testing.F) {
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"task\":{\"id\":\"t\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}}\n\n"))
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"statusUpdate\":{\"taskId\":\"t\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\"}}}}\n\n"))
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"kind\":\"artifact-update\",\"taskId\":\"t\",\"artifact\":{\"parts\":[{\"kind\":\"file\",\"file\":{\"uri\":\"u\"}}]}}}\n\n"))
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"message\":{\"role\":\"ROLE_AGENT\",\"parts\":[{\"url\":\"u\",\"raw\":\"AA\"}]},\"task\":1}}\n\n"))
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"x\"}}\n\ndata: [1]\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		er := transport.NewEventReader(bytes.NewReader(data), 1<<16)
		for range 1000 {
			ev, err := er.Next()
			if err != nil {
				break
			}
			name, content, err := a2aStreamEvent("message/stream", ev.Data)
			if err != nil {
				continue
			}
			kind := content.Get("kind").StringOr("")
			switch name {
			case "message/stream":
			case a2aStatusEvent:
				if kind != "status-update" {
					t.Fatalf("task/status with kind %q", kind)
				}
			case a2aArtifactEvent:
				if kind != "artifact-update" {
					t.Fatalf("task/artifact with kind %q", kind)
				}
			default:
				t.Fatalf("event %q", name)
			}
			if again := a2aResultOATF(content); !oatf.Equal(again, content) {
				t.Fatalf("not idempotent:\n%s\n%s", oatf.CompactJSON(content), oatf.CompactJSON(again))
			}
			switch kind {
			case "task", "message", "status-update", "artifact-update":
				back := a2aResultOATF(a2aResult10("message/stream", content))
				if k := back.Get("kind").StringOr(""); k != kind {
					t.Fatalf("kind %q came back as %q through 1.0: %s", kind, k, oatf.CompactJSON(content))
				}
			}
		}
	})
}
