package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/ocsf/ocsfschema/ocsfschematest"
)

// writeVariedLog writes a log with every kind of record: allowed, denied
// and failed calls, string and numeric ids, a notification, an approval,
// and signed checkpoints (records of the log itself, without a method).
func writeVariedLog(t *testing.T) (path string, records int) {
	t.Helper()
	dir := t.TempDir()
	priv, _, _, err := audit.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(dir, "audit.key")
	if err := os.WriteFile(keyPath, priv, 0o600); err != nil {
		t.Fatal(err)
	}
	key, err := audit.LoadSigningKey(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "audit.jsonl")
	l, err := audit.Open(context.Background(), audit.KindJSONL, path,
		audit.Options{Checkpoint: audit.CheckpointOptions{Key: key, Every: 3, Interval: -1}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, r := range []audit.Record{
		{Method: "initialize", RequestID: "0", Upstream: "demo", Decision: audit.Allow, Direction: "client", Actor: "agent"},
		{Method: "notifications/initialized", Upstream: "demo", Decision: audit.Allow, Direction: "client"},
		{Method: "tools/call", RequestID: `"call-1"`, Tool: "echo", Upstream: "demo", Decision: audit.Allow, Direction: "client", Approver: "alice"},
		{Method: "tools/call", RequestID: "2", Tool: "get_env", Upstream: "demo", Decision: audit.Deny, Direction: "client",
			Stage: "tool-policy", Rule: `deny "get_*"`, Reason: "get_env is denied"},
		{Method: "resources/read", RequestID: "3", Upstream: "demo", Decision: audit.Error, Direction: "upstream", Stage: "upstream", Rule: "timeout"},
		{Method: "tools/call", RequestID: "4", Tool: "transfer", Upstream: "demo", Decision: audit.Deny, Direction: "client",
			Stage: "zero-trust", Rule: "params-hash", Invariant: "INV-3"},
	} {
		r.Time = now
		if _, err := l.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	records = strings.Count(string(data), "\n")
	if !strings.Contains(string(data), `"kind"`) {
		t.Fatalf("the log has no checkpoint record:\n%s", data)
	}
	return path, records
}

// TestAuditExportOCSFIsValid: every event of `warden audit export --format
// ocsf` is valid OCSF 1.8.0, checked against the official schema, the
// records of the log itself (checkpoints) included.
func TestAuditExportOCSFIsValid(t *testing.T) {
	s := ocsfschematest.Schema(t, ocsfschematest.V180)
	path, records := writeVariedLog(t)
	code, out, errOut := run(t, "audit", "export", path, "--format", "ocsf")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	n := ocsfschematest.CheckLines(t, s, []byte(out))
	if want := records + 2; n != want { // two refusals: two Detection Findings
		t.Errorf("%d events for %d records, want %d", n, records, want)
	}
}

// TestAuditExportOCSFIntegrity: with --integrity the events are valid OCSF
// 1.9.0-dev, and the API Activity of each record carries the record's hash,
// the previous record's hash and its seq (record_integrity profile), so the
// chain can be followed in the events alone.
func TestAuditExportOCSFIntegrity(t *testing.T) {
	s := ocsfschematest.Schema(t, ocsfschematest.V190Dev)
	path, records := writeVariedLog(t)
	code, out, errOut := run(t, "audit", "export", path, "--format", "ocsf", "--integrity")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	ocsfschematest.CheckLines(t, s, []byte(out))
	_, jsonl, _ := run(t, "audit", "export", path)
	var hashes []string
	for line := range strings.Lines(jsonl) {
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, r.Hash)
	}
	type fingerprint struct{ Value string }
	var prev string
	seq := 0
	for line := range strings.Lines(out) {
		var ev struct {
			Metadata struct {
				Profiles []string
				Sequence int
				Version  string
			}
			Attestations []struct {
				Fingerprint fingerprint
				PrevEvent   *struct {
					UID         string
					Fingerprint fingerprint
				} `json:"prev_event"`
			} `json:"attestation_list"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Metadata.Version != "1.9.0-dev" {
			t.Errorf("metadata.version %q, want 1.9.0-dev", ev.Metadata.Version)
		}
		if len(ev.Attestations) == 0 {
			continue // a Detection Finding, linked by correlation_uid
		}
		seq++
		a := ev.Attestations[0]
		if ev.Metadata.Sequence != seq || a.Fingerprint.Value != hashes[seq-1] {
			t.Errorf("event of record %d: sequence %d, fingerprint %s; want %d, %s", seq, ev.Metadata.Sequence, a.Fingerprint.Value, seq, hashes[seq-1])
		}
		if seq > 1 && (a.PrevEvent == nil || a.PrevEvent.Fingerprint.Value != prev || a.PrevEvent.UID != "audit:"+itoa(seq-1)) {
			t.Errorf("event of record %d: prev_event %+v, want audit:%d with %s", seq, a.PrevEvent, seq-1, prev)
		}
		prev = a.Fingerprint.Value
	}
	if seq != records {
		t.Errorf("%d attested events, want one per record (%d)", seq, records)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
