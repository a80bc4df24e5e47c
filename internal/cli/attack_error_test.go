package cli

import (
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/testenv"
)

// aguiAttack is an ag_ui_client document whose indicator would match a
// tool call the agent makes.
const aguiAttack = `oatf: "0.1"
attack:
  id: TEST-030
  execution:
    mode: ag_ui_client
    state:
      run_agent_input:
        messages: [{id: m1, role: user, content: "hello"}]
  indicators:
    - protocol: ag_ui
      surface: tool_call_start
      target: toolCallName
      pattern:
        contains: send_email
`

// mcpClientAttack is an mcp_client document that calls a tool.
const mcpClientAttack = `oatf: "0.1"
attack:
  id: TEST-031
  execution:
    mode: mcp_client
    state:
      actions:
        - method: tools/call
          params: {name: echo, arguments: {message: hi}}
  indicators:
    - protocol: mcp
      surface: tools/call
      direction: response
      target: "content[*].text"
      pattern:
        contains: "canary"
`

// TestAttackRunUnexercisedTargetIsError: a target that nobody listens on,
// or that answers every request with HTTP 404, was never exercised. The
// run's verdict is error (never not_exploited) in the summary, the verdict
// JSON, SARIF (executionSuccessful false, an error notification), JUnit (an
// error) and the library table, and it exits 4.
func TestAttackRunUnexercisedTargetIsError(t *testing.T) {
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	stopped := "http://" + testenv.FreeLoopbackAddr(t) + "/"
	dir := t.TempDir()
	docs := map[string]string{
		"agui.yaml": aguiAttack,
		"a2a.yaml":  a2aClientAttack,
		"mcp.yaml":  mcpClientAttack,
	}
	for name, text := range docs {
		writeFile(t, dir, name, text)
	}
	flagsFor := func(name, url string) []string {
		switch name {
		case "agui.yaml":
			return []string{"--agui-url", url}
		case "a2a.yaml":
			return []string{"--a2a-url", url}
		}
		return []string{"--mcp-url", url}
	}
	for _, target := range []struct{ what, url string }{{"stopped", stopped}, {"404", notFound.URL + "/"}} {
		for name := range docs {
			out := t.TempDir()
			verdict, sarif, junit := filepath.Join(out, "v.json"), filepath.Join(out, "r.sarif"), filepath.Join(out, "r.xml")
			args := append([]string{"run", "--verdict", verdict, "--sarif", sarif, "--junit", junit}, flagsFor(name, target.url)...)
			code, stdout, stderr := runAttackCmd(t, append(args, filepath.Join(dir, name))...)
			if code != ExitUpstream || !strings.Contains(stdout, "verdict: ERROR") {
				t.Errorf("%s against a %s target: exit %d, want %d and verdict ERROR\nstdout:\n%s\nstderr:\n%s",
					name, target.what, code, ExitUpstream, stdout, stderr)
			}
			var v struct {
				Verdict struct {
					Result string `json:"result"`
					Error  string `json:"error"`
				} `json:"verdict"`
			}
			readJSON(t, verdict, &v)
			if v.Verdict.Result != "error" || v.Verdict.Error == "" {
				t.Errorf("%s against a %s target: verdict JSON result %q, error %q; want error with a reason",
					name, target.what, v.Verdict.Result, v.Verdict.Error)
			}
			var s struct {
				Runs []struct {
					Invocations []struct {
						ExecutionSuccessful bool `json:"executionSuccessful"`
						Notifications       []struct {
							Level   string `json:"level"`
							Message struct {
								Text string `json:"text"`
							} `json:"message"`
						} `json:"toolExecutionNotifications"`
					} `json:"invocations"`
				} `json:"runs"`
			}
			readJSON(t, sarif, &s)
			inv := s.Runs[0].Invocations[0]
			if inv.ExecutionSuccessful || len(inv.Notifications) == 0 || inv.Notifications[0].Level != "error" {
				t.Errorf("%s against a %s target: SARIF invocation %+v, want executionSuccessful false and an error notification",
					name, target.what, inv)
			}
			var j struct {
				Errors   int `xml:"errors,attr"`
				Failures int `xml:"failures,attr"`
				Suites   []struct {
					Cases []struct {
						Name  string    `xml:"name,attr"`
						Error *struct{} `xml:"error"`
					} `xml:"testcase"`
				} `xml:"testsuite"`
			}
			if err := xml.Unmarshal(readFile(t, junit), &j); err != nil {
				t.Fatal(err)
			}
			if j.Errors == 0 || j.Suites[0].Cases[0].Error == nil {
				t.Errorf("%s against a %s target: JUnit has no error on the verdict case: %+v", name, target.what, j)
			}
		}
		code, stdout, stderr := runAttackCmd(t, "run", "--agui-url", target.url, "--a2a-url", target.url, "--mcp-url", target.url, "--library", dir)
		if code != ExitUpstream || !strings.Contains(stdout, "3 documents: 0 exploited, 0 partial, 0 not exploited, 3 error") {
			t.Errorf("library against a %s target: exit %d, want %d and 3 errors\nstdout:\n%s\nstderr:\n%s",
				target.what, code, ExitUpstream, stdout, stderr)
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
