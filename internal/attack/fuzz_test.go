package attack

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

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
