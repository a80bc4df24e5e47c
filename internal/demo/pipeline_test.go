package demo

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/gateway"
)

// TestDemoPrintsThePipelinesItRuns checks the header's pipeline lines
// against the gateway the demo ran, read through the gateway's own API
// (Upstream(name).Pipeline.Stages()), and that every stage of
// gateway.StageTable is in one of them: a stage added to the table, and
// to what the demo configures, shows in the header, and one the demo
// leaves out fails here until the demo shows it.
func TestDemoPrintsThePipelinesItRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	var g *gateway.Gateway
	res, err := Run(ctx, Options{Out: &out, Started: func(gw *gateway.Gateway) { g = gw }})
	if err != nil || len(res.Failures) > 0 {
		t.Fatalf("demo: %v %v\n%s", err, res.Failures, out.String())
	}
	if g == nil {
		t.Fatal("Options.Started was not called")
	}
	printed := map[string][]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "pipeline")
		name, stages, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.Contains(stages, "→") {
			continue
		}
		stages, _, _ = strings.Cut(stages, ";")
		for _, st := range strings.Split(stages, "→") {
			printed[name] = append(printed[name], strings.TrimSpace(st))
		}
	}
	shown := map[string]bool{}
	for _, upstream := range []string{"demo", "billing"} {
		u := g.Upstream(upstream)
		if u == nil {
			t.Fatalf("the gateway has no upstream %q", upstream)
		}
		want := append([]string{"wire"}, u.Pipeline.Stages()...)
		if !slices.Equal(printed[upstream], want) {
			t.Errorf("header shows %s's pipeline as %q; the gateway runs %q", upstream, printed[upstream], want)
		}
		for _, st := range want {
			shown[st] = true
		}
	}
	for _, st := range gateway.StageTable {
		if !shown[st.Name()] {
			t.Errorf("stage %q of gateway.StageTable is in no pipeline the demo shows", st.Name())
		}
	}
	// booker's line names the A2A relay's checks: every refusal the demo
	// shows on an A2A step comes from one of them.
	for _, st := range res.Steps {
		if strings.HasPrefix(st.Action, "A2A:") && st.Outcome == "refused" {
			stage, _, _ := strings.Cut(st.By, " ")
			if !slices.Contains(printed["booker"], stage) {
				t.Errorf("%s: refused by %q, which booker's pipeline %q does not show", st.Action, stage, printed["booker"])
			}
		}
	}
}
