package audit

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// newKey writes a new audit key to a temp dir, as `warden keys audit` does,
// and loads both halves back.
func newKey(t testing.TB) (*SigningKey, *VerifyKey) {
	t.Helper()
	_, sk, vk := newKeyFile(t)
	return sk, vk
}

// newKeyFile is newKey, also returning the private key's file.
func newKeyFile(t testing.TB) (string, *SigningKey, *VerifyKey) {
	t.Helper()
	priv, pub, kid, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "audit.jwk"), priv, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "audit.jwk.pub"), pub, 0o644); err != nil {
		t.Fatal(err)
	}
	sk, err := LoadSigningKey(filepath.Join(dir, "audit.jwk"))
	if err != nil {
		t.Fatal(err)
	}
	vk, err := LoadVerifyKey(filepath.Join(dir, "audit.jwk.pub"))
	if err != nil {
		t.Fatal(err)
	}
	if sk.ID() != kid || vk.ID() != kid {
		t.Fatalf("kids %q and %q, want %q", sk.ID(), vk.ID(), kid)
	}
	return filepath.Join(dir, "audit.jwk"), sk, vk
}

func openSigned(t testing.TB, be backend, path string, ck CheckpointOptions) *Log {
	t.Helper()
	l, err := Open(context.Background(), be.kind, path, Options{Checkpoint: ck})
	if err != nil {
		t.Fatalf("Open(%s): %v", be.name, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func verifyWith(t testing.TB, b Backend, opts VerifyOptions) Report {
	t.Helper()
	rep, err := VerifyWith(context.Background(), b, opts)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return rep
}

// forge appends records to a closed log the way someone without the key
// would: each chained onto the last stored record with recomputed hashes,
// the anchor moved along (the backend does that).
func forge(t testing.TB, be backend, path string, recs ...Record) {
	t.Helper()
	b, err := OpenBackend(be.kind, path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	last, _, _, err := b.Tail(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	seq, prev := last.Seq, last.Hash
	for i := range recs {
		seq++
		recs[i].Seq, recs[i].PrevHash, recs[i].Time = seq, prev, time.Now().UTC()
		recs[i].Hash = recs[i].ComputeHash()
		prev = recs[i].Hash
	}
	if err := b.Write(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
}

// A log with a key writes a checkpoint every Every records and at Close,
// and verifies with the public key: every record attested.
func TestCheckpointsAttestTheLog(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		sk, vk := newKey(t)
		path := be.path(t)
		l := openSigned(t, be, path, CheckpointOptions{Key: sk, Every: 3, Interval: -1})
		for i := range 4 {
			mustAppend(t, l, sample(i))
		}
		// 1 2 3 ck4 5 (6 at close)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		recs := scanAll(t, openBackend(t, be, path))
		var kinds []string
		for _, r := range recs {
			kinds = append(kinds, r.Kind+"/"+r.Rule)
		}
		if len(recs) != 6 || !recs[3].IsCheckpoint() || recs[3].Rule != CheckpointCount ||
			!recs[5].IsCheckpoint() || recs[5].Rule != CheckpointClose {
			t.Fatalf("records %v, want a count checkpoint at seq 4 and a close one at seq 6", kinds)
		}
		rep := verifyWith(t, openBackend(t, be, path), VerifyOptions{Keys: []*VerifyKey{vk}})
		if rep.Problem != nil || rep.Unattested != nil || rep.Checkpoints != 2 || rep.LastCheckpoint.Seq != 5 {
			t.Fatalf("verify: problem %v, unattested %+v, %d checkpoints, want none, none, 2", rep.Problem, rep.Unattested, rep.Checkpoints)
		}
	})
}

// A checkpoint falls due after Interval even when few records came.
func TestCheckpointInterval(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		sk, _ := newKey(t)
		l := openSigned(t, be, be.path(t), CheckpointOptions{Key: sk, Interval: 20 * time.Millisecond})
		mustAppend(t, l, sample(1))
		deadline := time.Now().Add(5 * time.Second)
		for l.Head().Seq < 2 {
			if time.Now().After(deadline) {
				t.Fatal("no checkpoint 5 s after a record, with a 20 ms interval")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if l.Head().Seq != 2 {
			t.Fatalf("head at seq %d, want one checkpoint (seq 2): no checkpoint while nothing is unattested", l.Head().Seq)
		}
	})
}

// Records appended by someone who recomputed the hashes but has no key are
// reported as unattested; a checkpoint they forge fails its signature.
func TestForgedAppend(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		sk, vk := newKey(t)
		path := be.path(t)
		l := openSigned(t, be, path, CheckpointOptions{Key: sk, Every: 2, Interval: -1})
		for i := range 4 {
			mustAppend(t, l, sample(i))
		}
		l.Close() // 1 2 ck3 4 5 ck6
		forge(t, be, path, sample(7), sample(8))

		// Without a key the chain is intact: that was the gap.
		if rep := mustVerify(t, openBackend(t, be, path)); rep.Records != 8 {
			t.Fatalf("verified %d records, want 8", rep.Records)
		}
		rep := verifyWith(t, openBackend(t, be, path), VerifyOptions{Keys: []*VerifyKey{vk}})
		if rep.Problem != nil || rep.Unattested == nil || *rep.Unattested != (Span{From: 7, To: 8, Count: 2}) {
			t.Fatalf("verify --key: problem %v, unattested %+v, want records 7..8 unattested", rep.Problem, rep.Unattested)
		}

		// A forged checkpoint after them: signed by the forger's own key.
		other, _ := newKey(t)
		b, _ := OpenBackend(be.kind, path)
		last, _, _, _ := b.Tail(context.Background())
		b.Close()
		c := other.sign(last.Seq, last.Hash, time.Now().UTC())
		forge(t, be, path, Record{Decision: Allow, Stage: "audit", Rule: CheckpointCount, Direction: "warden",
			Kind: CheckpointKind, KeyID: c.KeyID, Sig: c.Sig})
		rep = verifyWith(t, openBackend(t, be, path), VerifyOptions{Keys: []*VerifyKey{vk}})
		if rep.Problem == nil || rep.Problem.Kind != ProblemSignature || rep.Problem.Seq != 9 {
			t.Fatalf("verify --key after a forged checkpoint: %v, want a signature problem at record 9", rep.Problem)
		}
		// And one that claims the right kid with a made-up signature.
		forgedKid := vk.ID()
		path2 := be.path(t)
		l2 := openSigned(t, be, path2, CheckpointOptions{})
		mustAppend(t, l2, sample(1))
		l2.Close()
		forge(t, be, path2, Record{Decision: Allow, Stage: "audit", Rule: CheckpointCount, Direction: "warden",
			Kind: CheckpointKind, KeyID: forgedKid, Sig: strings.Repeat("A", 86)})
		rep = verifyWith(t, openBackend(t, be, path2), VerifyOptions{Keys: []*VerifyKey{vk}})
		if rep.Problem == nil || rep.Problem.Kind != ProblemSignature || !strings.Contains(rep.Problem.Detail, "does not verify") {
			t.Fatalf("verify --key with a made-up signature: %v, want a signature problem", rep.Problem)
		}
	})
}

// A whole log rewritten by someone without the key has no valid
// checkpoint; against a witness, a rewrite that kept the seqs shows too.
func TestRewriteIsDetected(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		sk, vk := newKey(t)
		path := be.path(t)
		wpath := filepath.Join(t.TempDir(), "witness.jsonl")
		w, err := NewFileWitness(wpath)
		if err != nil {
			t.Fatal(err)
		}
		l := openSigned(t, be, path, CheckpointOptions{Key: sk, Every: 2, Interval: -1, Witness: w})
		for i := range 5 {
			mustAppend(t, l, sample(i))
		}
		l.Close() // 1 2 ck3 4 5 ck6 7 ck8
		witness, err := ReadWitness(wpath)
		if err != nil {
			t.Fatal(err)
		}
		if len(witness) != 3 || witness[2].Seq != 7 {
			t.Fatalf("witness holds %+v, want 3 checkpoints, the last over seq 7", witness)
		}
		rep := verifyWith(t, openBackend(t, be, path), VerifyOptions{Keys: []*VerifyKey{vk}, Witness: witness})
		if rep.Problem != nil || rep.Witnessed != 3 {
			t.Fatalf("verify with the witness: %v, %d witnessed, want intact and 3", rep.Problem, rep.Witnessed)
		}

		// The rewrite: the same number of records, other contents, no key.
		rewritten := be.path(t)
		l = openSigned(t, be, rewritten, CheckpointOptions{})
		for i := range 8 {
			r := sample(i)
			r.Tool = "innocent"
			mustAppend(t, l, r)
		}
		l.Close()
		rep = verifyWith(t, openBackend(t, be, rewritten), VerifyOptions{Keys: []*VerifyKey{vk}})
		if rep.Problem == nil || rep.Problem.Kind != ProblemUnattested {
			t.Fatalf("verify --key of a rewritten log: %v, want %s", rep.Problem, ProblemUnattested)
		}
		rep = verifyWith(t, openBackend(t, be, rewritten), VerifyOptions{Witness: witness})
		if rep.Problem == nil || rep.Problem.Kind != ProblemWitness || rep.Problem.Seq != 2 {
			t.Fatalf("verify of a rewritten log against the witness: %v, want a witness problem at seq 2", rep.Problem)
		}
		// Dropping the tail and its checkpoints, anchor and all.
		recs := scanAll(t, openBackend(t, be, path))
		tm := newTamperer(t, be, path)
		tm.truncate(6)
		tm.setAnchor(5, recs[4].Hash)
		rep = verifyWith(t, openBackend(t, be, path), VerifyOptions{Keys: []*VerifyKey{vk}, Witness: witness})
		if rep.Problem == nil || rep.Problem.Kind != ProblemWitness || rep.Problem.Seq != 7 {
			t.Fatalf("verify of a cut log against the witness: %v, want a witness problem at seq 7", rep.Problem)
		}
	})
}

