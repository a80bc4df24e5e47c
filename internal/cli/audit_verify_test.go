package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/audit"
)

// TestAuditVerifyKey walks the case: a log signed with a key made
// by `warden keys audit` verifies as attested; records appended by someone
// who recomputed the hashes without the key are named as unattested (exit
// 6); a rewrite that the witness saw otherwise is broken (exit 1).
func TestAuditVerifyKey(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "audit.jwk")
	code, out, stderr := run(t, "keys", "audit", "--out", keyFile)
	if code != ExitOK || !strings.Contains(out, keyFile+".pub") {
		t.Fatalf("keys audit: %d %s %s", code, out, stderr)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("private key file: %v, mode %v, want 0600", err, fi.Mode())
	}
	if code, _, _ := run(t, "keys", "audit", "--out", keyFile); code != ExitUsage {
		t.Errorf("keys audit over an existing key: exit %d, want %d (a key is not replaced by accident)", code, ExitUsage)
	}
	key, err := audit.LoadSigningKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "audit.jsonl")
	witness := filepath.Join(dir, "witness.jsonl")
	w, err := audit.NewFileWitness(witness)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := audit.Open(ctx, audit.KindJSONL, path, audit.Options{Checkpoint: audit.CheckpointOptions{Key: key, Every: 2, Interval: -1, Witness: w}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := l.Append(ctx, audit.Record{Method: "tools/call", Tool: "echo", Decision: audit.Allow, Direction: "client"}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close() // 1 2 ck3 4 ck5
	pub := keyFile + ".pub"
	code, out, _ = run(t, "audit", "verify", path, "--key", pub, "--witness", witness)
	if code != ExitOK || !strings.Contains(out, "attested: 2 checkpoints verify; the last covers seq 1..4") ||
		!strings.Contains(out, "witness: the log matches its 2 checkpoints") {
		t.Fatalf("signed log: %d %s", code, out)
	}
	if code, out, _ := run(t, "audit", "verify", path); code != ExitOK || !strings.Contains(out, "2 checkpoints, signatures not checked") {
		t.Errorf("without --key: %d %s", code, out)
	}

	// The forged append: two records chained with recomputed hashes.
	b, err := audit.OpenBackend(audit.KindJSONL, path)
	if err != nil {
		t.Fatal(err)
	}
	last, _, _, err := b.Tail(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var forged []audit.Record
	prev := last
	for i := range 2 {
		r := audit.Record{Seq: prev.Seq + 1, Time: time.Now().UTC(), PrevHash: prev.Hash, Method: "tools/call",
			Tool: "rm", RequestID: string(rune('7' + i)), Decision: audit.Allow, Direction: "client"}
		r.Hash = r.ComputeHash()
		forged, prev = append(forged, r), r
	}
	if err := b.Write(ctx, forged); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if code, out, _ := run(t, "audit", "verify", path); code != ExitOK {
		t.Fatalf("the forged append without --key: %d %s (the chain alone cannot tell)", code, out)
	}
	code, out, _ = run(t, "audit", "verify", path, "--key", pub)
	if code != ExitPartial || !strings.Contains(out, "UNATTESTED: 2 records after the last checkpoint, seq 6..7") {
		t.Fatalf("forged append with --key: %d %s, want exit %d naming seq 6..7", code, out, ExitPartial)
	}

	// A rewrite: a new log, no key, the same length.
	rewritten := filepath.Join(dir, "rewritten.jsonl")
	l, err = audit.Open(ctx, audit.KindJSONL, rewritten, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		l.Append(ctx, audit.Record{Method: "tools/call", Tool: "ls", Decision: audit.Allow, Direction: "client"})
	}
	l.Close()
	code, out, _ = run(t, "audit", "verify", rewritten, "--key", pub)
	if code != ExitFindings || !strings.Contains(out, "unattested: no valid checkpoint") {
		t.Errorf("rewritten log with --key: %d %s", code, out)
	}
	code, out, _ = run(t, "audit", "verify", rewritten, "--witness", witness)
	if code != ExitFindings || !strings.Contains(out, "BROKEN at record 2: witness") {
		t.Errorf("rewritten log against the witness: %d %s", code, out)
	}
	if code, _, stderr := run(t, "audit", "verify", path, "--key", keyFile); code != ExitUsage || !strings.Contains(stderr, "private key") {
		t.Errorf("--key with the private key: %d %s", code, stderr)
	}
}
