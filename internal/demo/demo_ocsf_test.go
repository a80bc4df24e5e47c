package demo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/cli"
	"github.com/agentwarden/warden/internal/demo"
	"github.com/agentwarden/warden/internal/ocsf"
	"github.com/agentwarden/warden/internal/ocsf/ocsfschema/ocsfschematest"
)

// TestDemoOCSFIsValid plays a full `warden demo` session and reads back
// the OCSF events its gateway wrote with the jsonl exporter, as a
// telemetry.ocsf exporter in a configuration file writes them, and exports
// its audit log with `warden audit export --format ocsf` (and
// --integrity): every event is checked against the official OCSF schema
// (1.8.0; 1.9.0-dev for --integrity), and none may be invalid. The Record
// part's OCSF line must give the events the file holds, by class.
func TestDemoOCSFIsValid(t *testing.T) {
	s18 := ocsfschematest.Schema(t, ocsfschematest.V180)
	s19 := ocsfschematest.Schema(t, ocsfschematest.V190Dev)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var live []byte
	var records, export, attested string
	var out bytes.Buffer
	res, err := demo.Run(ctx, demo.Options{Out: &out, OCSFProfile: ocsf.ProfileStandard,
		Files: func(f demo.Files) {
			live = readFile(t, f.OCSF)
			records = warden(t, "audit", "export", f.Audit)
			export = warden(t, "audit", "export", f.Audit, "--format", "ocsf")
			attested = warden(t, "audit", "export", f.Audit, "--format", "ocsf", "--integrity")
		}})
	if err != nil || len(res.Failures) > 0 {
		t.Fatalf("demo: %v %v\n%s", err, res.Failures, out.String())
	}

	n := ocsfschematest.CheckLines(t, s18, live)
	classes := map[string]int{}
	byUID := map[float64]int{}
	for _, line := range lines(live) {
		var m struct {
			ClassUID  float64 `json:"class_uid"`
			ClassName string  `json:"class_name"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		classes[m.ClassName]++
		byUID[m.ClassUID]++
	}
	// The demo relays and refuses: API Activity for every operation, a
	// Detection Finding for every refusal.
	if byUID[ocsf.ClassAPIActivity] < res.Relayed || byUID[ocsf.ClassDetectionFinding] == 0 {
		t.Errorf("events by class %v; want at least %d API Activity and some Detection Findings", classes, res.Relayed)
	}
	want := []string{fmt.Sprintf("    OCSF     %d events: ", n)}
	for name, c := range classes {
		want = append(want, fmt.Sprintf("%s %d", name, c))
	}
	ocsfLine := lineWith(out.String(), "    OCSF     ")
	for _, w := range want {
		if !strings.Contains(ocsfLine, w) {
			t.Errorf("the OCSF line %q lacks %q (the file holds %d events, %v)", ocsfLine, w, n, classes)
		}
	}

	nrec := strings.Count(records, "\n")
	if nrec < res.AuditRecords {
		t.Fatalf("the log has %d records, the demo counted %d", nrec, res.AuditRecords)
	}
	ne := ocsfschematest.CheckLines(t, s18, []byte(export))
	if ne < nrec {
		t.Errorf("the export has %d events for %d audit records", ne, nrec)
	}
	ocsfschematest.CheckLines(t, s19, []byte(attested))
	if got := strings.Count(attested, `"record_integrity"`); got != nrec {
		t.Errorf("%d attested events, want one per audit record (%d)", got, nrec)
	}
	t.Logf("%d live events %v, %d exported for %d audit records", n, classes, ne, nrec)

	// The aitf profile: Tool Execution events of warden's extension.
	live = nil
	out.Reset()
	res, err = demo.Run(ctx, demo.Options{Out: &out, OCSFProfile: ocsf.ProfileAITF,
		Files: func(f demo.Files) { live = readFile(t, f.OCSF) }})
	if err != nil || len(res.Failures) > 0 {
		t.Fatalf("demo (aitf): %v %v\n%s", err, res.Failures, out.String())
	}
	ocsfschematest.CheckLines(t, s18, live)
	if tools := bytes.Count(live, []byte(`"class_uid":7006001`)); tools < res.Relayed {
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

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// lines are the non-empty lines of JSON Lines data.
func lines(data []byte) [][]byte {
	var out [][]byte
	for _, l := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// lineWith is the first line of out that begins with prefix, and the
// indented lines that continue it.
func lineWith(out, prefix string) string {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, prefix):
			in = true
			b.WriteString(l)
		case in && strings.HasPrefix(l, "             "):
			b.WriteString(" " + strings.TrimSpace(l))
		case in:
			return b.String()
		}
	}
	return b.String()
}