// New refuses to extend a log edited after its last checkpoint, or whose
// last checkpoint the key does not attest, naming the record.
func TestOpenChecksFromTheLastCheckpoint(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		sk, vk := newKey(t)
		path := be.path(t)
		l := openSigned(t, be, path, CheckpointOptions{Key: sk, Every: 3, Interval: -1})
		for i := range 3 {
			mustAppend(t, l, sample(i))
		}
		l.Close() // 1 2 3 ck4
		// Records after the checkpoint, as a process killed before its
		// next checkpoint leaves them (a log without the key writes none).
		l = openSigned(t, be, path, CheckpointOptions{})
		for i := range 5 {
			mustAppend(t, l, sample(i))
		}
		l.Close() // 5..9

		edited := copyLog(t, be, path)
		newTamperer(t, be, edited).editTool(7, "write_file")
		_, err := Open(context.Background(), be.kind, edited, Options{Checkpoint: CheckpointOptions{Key: sk}})
		if !errors.Is(err, ErrBroken) || !strings.Contains(err.Error(), "record 7: hash") {
			t.Fatalf("Open after an edit of record 7 (after the checkpoint at 4): %v, want ErrBroken naming record 7", err)
		}
		// Without a key too: the check is of the chain.
		if _, err = Open(context.Background(), be.kind, edited, Options{}); !errors.Is(err, ErrBroken) {
			t.Fatalf("Open without a key after the edit: %v, want ErrBroken", err)
		}

		// Untouched, the log opens, and the checkpoint written at open says
		// which records it attests late.
		l = openSigned(t, be, path, CheckpointOptions{Key: sk, Interval: -1})
		if h := l.Head(); h.Seq != 10 {
			t.Fatalf("head after open at seq %d, want the opening checkpoint at 10", h.Seq)
		}
		l.Close()
		rep := verifyWith(t, openBackend(t, be, path), VerifyOptions{Keys: []*VerifyKey{vk}})
		if rep.Problem != nil || rep.Unattested != nil || len(rep.Reopened) != 1 || rep.Reopened[0] != (Span{From: 5, To: 9, Count: 5}) {
			t.Fatalf("verify: %v, unattested %+v, reopened %+v, want records 5..9 attested at reopening", rep.Problem, rep.Unattested, rep.Reopened)
		}

		// A forged checkpoint at the end: refused, naming it.
		other, _ := newKey(t)
		last := scanAll(t, openBackend(t, be, path))[9]
		c := other.sign(last.Seq, last.Hash, time.Now().UTC())
		forge(t, be, path, Record{Decision: Allow, Stage: "audit", Rule: CheckpointCount, Direction: "warden",
			Kind: CheckpointKind, KeyID: c.KeyID, Sig: c.Sig})
		_, err = Open(context.Background(), be.kind, path, Options{Checkpoint: CheckpointOptions{Key: sk}})
		if !errors.Is(err, ErrBroken) || !strings.Contains(err.Error(), "record 11 is a checkpoint") {
			t.Fatalf("Open after a forged checkpoint: %v, want ErrBroken naming record 11", err)
		}
	})
}

