package transport

import (
	"net/http"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
)

// An Mcp-Param-* header is compared with its argument by presence, not by
// value: an empty header is how a client mirrors an empty string (SEP-2243,
// and the conformance suite's http-custom-headers scenario), and it is not
// the header's absence.
func TestHTTPServerEmptyParamHeader(t *testing.T) {
	l := newHSListener(t, HTTPServerOptions{
		ParamBindings: func(tool string) ([]mcp.ParamBinding, bool) {
			return []mcp.ParamBinding{{Path: []string{"region"}, Header: "Region"}}, tool == "deploy"
		},
	})
	call := func(args string) string {
		return `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"deploy","arguments":` + args +
			`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	}
	for _, tc := range []struct {
		name   string
		args   string
		header *string // nil: no Mcp-Param-Region header
		ok     bool
	}{
		{"empty argument, empty header", `{"region":""}`, ptr(""), true},
		{"empty argument, no header", `{"region":""}`, nil, false},
		{"absent argument, empty header", `{}`, ptr(""), false},
		{"null argument, empty header", `{"region":null}`, ptr(""), false},
		{"argument, empty header", `{"region":"eu"}`, ptr(""), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := l.newRequest(t, t.Context(), http.MethodPost, "", call(tc.args), map[string]string{
				"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "deploy",
			})
			if tc.header != nil {
				req.Header["Mcp-Param-Region"] = []string{*tc.header}
			}
			done := make(chan *http.Response, 1)
			go func() {
				resp, err := l.ts.Client().Do(req)
				if err != nil {
					t.Errorf("POST: %v", err)
				}
				done <- resp
			}()
			if !tc.ok {
				var resp *http.Response
				select {
				case resp = <-done:
				case s := <-l.sessions:
					hsWrite(t, s.conn, jsonrpc.NewResult(mustRead(t, s.conn).ID, []byte(`{}`)))
					<-done
					t.Fatal("the call was relayed; want it refused with a header mismatch")
				case <-time.After(waitTimeout):
					t.Fatal("no response to POST")
				}
				if resp == nil {
					return
				}
				hsStatus(t, resp, http.StatusBadRequest)
				if _, code, rule := hsRPCError(t, resp); code != mcp.CodeHeaderMismatch || rule != "header-mismatch" {
					t.Fatalf("error code=%d rule=%q, want the header mismatch", code, rule)
				}
				l.noSession(t)
				return
			}
			s := l.session(t)
			m := mustRead(t, s.conn)
			if got := m.Header["Mcp-Param-Region"]; len(got) != 1 || got[0] != "" {
				t.Fatalf("the relayed message's Mcp-Param-Region = %q, want the one empty value", got)
			}
			hsWrite(t, s.conn, jsonrpc.NewResult(m.ID, []byte(`{}`)))
			var resp *http.Response
			select {
			case resp = <-done:
			case <-time.After(waitTimeout):
				t.Fatal("no response to POST")
			}
			if resp == nil {
				return
			}
			defer resp.Body.Close()
			hsStatus(t, resp, http.StatusOK)
		})
	}
}

func ptr[T any](v T) *T { return &v }
