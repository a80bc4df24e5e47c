package aguigw

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// roundTrip answers every upstream request with one SSE stream, without a
// network.
type roundTrip string

func (s roundTrip) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(string(s)))}, nil
}

// BenchmarkRelayRun relays one benign run of 50 events (a text message of
// 20 deltas, a tool call, its result, a state snapshot, a chunk stream of
// 10 chunks, custom events) through the handler: the gateway's own cost
// per run, with no network and a discarding client.
func BenchmarkRelayRun(b *testing.B) {
	frames := []string{runStarted, `{"type":"TEXT_MESSAGE_START","messageId":"a1","role":"assistant"}`}
	for i := range 20 {
		frames = append(frames, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"a1","delta":"word `+strconv.Itoa(i)+` of a plain answer, "}`)
	}
	frames = append(frames, `{"type":"TEXT_MESSAGE_END","messageId":"a1"}`,
		`{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"get_weather"}`,
		`{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"{\"city\":"}`,
		`{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"\"Paris\"}"}`,
		`{"type":"TOOL_CALL_END","toolCallId":"c1"}`,
		`{"type":"TOOL_CALL_RESULT","messageId":"t1","toolCallId":"c1","role":"tool","content":"{\"temp\":21,\"sky\":\"clear\"}"}`,
		`{"type":"STATE_SNAPSHOT","snapshot":{"city":"Paris","forecast":{"temp":21,"days":[1,2,3]}}}`,
		`{"type":"TEXT_MESSAGE_CHUNK","messageId":"a2","role":"assistant","delta":"It is "}`)
	for range 9 {
		frames = append(frames, `{"type":"TEXT_MESSAGE_CHUNK","delta":"sunny "}`)
	}
	for i := range 8 {
		frames = append(frames, `{"type":"CUSTOM","name":"progress","value":{"step":`+strconv.Itoa(i)+`}}`)
	}
	frames = append(frames, runFinished)
	var stream strings.Builder
	for _, f := range frames {
		stream.WriteString("data: " + f + "\n\n")
	}
	h, err := New(Options{Upstream: "http://127.0.0.1:1/agent", Client: &http.Client{Transport: roundTrip(stream.String())}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/agui/x", strings.NewReader(userInput))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if !strings.Contains(w.Body.String(), "RUN_FINISHED") || strings.Contains(w.Body.String(), "warden:") {
			b.Fatalf("the run was not relayed whole:\n%s", w.Body.String())
		}
	}
}
