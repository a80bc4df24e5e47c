package cli

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/ocsf"
)

// writeLog appends n records to a new SQLite audit log and returns its path
// and head.
func writeLog(t *testing.T, n int) (string, audit.Anchor) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.db")
	l, err := audit.Open(context.Background(), audit.KindSQLite, path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		d := audit.Allow
		if i%2 == 1 {
			d = audit.Deny
		}
		if _, err := l.Append(context.Background(), audit.Record{Time: time.Now(), Method: "tools/call", Tool: "echo",
			RequestID: "1", Decision: d, Stage: map[bool]string{true: "tool-policy"}[d == audit.Deny], Upstream: "demo"}); err != nil {
			t.Fatal(err)
		}
	}
	head := l.Head()
	l.Close()
	return path, head
}

func TestAuditVerify(t *testing.T) {
	path, head := writeLog(t, 5)
	code, out, _ := run(t, "audit", "verify", path)
	if code != ExitOK || !strings.Contains(out, "ok, 5 records") {
		t.Fatalf("intact log: %d %s", code, out)
	}
	// Editing a record behind the log's back (the triggers refuse UPDATE, so
	// drop them as an attacker with the file would).
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"DROP TRIGGER audit_records_no_update", "UPDATE audit_records SET tool = 'rm' WHERE seq = 3"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	code, out, _ = run(t, "audit", "verify", path, "--head", "5:"+head.Hash)
	if code != ExitFindings || !strings.Contains(out, "BROKEN at record 3") {
		t.Fatalf("edited record 3: %d %s", code, out)
	}
	if code, _, _ := run(t, "audit", "verify", filepath.Join(t.TempDir(), "none.db")); code != ExitConfig {
		t.Errorf("a missing file: exit %d, want %d (and no empty log created)", code, ExitConfig)
	}
	if code, _, _ := run(t, "audit", "verify", path, "--head", "five"); code != ExitUsage {
		t.Errorf("a bad --head: exit %d", code)
	}
}

func TestAuditExport(t *testing.T) {
	path, _ := writeLog(t, 2)
	code, out, _ := run(t, "audit", "export", path)
	if code != ExitOK || strings.Count(out, "\n") != 2 || !strings.Contains(out, `"seq":2`) {
		t.Fatalf("jsonl export: %d %s", code, out)
	}
	code, out, _ = run(t, "audit", "export", path, "--format", "ocsf")
	if code != ExitOK {
		t.Fatalf("ocsf export: %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// Record 1 allowed: one API Activity; record 2 denied: API Activity and a
	// Detection Finding.
	if len(lines) != 3 || !strings.Contains(out, `"class_uid":2004`) {
		t.Fatalf("ocsf export has %d events:\n%s", len(lines), out)
	}
	for _, l := range lines {
		if errs := ocsf.Validate([]byte(l)); len(errs) > 0 {
			t.Errorf("invalid OCSF %s: %v", l, errs)
		}
	}
}
