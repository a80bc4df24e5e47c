package console

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/audit"
)

// settle decides p through the console's queue and waits for the outcome,
// as the gateway would.
func (e *env) settle(p approval.Pending, approve bool, approver string) {
	e.t.Helper()
	if err := e.q.Decide(p.ID, approve, approver, "because"); err != nil {
		e.t.Fatal(err)
	}
	e.q.Wait(context.Background(), p.ID)
}

// rows returns the ids of the history table's rows.
func rows(page string) []string {
	var ids []string
	for _, part := range strings.Split(page, `<tr data-id="`)[1:] {
		ids = append(ids, part[:strings.IndexByte(part, '"')])
	}
	return ids
}

func TestHistorySearch(t *testing.T) {
	e := newEnv(t, Options{Queue: approval.New(30 * time.Millisecond)})
	approved := e.transfer("2500")
	e.settle(approved, true, "console:bob")
	denied := e.transfer("250000")
	e.settle(denied, false, "console:carol")
	mail := e.q.Submit(approval.Request{Upstream: "demo", Subject: "dave", Tool: "send_mail", Arguments: []byte(`{}`), Hash: "h"})
	e.q.Wait(context.Background(), mail.ID) // times out
	cookie, _ := e.login("alice")

	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", []string{mail.ID, denied.ID, approved.ID}},
		{"?tool=TRANSFER", []string{denied.ID, approved.ID}},
		{"?user=carol", []string{denied.ID}}, // the approver
		{"?user=dave", []string{mail.ID}},    // the subject
		{"?decision=approved", []string{approved.ID}},
		{"?decision=timed+out", []string{mail.ID}},
		{"?tool=transfer&decision=denied", []string{denied.ID}},
		{"?from=" + time.Now().UTC().Add(2*time.Minute).Format(timeLayout), nil},
		{"?to=" + time.Now().UTC().Add(-2*time.Minute).Format(timeLayout), nil},
		{"?from=" + time.Now().UTC().Add(-2*time.Minute).Format(timeLayout) + "&decision=denied", []string{denied.ID}},
	} {
		_, page := e.do("GET", "/console/history"+tc.query, cookie, nil, nil)
		if got := rows(page); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("history%s: rows %v, want %v", tc.query, got, tc.want)
		}
	}
	_, page := e.do("GET", "/console/history?from=yesterday", cookie, nil, nil)
	if !strings.Contains(page, "From is not a time") || len(rows(page)) != 3 {
		t.Errorf("a bad time filter is not reported: %v", rows(page))
	}
	if !strings.Contains(page, "No audit log is attached") {
		t.Error("without an audit log the page does not say so")
	}
	if !strings.Contains(page, "hash-of-250000") || !strings.Contains(page, "console:carol") {
		t.Error("the history lacks the hash or the approver")
	}
}

// TestHistoryShowsAuditChainStatus: with an audit log, each outcome shows
// its record and whether the chain up to it is intact; an edit of the log
// file shows as a broken chain.
func TestHistoryShowsAuditChainStatus(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := audit.Open(ctx, audit.KindJSONL, path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	q := approval.New(time.Minute)
	e := newEnv(t, Options{Queue: q, Audit: log})
	approved := e.transfer("2500")
	e.settle(approved, true, "console:bob")
	unrecorded := e.transfer("7")
	e.settle(unrecorded, false, "console:bob")
	for _, rec := range []audit.Record{
		{Actor: "alice", Upstream: "demo", Method: "tools/call", Tool: "transfer_funds", ParamsHash: "hash-of-1", Decision: audit.Allow},
		{Actor: "alice", Upstream: "demo", Method: "tools/call", Tool: "transfer_funds", ParamsHash: approved.Hash, Decision: audit.Allow, Approver: "console:bob"},
	} {
		if _, err := log.Append(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	cookie, _ := e.login("alice")
	_, page := e.do("GET", "/console/history", cookie, nil, nil)
	for _, want := range []string{
		"Audit log: 2 records, hash chain intact",
		`record 2 (allow, approver &#34;console:bob&#34;): chain intact up to it`,
		"no audit record found",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the history lacks %q", want)
		}
	}

	// Someone edits the first record in the file while the gateway runs
	// (a log with an edited record is refused when it is opened again).
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), `"hash-of-1"`, `"hash-of-2"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, page = e.do("GET", "/console/history", cookie, nil, nil)
	for _, want := range []string{"chain broken: record 1: hash", "record 2: NOT verified"} {
		if !strings.Contains(page, want) {
			t.Errorf("after an edit, the history lacks %q", want)
		}
	}
}
