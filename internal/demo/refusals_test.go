package demo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/audit"
)

// TestDemoRefusalsOnRecord checks the two steps that show a refusal on
// record against the audit log, read here on its own once the demo has
// closed it: bob's request for alice's A2A task, refused by the task-owner
// stage, and a POST in a session warden never issued, refused by the MCP
// listener before any session exists. The audit record each step names must
// be that refusal, the body of the second must be on record as its length
// and SHA-256 only, and the chain must verify with those records in it.
func TestDemoRefusalsOnRecord(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var records []audit.Record
	var rep audit.Report
	var out bytes.Buffer
	res, err := Run(ctx, Options{Out: &out, Files: func(f Files) {
		b, err := audit.NewSQLite(f.Audit)
		if err != nil {
			t.Error(err)
			return
		}
		defer b.Close()
		if rep, err = audit.Verify(ctx, b, audit.Anchor{}); err != nil {
			t.Error(err)
		}
		if _, err := b.Scan(ctx, func(r audit.Record) error { records = append(records, r); return nil }); err != nil {
			t.Error(err)
		}
	}})
	if err != nil || len(res.Failures) > 0 {
		t.Fatalf("demo: %v %v\n%s", err, res.Failures, out.String())
	}
	account := out.String()
	// Closing the log may add a checkpoint after the Record part counted.
	if rep.Problem != nil || rep.Records == 0 || rep.Records < res.AuditRecords {
		t.Fatalf("the audit log: %d records, problem %v; the Record part counted %d", rep.Records, rep.Problem, res.AuditRecords)
	}
	bySeq := map[uint64]audit.Record{}
	for _, r := range records {
		bySeq[r.Seq] = r
	}

	// bob's GetTask of alice's task: refused by task-owner, and on record
	// under his name, for the task alice read a step before.
	const bob = "A2A: bob, another client of the gateway (his own API key), asks booker for alice's task by its id"
	block := stepBlock(account, bob)
	if !strings.Contains(block, "refused by task-owner (task-owner)") {
		t.Errorf("bob's step does not show the task-owner refusal:\n%s", block)
	}
	rec := recordNamed(t, block, bySeq)
	if rec.Actor != "bob" || rec.Upstream != "a2a:booker" || rec.Method != "GetTask" || rec.Direction != "client" ||
		rec.Decision != audit.Deny || rec.Stage != "task-owner" || rec.Rule != "task-owner" {
		t.Errorf("bob's step names audit record %d, which is not his refused GetTask: %+v", rec.Seq, rec)
	}
	alices := false
	for _, r := range records {
		if r.Actor == "alice" && r.Method == "GetTask" && r.Decision == audit.Allow && r.Tool != "" && r.Tool == rec.Tool {
			alices = true
		}
		if r.Actor == "bob" && r.Decision != audit.Deny {
			t.Errorf("a request of bob's was let through: %+v", r)
		}
	}
	if !alices {
		t.Errorf("the task bob asked for (%q) is not the one alice read", rec.Tool)
	}

	// The POST in a made-up session: 404 in plain text, its stage and rule
	// from the log, its body there as length and SHA-256.
	const stray = "a tools/call in a session warden never issued (Mcp-Session-Id: " + straySession + ")"
	block = stepBlock(account, stray)
	for _, want := range []string{"refused by listener (unknown-session)", "HTTP 404: session not found"} {
		if !strings.Contains(block, want) {
			t.Errorf("the step lacks %q:\n%s", want, block)
		}
	}
	rec = recordNamed(t, block, bySeq)
	if rec.Method != "warden/refused" || rec.Decision != audit.Deny || rec.Stage != "listener" || rec.Rule != "unknown-session" {
		t.Errorf("the step names audit record %d, which is not the listener's refusal: %+v", rec.Seq, rec)
	}
	if cause := fmt.Sprintf("raw %d bytes sha256 %x;", len(strayBody), sha256.Sum256([]byte(strayBody))); !strings.Contains(rec.Reason, cause) {
		t.Errorf("audit record %d does not give the body as %q: %q", rec.Seq, cause, rec.Reason)
	}
	for _, r := range records {
		if line, _ := json.Marshal(r); bytes.Contains(line, []byte("mallory")) {
			t.Errorf("audit record %d holds the refused body's text: %s", r.Seq, line)
		}
	}
}

// stepBlock is the account's lines of the step whose action is action:
// its numbered line and the indented lines under it.
func stepBlock(account, action string) string {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(account, "\n") {
		switch {
		case !in && strings.HasSuffix(l, " "+action) && len(l) > 5 && strings.TrimSpace(l[:3]) != "":
			in = true
		case in && !strings.HasPrefix(l, "        "):
			return b.String()
		case !in:
			continue
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

var auditRecordRE = regexp.MustCompile(`on record: audit record ([0-9]+)`)

// recordNamed is the audit record the step's block names.
func recordNamed(t *testing.T, block string, bySeq map[uint64]audit.Record) audit.Record {
	t.Helper()
	m := auditRecordRE.FindStringSubmatch(block)
	if m == nil {
		t.Errorf("the step names no audit record:\n%s", block)
		return audit.Record{}
	}
	seq, _ := strconv.ParseUint(m[1], 10, 64)
	r, ok := bySeq[seq]
	if !ok {
		t.Errorf("the step names audit record %d, which the log does not hold", seq)
	}
	return r
}
