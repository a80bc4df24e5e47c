package audit

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// backend is one Backend implementation under test.
type backend struct {
	name string
	kind Kind
	file string // file name inside a test's temp dir
}

var backends = []backend{
	{name: "sqlite", kind: KindSQLite, file: "audit.db"},
	{name: "jsonl", kind: KindJSONL, file: "audit.jsonl"},
}

// forEachBackend runs fn as a subtest per backend.
func forEachBackend(t *testing.T, fn func(t *testing.T, be backend)) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) { fn(t, be) })
	}
}

func (be backend) path(t testing.TB) string { return filepath.Join(t.TempDir(), be.file) }

func openLog(t testing.TB, be backend, path string) *Log {
	t.Helper()
	l, err := Open(context.Background(), be.kind, path, Options{})
	if err != nil {
		t.Fatalf("Open(%s): %v", be.name, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func openBackend(t testing.TB, be backend, path string) Backend {
	t.Helper()
	b, err := OpenBackend(be.kind, path)
	if err != nil {
		t.Fatalf("OpenBackend(%s): %v", be.name, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// sample returns a record as the gateway would fill it, distinct per i.
func sample(i int) Record {
	return Record{
		Actor:      "agent-" + fmt.Sprint(i%3),
		Session:    "s-" + fmt.Sprint(i%5),
		Upstream:   "filesystem",
		Method:     "tools/call",
		RequestID:  fmt.Sprint(i),
		Tool:       "read_file",
		ParamsHash: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Decision:   Deny,
		Stage:      "zero-trust",
		Rule:       `deny "get_*"`,
		Invariant:  "INV-3",
		JTI:        "jti-" + fmt.Sprint(i),
		Approver:   "alice@example.com",
		Reason:     []string{"", "the token's parameters_hash does not match the call's arguments"}[i%2],
	}
}

func mustAppend(t testing.TB, l *Log, rec Record) Record {
	t.Helper()
	got, err := l.Append(context.Background(), rec)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return got
}

func scanAll(t testing.TB, b Backend) []Record {
	t.Helper()
	var recs []Record
	if _, err := b.Scan(context.Background(), func(r Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return recs
}

func mustVerify(t testing.TB, b Backend) Report {
	t.Helper()
	rep, err := Verify(context.Background(), b, Anchor{})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if rep.Problem != nil {
		t.Fatalf("Verify of an untouched log: %v", rep.Problem)
	}
	return rep
}

// sameTime compares times by instant, as stored records lose the location.
var sameTime = cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })

// TestContract is the one suite every backend passes.
func TestContract(t *testing.T) {
	ctx := context.Background()

	forEachBackend(t, func(t *testing.T, be backend) {
		t.Run("AppendChainsAndStoresEveryField", func(t *testing.T) {
			path := be.path(t)
			l := openLog(t, be, path)
			var want []Record
			for i := range 3 {
				in := sample(i)
				in.Time = time.Date(2026, 7, 1, 12, 0, 0, 123456789+i, time.FixedZone("CEST", 2*3600))
				got := mustAppend(t, l, in)
				if got.Seq != uint64(i+1) {
					t.Errorf("record %d: seq = %d, want %d", i, got.Seq, i+1)
				}
				prev := ZeroHash
				if i > 0 {
					prev = want[i-1].Hash
				}
				if got.PrevHash != prev {
					t.Errorf("record %d: prev_hash = %s, want %s", i, got.PrevHash, prev)
				}
				if got.Hash == "" || got.Hash != got.ComputeHash() {
					t.Errorf("record %d: hash %q does not match its content", i, got.Hash)
				}
				in.Seq, in.PrevHash, in.Hash = got.Seq, got.PrevHash, got.Hash
				if d := cmp.Diff(in, got, sameTime); d != "" {
					t.Errorf("Append changed the caller's fields (-in +got):\n%s", d)
				}
				want = append(want, got)
			}
			if h := l.Head(); h != (Anchor{Seq: 3, Hash: want[2].Hash}) {
				t.Errorf("Head = %+v, want seq 3 and the last hash", h)
			}
			// A second handle on the same file sees every field, to the nanosecond.
			b := openBackend(t, be, path)
			if d := cmp.Diff(want, scanAll(t, b), sameTime); d != "" {
				t.Errorf("stored records differ (-appended +stored):\n%s", d)
			}
			rep := mustVerify(t, b)
			if rep.Records != 3 || rep.Head.Seq != 3 || rep.Anchor.Seq > 3 {
				t.Errorf("Verify report = %+v, want 3 records, the anchor not past the head", rep)
			}
			// The JSONL anchor lags while the log is open; Close moves it.
			l.Close()
			if rep := mustVerify(t, b); rep.Anchor != rep.Head || rep.Head.Seq != 3 {
				t.Errorf("Verify after Close = %+v, want the anchor at the head", rep)
			}
		})

		t.Run("EmptyLogVerifies", func(t *testing.T) {
			l := openLog(t, be, be.path(t))
			if h := l.Head(); h != (Anchor{Hash: ZeroHash}) {
				t.Errorf("Head of an empty log = %+v", h)
			}
			rep, err := l.Verify(ctx)
			if err != nil || rep.Problem != nil || rep.Records != 0 {
				t.Errorf("Verify of an empty log = %+v, %v", rep, err)
			}
		})

		t.Run("RestartContinuesTheChain", func(t *testing.T) {
			path := be.path(t)
			l := openLog(t, be, path)
			mustAppend(t, l, sample(1))
			second := mustAppend(t, l, sample(2))
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l2 := openLog(t, be, path)
			if h := l2.Head(); h != (Anchor{Seq: 2, Hash: second.Hash}) {
				t.Fatalf("Head after reopening = %+v, want seq 2 hash %s", h, second.Hash)
			}
			third := mustAppend(t, l2, sample(3))
			if third.Seq != 3 || third.PrevHash != second.Hash {
				t.Errorf("first record after restart: seq %d prev %s, want seq 3 prev %s", third.Seq, third.PrevHash, second.Hash)
			}
			mustVerify(t, l2.b)
		})

		t.Run("ConcurrentAppendersGetOneChain", func(t *testing.T) {
			l := openLog(t, be, be.path(t))
			const workers, each = 16, 40
			var wg sync.WaitGroup
			got := make(chan Record, workers*each)
			for w := range workers {
				wg.Go(func() {
					for i := range each {
						rec, err := l.Append(ctx, sample(w*each+i))
						if err != nil {
							t.Error(err)
							return
						}
						got <- rec
					}
				})
			}
			wg.Wait()
			close(got)
			seen := make(map[uint64]string)
			for r := range got {
				if _, dup := seen[r.Seq]; dup {
					t.Fatalf("seq %d given to two records", r.Seq)
				}
				seen[r.Seq] = r.Hash
			}
			stored := scanAll(t, l.b)
			if len(stored) != workers*each {
				t.Fatalf("%d records stored, want %d", len(stored), workers*each)
			}
			for _, r := range stored {
				if seen[r.Seq] != r.Hash {
					t.Fatalf("stored record %d is not the one Append returned", r.Seq)
				}
			}
			mustVerify(t, l.b)
		})

		t.Run("BadDecisionIsRefusedAndStoresNothing", func(t *testing.T) {
			l := openLog(t, be, be.path(t))
			for _, d := range []Decision{"", "ALLOW", "maybe"} {
				rec := sample(0)
				rec.Decision = d
				if _, err := l.Append(ctx, rec); err == nil {
					t.Errorf("Append with decision %q: no error", d)
				}
			}
			if n := len(scanAll(t, l.b)); n != 0 {
				t.Errorf("%d records stored after refused appends", n)
			}
		})

		t.Run("InvalidUTF8SurvivesARoundTrip", func(t *testing.T) {
			path := be.path(t)
			l := openLog(t, be, path)
			rec := sample(0)
			rec.Tool, rec.Rule = "read\xff_file", "deny \"\xc3\""
			got := mustAppend(t, l, rec)
			if got.Tool != "read\uFFFD_file" {
				t.Errorf("tool = %q, want the bad byte replaced", got.Tool)
			}
			l.Close()
			mustVerify(t, openLog(t, be, path).b)
		})

		t.Run("AppendAfterCloseFails", func(t *testing.T) {
			l := openLog(t, be, be.path(t))
			l.Close()
			if _, err := l.Append(ctx, sample(0)); !errors.Is(err, ErrClosed) {
				t.Errorf("Append after Close: err = %v, want ErrClosed", err)
			}
		})

		t.Run("FailedWriteDeniesAndLeavesNoGap", func(t *testing.T) {
			b := &flaky{Backend: openBackend(t, be, be.path(t))}
			l, err := New(ctx, b, Options{})
			if err != nil {
				t.Fatal(err)
			}
			first := mustAppend(t, l, sample(1))
			b.fail.Store(true)
			if _, err := l.Append(ctx, sample(2)); err == nil {
				t.Fatal("Append while the backend fails: no error (the call would not be denied)")
			}
			b.fail.Store(false)
			next := mustAppend(t, l, sample(3))
			if next.Seq != 2 || next.PrevHash != first.Hash {
				t.Errorf("after a failed write: seq %d prev %s, want seq 2 chained on seq 1", next.Seq, next.PrevHash)
			}
			mustVerify(t, b)
		})

		t.Run("ExportIsVerifiableJSONL", func(t *testing.T) {
			l := openLog(t, be, be.path(t))
			var want []Record
			for i := range 4 {
				want = append(want, mustAppend(t, l, sample(i)))
			}
			var buf bytes.Buffer
			if err := l.Export(ctx, &buf); err != nil {
				t.Fatal(err)
			}
			var got []Record
			sc := bufio.NewScanner(&buf)
			for sc.Scan() {
				var r Record
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					t.Fatalf("export line %q: %v", sc.Text(), err)
				}
				got = append(got, r)
			}
			if d := cmp.Diff(want, got, sameTime); d != "" {
				t.Errorf("export differs (-appended +exported):\n%s", d)
			}
			// The export is a JSONL log in its own right.
			path := filepath.Join(t.TempDir(), "export.jsonl")
			var out bytes.Buffer
			l.Export(ctx, &out)
			if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			if rep := mustVerify(t, openBackend(t, backends[1], path)); rep.Records != 4 {
				t.Errorf("exported log verified %d records, want 4", rep.Records)
			}
		})
	})
}

// flaky is a Backend whose Write fails on demand, storing nothing.
type flaky struct {
	Backend
	fail atomic.Bool
}

func (f *flaky) Write(ctx context.Context, batch []Record) error {
	if f.fail.Load() {
		return errors.New("disk full")
	}
	return f.Backend.Write(ctx, batch)
}

func TestHashCoversEveryField(t *testing.T) {
	base := sample(1)
	base.Seq, base.Time, base.PrevHash = 7, time.Unix(1700000000, 5), ZeroHash
	h := base.ComputeHash()
	edits := map[string]func(r *Record){
		"seq":          func(r *Record) { r.Seq++ },
		"time":         func(r *Record) { r.Time = r.Time.Add(time.Nanosecond) },
		"prev_hash":    func(r *Record) { r.PrevHash = "1" + r.PrevHash[1:] },
		"actor":        func(r *Record) { r.Actor += "x" },
		"session":      func(r *Record) { r.Session += "x" },
		"upstream":     func(r *Record) { r.Upstream += "x" },
		"method":       func(r *Record) { r.Method += "x" },
		"request_id":   func(r *Record) { r.RequestID += "x" },
		"tool":         func(r *Record) { r.Tool += "x" },
		"params_hash":  func(r *Record) { r.ParamsHash += "x" },
		"decision":     func(r *Record) { r.Decision = Allow },
		"stage":        func(r *Record) { r.Stage += "x" },
		"rule":         func(r *Record) { r.Rule += "x" },
		"invariant":    func(r *Record) { r.Invariant += "x" },
		"jti":          func(r *Record) { r.JTI += "x" },
		"approver":     func(r *Record) { r.Approver += "x" },
		"direction":    func(r *Record) { r.Direction += "x" },
		"reason":       func(r *Record) { r.Reason += "x" },
		"no reason":    func(r *Record) { r.Reason = "" },
		"request_hash": func(r *Record) { r.RequestHash = "ab" },
		"kind":         func(r *Record) { r.Kind = CheckpointKind },
		"kid":          func(r *Record) { r.KeyID = "k" },
		"sig":          func(r *Record) { r.Sig = "s" },
		// Moving a byte from one field to the next must change the hash
		// (the length prefixes make the encoding injective).
		"boundary": func(r *Record) { r.Stage, r.Rule = r.Stage+r.Rule[:1], r.Rule[1:] },
	}
	for name, edit := range edits {
		r := base
		edit(&r)
		if r.ComputeHash() == h {
			t.Errorf("editing %s does not change the hash", name)
		}
	}
	r := base
	r.Hash = "anything"
	if r.ComputeHash() != h {
		t.Error("the hash depends on the Hash field itself")
	}
}

// TestHashEncodingIsPinned fixes the documented encoding: a change to it
// must be a new version, not a silent break of every stored log.
func TestHashEncodingIsPinned(t *testing.T) {
	r := Record{Seq: 1, Time: time.Unix(0, 1_700_000_000_000_000_000), PrevHash: ZeroHash, Method: "tools/call", Decision: Allow}
	// Built by hand from the package doc.
	var b []byte
	b = append(b, "warden.audit.v1\x00"...)
	field := func(s string) {
		b = append(b, byte(len(s)>>24), byte(len(s)>>16), byte(len(s)>>8), byte(len(s)))
		b = append(b, s...)
	}
	for _, s := range []string{"1", "1700000000000000000", ZeroHash, "", "", "", "tools/call", "", "", "", "allow", "", "", "", "", "", ""} {
		field(s)
	}
	if got, want := r.ComputeHash(), sha256Hex(b); got != want {
		t.Errorf("ComputeHash = %s, want %s (the documented encoding)", got, want)
	}

	// Version 2: a record with a reason, the reason last.
	r.Decision, r.Reason = Deny, "no"
	b = append([]byte(nil), "warden.audit.v2\x00"...)
	for _, s := range []string{"1", "1700000000000000000", ZeroHash, "", "", "", "tools/call", "", "", "", "deny", "", "", "", "", "", "", "no"} {
		field(s)
	}
	if got, want := r.ComputeHash(), sha256Hex(b); got != want {
		t.Errorf("ComputeHash with a reason = %s, want %s (the documented encoding, version 2)", got, want)
	}

	// Version 3: a record with a request_hash (or a checkpoint): reason,
	// request_hash, kind, kid and sig last, each even when empty.
	r.Reason, r.RequestHash = "", "ab"
	b = append([]byte(nil), "warden.audit.v3\x00"...)
	for _, s := range []string{"1", "1700000000000000000", ZeroHash, "", "", "", "tools/call", "", "", "", "deny", "", "", "", "", "", "", "", "ab", "", "", ""} {
		field(s)
	}
	if got, want := r.ComputeHash(), sha256Hex(b); got != want {
		t.Errorf("ComputeHash with a request_hash = %s, want %s (the documented encoding, version 3)", got, want)
	}
}

// A reason longer than MaxReason is cut at a character boundary, and the
// cut reason is what is stored and hashed.
func TestLongReasonIsCut(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		path := be.path(t)
		l := openLog(t, be, path)
		rec := sample(1)
		rec.Reason = strings.Repeat("é", MaxReason) // 2 bytes each
		got := mustAppend(t, l, rec)
		if len(got.Reason) > MaxReason || !utf8.ValidString(got.Reason) || !strings.HasSuffix(got.Reason, "…") {
			t.Fatalf("reason of %d bytes, valid UTF-8 %v, want at most %d ending in …", len(got.Reason), utf8.ValidString(got.Reason), MaxReason)
		}
		l.Close()
		b := openBackend(t, be, path)
		mustVerify(t, b)
		if stored := scanAll(t, b)[0].Reason; stored != got.Reason {
			t.Errorf("stored reason differs from the appended one")
		}
	})
}

// A log written before records had a reason (no reason column) opens, is
// given the column without any record changing, verifies, and takes
// records with reasons on the same chain.
func TestSQLiteLogWithoutReasonColumn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	// The first release's schema: every column but reason and those after it.
	from := strings.Index(sqliteSchema, ",\n\treason ")
	to := strings.Index(sqliteSchema, "\n);")
	if from < 0 || to < from {
		t.Fatal("could not derive the old schema")
	}
	old := sqliteSchema[:from] + sqliteSchema[to:]
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(old); err != nil {
		t.Fatal(err)
	}
	first := sample(0)
	first.Seq, first.Time, first.PrevHash = 1, time.Unix(1700000000, 0).UTC(), ZeroHash
	first.Hash = first.ComputeHash()
	if _, err := db.Exec(`INSERT INTO audit_records (seq, time_ns, prev_hash, hash, actor, session, upstream, method, request_id, tool,
	params_hash, decision, stage, rule, invariant, jti, approver, direction) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		1, first.Time.UnixNano(), first.PrevHash, first.Hash, first.Actor, first.Session, first.Upstream, first.Method, first.RequestID,
		first.Tool, first.ParamsHash, string(first.Decision), first.Stage, first.Rule, first.Invariant, first.JTI, first.Approver, first.Direction); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO audit_head (id, seq, hash) VALUES (1, 1, ?)`, first.Hash); err != nil {
		t.Fatal(err)
	}
	db.Close()

	be := backends[0]
	l := openLog(t, be, path)
	second := mustAppend(t, l, sample(1))
	if second.Seq != 2 || second.PrevHash != first.Hash || second.Reason == "" {
		t.Fatalf("appended %+v, want seq 2 with a reason after the old record", second)
	}
	l.Close()
	b := openBackend(t, be, path)
	if rep := mustVerify(t, b); rep.Records != 2 {
		t.Fatalf("verified %d records, want 2", rep.Records)
	}
}