// copyLog copies the closed log at path (with its companion files) to a
// new path.
func copyLog(t testing.TB, be backend, path string) string {
	t.Helper()
	to := be.path(t)
	for _, suffix := range []string{"", ".head", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if errors.Is(err, os.ErrNotExist) && suffix != "" {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// A caller cannot append a record that looks like a checkpoint.
func TestCallerCannotWriteCheckpoints(t *testing.T) {
	l := openLog(t, backends[1], backends[1].path(t))
	rec := sample(1)
	rec.Kind = CheckpointKind
	if _, err := l.Append(context.Background(), rec); err == nil {
		t.Fatal("a caller's checkpoint record was appended")
	}
}

// Key files: a private key readable by others is refused, and verify
// refuses a private key where the public one belongs.
func TestAuditKeyFiles(t *testing.T) {
	priv, pub, _, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	loose := filepath.Join(dir, "loose.jwk")
	os.WriteFile(loose, priv, 0o644)
	if _, err := LoadSigningKey(loose); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("LoadSigningKey of a 0644 file: %v, want a refusal", err)
	}
	os.Chmod(loose, 0o600)
	if _, err := LoadVerifyKey(loose); err == nil || !strings.Contains(err.Error(), "private key") {
		t.Errorf("LoadVerifyKey of a private key: %v, want a refusal", err)
	}
	pubPath := filepath.Join(dir, "pub.jwk")
	os.WriteFile(pubPath, pub, 0o600)
	if _, err := LoadSigningKey(pubPath); err == nil {
		t.Error("LoadSigningKey took a public key")
	}
}

// An HTTP witness gets every checkpoint as JSON that verifies with the
// public key, the last one by the time Close returns.
func TestHTTPWitness(t *testing.T) {
	sk, vk := newKey(t)
	var mu sync.Mutex
	var got []Checkpoint
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c Checkpoint
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&c) != nil {
			http.Error(w, "want a JSON checkpoint", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, c)
		mu.Unlock()
	}))
	defer srv.Close()
	be := backends[0]
	path := be.path(t)
	l := openSigned(t, be, path, CheckpointOptions{Key: sk, Every: 2, Interval: -1, Witness: &HTTPWitness{URL: srv.URL}})
	for i := range 3 {
		mustAppend(t, l, sample(i))
	}
	l.Close() // 1 2 ck3 4 ck5
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].Seq != 2 || got[1].Seq != 4 {
		t.Fatalf("the witness got %+v, want checkpoints over seq 2 and 4", got)
	}
	for _, c := range got {
		if err := vk.Verify(c); err != nil {
			t.Errorf("witnessed checkpoint over seq %d: %v", c.Seq, err)
		}
	}
	rep := verifyWith(t, openBackend(t, be, path), VerifyOptions{Keys: []*VerifyKey{vk}, Witness: got})
	if rep.Problem != nil || rep.Witnessed != 2 {
		t.Fatalf("verify against the HTTP witness's checkpoints: %v, %d witnessed", rep.Problem, rep.Witnessed)
	}
}

