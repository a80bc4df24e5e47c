package demo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/cli"
	"github.com/agentwarden/warden/internal/demo"
	"github.com/agentwarden/warden/internal/ocsf"
	"github.com/agentwarden/warden/internal/ocsf/ocsfschema/ocsfschematest"
)

type ocsfSink struct {
	mu     sync.Mutex
	events [][]byte
}

func (s *ocsfSink) Emit(e ocsf.Event) {
	b, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	s.mu.Lock()
	s.events = append(s.events, b)
	s.mu.Unlock()
}

// TestDemoOCSFIsValid plays a full `warden demo` session with an OCSF sink
// on the gateway, as a telemetry.ocsf exporter would have it, and exports
// its audit log with `warden audit export --format ocsf` (and
// --integrity): every event is checked against the official OCSF schema
// (1.8.0; 1.9.0-dev for --integrity), and none may be invalid.
func TestDemoOCSFIsValid(t *testing.T) {
	s18 := ocsfschematest.Schema(t, ocsfschematest.V180)
	s19 := ocsfschematest.Schema(t, ocsfschematest.V190Dev)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	sink := &ocsfSink{}
	var records, export, attested string
	var out bytes.Buffer
	res, err := demo.Run(ctx, demo.Options{Out: &out, OCSF: sink, OCSFProfile: ocsf.ProfileStandard,
		AuditLog: func(path string) {
			records = warden(t, "audit", "export", path)
			export = warden(t, "audit", "export", path, "--format", "ocsf")
			attested = warden(t, "audit", "export", path, "--format", "ocsf", "--integrity")
		}})
	if err != nil || len(res.Failures) > 0 {
		t.Fatalf("demo: %v %v\n%s", err, res.Failures, out.String())
	}

	sink.mu.Lock()
	live := sink.events
	sink.mu.Unlock()
	classes := map[float64]int{}
	for _, e := range live {
		ocsfschematest.Check(t, s18, e)
		var m struct {
			ClassUID float64 `json:"class_uid"`
		}
		_ = json.Unmarshal(e, &m)
		classes[m.ClassUID]++
	}
	// The demo relays and refuses: API Activity for every operation, a
	// Detection Finding for every refusal.
	if classes[ocsf.ClassAPIActivity] < res.Relayed || classes[ocsf.ClassDetectionFinding] == 0 {
		t.Errorf("live events by class %v; want at least %d API Activity and some Detection Findings", classes, res.Relayed)
	}
	nrec := strings.Count(records, "\n")
	if nrec < res.AuditRecords {
		t.Fatalf("the log has %d records, the demo counted %d", nrec, res.AuditRecords)
	}
	n := ocsfschematest.CheckLines(t, s18, []byte(export))
	if n < nrec {
		t.Errorf("the export has %d events for %d audit records", n, nrec)
	}
	ocsfschematest.CheckLines(t, s19, []byte(attested))
	if got := strings.Count(attested, `"record_integrity"`); got != nrec {
		t.Errorf("%d attested events, want one per audit record (%d)", got, nrec)
	}
	t.Logf("%d live events %v, %d exported for %d audit records", len(live), classes, n, nrec)

	// The aitf profile: Tool Execution events of warden's extension.
	sink = &ocsfSink{}
	out.Reset()
	res, err = demo.Run(ctx, demo.Options{Out: &out, OCSF: sink, OCSFProfile: ocsf.ProfileAITF})
	if err != nil || len(res.Failures) > 0 {
		t.Fatalf("demo (aitf): %v %v\n%s", err, res.Failures, out.String())
	}
	tools := 0
	for _, e := range sink.events {
		ocsfschematest.Check(t, s18, e)
		if bytes.Contains(e, []byte(`"class_uid":7006001`)) {
			tools++
		}
	}
	if tools < res.Relayed {
		t.Errorf("%d Tool Execution events for %d relayed calls", tools, res.Relayed)
	}
}

// warden runs a warden command as the binary does and returns its output.
func warden(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(context.Background(), args, &cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut,
		Getenv: func(string) string { return "" }})
	if code != cli.ExitOK {
		t.Errorf("warden %s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
	}
	return out.String()
}
