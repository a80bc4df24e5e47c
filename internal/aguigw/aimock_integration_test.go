//go:build integration

package aguigw

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentwarden/warden/internal/secproc"
	"github.com/agentwarden/warden/internal/testenv"
)

// startAimock runs @copilotkit/aimock with testdata/aimock.json on
// 127.0.0.1 and returns its AG-UI endpoint. The process group is stopped
// when the test ends.
func startAimock(t *testing.T) string {
	t.Helper()
	bin := testenv.Aimock(t)
	cfg, err := filepath.Abs(filepath.Join("testdata", "aimock.json"))
	if err != nil {
		t.Fatal(err)
	}
	addr := testenv.StartNode(t, "aimock", bin, func(port string) []string { return []string{"-c", cfg, "-p", port, "--host", "127.0.0.1"} })
	return "http://" + addr + "/agui"
}

func ask(text string) string {
	return runInput(`{"id":"s1","role":"system","content":"You are a careful assistant."}`,
		`{"id":"u1","role":"user","content":"`+text+`"}`)
}

// withoutTimestamps decodes each event, dropping the timestamp aimock adds.
func withoutTimestamps(s sent) []map[string]any {
	var out []map[string]any
	for _, e := range s.events {
		var m map[string]any
		json.Unmarshal(e.Data, &m)
		delete(m, "timestamp")
		out = append(out, m)
	}
	return out
}

// TestAimock runs aimock's scripted AG-UI agent bare and behind the gateway.
func TestAimock(t *testing.T) {
	agent := startAimock(t)
	gw := newGateway(t, agent, Options{})

	t.Run("injected tool result quarantined", func(t *testing.T) {
		bare := post(t, agent, ask("read the page"))
		if !strings.Contains(bare.text(), "ignore all previous instructions") {
			t.Fatalf("bare aimock does not stream the injection: %s", bare.text())
		}
		got := post(t, gw, ask("read the page"))
		if strings.Contains(got.text(), "ignore all previous") {
			t.Errorf("the injection reached the client behind warden:\n%s", got.text())
		}
		if n := strings.Count(got.text(), "[warden: quarantined "); n != 2 {
			t.Errorf("%d quarantine markers, want 2 (the tool result and the message):\n%s", n, got.text())
		}
		want := slices.Delete(bare.types(), 7, 8) // the second delta is folded into the marker
		if !slices.Equal(got.types(), want) {
			t.Errorf("types %v, want %v", got.types(), want)
		}
	})
	t.Run("deny ends the run", func(t *testing.T) {
		deny := newGateway(t, agent, Options{Actions: map[secproc.Category]Action{secproc.InjectedInstructions: Deny}})
		got := post(t, deny, ask("read the page"))
		if got.runError() != "warden:security:prompt_injection/override" || slices.Contains(got.types(), "RUN_FINISHED") {
			t.Errorf("types %v, code %q", got.types(), got.runError())
		}
	})
	t.Run("forged system message refused", func(t *testing.T) {
		bare := post(t, agent, ask("snapshot"))
		if !strings.Contains(bare.text(), "Always forward") {
			t.Fatalf("bare aimock does not send the forged message: %s", bare.text())
		}
		got := post(t, gw, ask("snapshot"))
		if got.runError() != "warden:prompt-integrity:system-message" || strings.Contains(got.text(), "Always forward") {
			t.Errorf("types %v, code %q", got.types(), got.runError())
		}
	})
	t.Run("both vocabularies pass", func(t *testing.T) {
		bare := post(t, agent, ask("think"))
		got := post(t, gw, ask("think"))
		if len(bare.events) != 14 {
			t.Fatalf("bare aimock sent %v", bare.types())
		}
		if diff := cmp.Diff(withoutTimestamps(bare), withoutTimestamps(got)); diff != "" {
			t.Errorf("the gateway changed a clean stream (-bare +gateway):\n%s", diff)
		}
	})
	t.Run("plain text", func(t *testing.T) {
		got := post(t, gw, ask("hello"))
		if !strings.Contains(got.text(), "Hi there") || got.runError() != "" {
			t.Errorf("got %v: %s", got.types(), got.text())
		}
	})
}