// New refuses a log that ends before the witness's last checkpoint, or
// holds another record there: its tail was cut, checkpoints and anchor
// with it, while warden was down.
func TestOpenChecksTheWitness(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		sk, _ := newKey(t)
		path := be.path(t)
		wpath := filepath.Join(t.TempDir(), "witness.jsonl")
		w, err := NewFileWitness(wpath)
		if err != nil {
			t.Fatal(err)
		}
		l := openSigned(t, be, path, CheckpointOptions{Key: sk, Every: 2, Interval: -1, Witness: w})
		for i := range 5 {
			mustAppend(t, l, sample(i))
		}
		l.Close() // 1 2 ck3 4 5 ck6 7 ck8
		witness, err := ReadWitness(wpath)
		if err != nil {
			t.Fatal(err)
		}
		last := witness[len(witness)-1]
		untouched := copyLog(t, be, path)
		l, err = Open(context.Background(), be.kind, untouched, Options{Checkpoint: CheckpointOptions{Key: sk, Witnessed: &last}})
		if err != nil {
			t.Fatalf("Open of the untouched log with its witness: %v", err)
		}
		l.Close()

		recs := scanAll(t, openBackend(t, be, path))
		tm := newTamperer(t, be, path)
		tm.truncate(6)
		tm.setAnchor(5, recs[4].Hash)
		_, err = Open(context.Background(), be.kind, path, Options{Checkpoint: CheckpointOptions{Key: sk, Witnessed: &last}})
		if !errors.Is(err, ErrBroken) || !strings.Contains(err.Error(), "the witness attests seq 7") || !strings.Contains(err.Error(), "ends at seq 5") {
			t.Fatalf("Open of a log cut behind its witness: %v, want ErrBroken naming seq 7 and 5", err)
		}
		// Without the witness the cut log opens: that is what it is for.
		l, err = Open(context.Background(), be.kind, path, Options{Checkpoint: CheckpointOptions{Key: sk}})
		if err != nil {
			t.Fatalf("Open of the cut log without a witness: %v (it cannot tell)", err)
		}
		l.Close()
	})
}
