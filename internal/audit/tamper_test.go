package audit

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// tamperer changes a closed log's storage the way someone with access to
// the file would.
type tamperer interface {
	editTool(seq int, tool string)
	editHash(seq int)
	remove(seq int)
	swap(a, b int)
	truncate(from int)           // delete records from seq on
	setAnchor(seq int, h string) // rewrite the anchor
}

func newTamperer(t *testing.T, be backend, path string) tamperer {
	if be.kind == KindJSONL {
		return &jsonlTamper{t: t, path: path}
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// The attacker removes the append-only triggers first.
	for _, tr := range []string{"audit_records_no_update", "audit_records_no_delete", "audit_head_no_delete"} {
		if _, err := db.Exec("DROP TRIGGER " + tr); err != nil {
			t.Fatal(err)
		}
	}
	return &sqliteTamper{t: t, db: db}
}

type sqliteTamper struct {
	t  *testing.T
	db *sql.DB
}

func (s *sqliteTamper) exec(q string, args ...any) {
	s.t.Helper()
	res, err := s.db.Exec(q, args...)
	if err != nil {
		s.t.Fatalf("%s: %v", q, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		s.t.Fatalf("%s: changed nothing", q)
	}
}

func (s *sqliteTamper) editTool(seq int, tool string) {
	s.exec(`UPDATE audit_records SET tool = ? WHERE seq = ?`, tool, seq)
}
func (s *sqliteTamper) editHash(seq int) {
	s.exec(`UPDATE audit_records SET hash = substr('0123456789abcdef', 1 + (instr('0123456789abcdef', substr(hash, 1, 1)) % 16), 1) || substr(hash, 2) WHERE seq = ?`, seq)
}
func (s *sqliteTamper) remove(seq int) { s.exec(`DELETE FROM audit_records WHERE seq = ?`, seq) }
func (s *sqliteTamper) truncate(from int) {
	s.exec(`DELETE FROM audit_records WHERE seq >= ?`, from)
}
func (s *sqliteTamper) setAnchor(seq int, h string) {
	s.exec(`UPDATE audit_head SET seq = ?, hash = ?`, seq, h)
}

// swap exchanges the seq values of two rows: in a table read in seq order,
// that is what moving two records past each other means.
func (s *sqliteTamper) swap(a, b int) {
	s.exec(`UPDATE audit_records SET seq = -1 WHERE seq = ?`, a)
	s.exec(`UPDATE audit_records SET seq = ? WHERE seq = ?`, a, b)
	s.exec(`UPDATE audit_records SET seq = ? WHERE seq = -1`, b)
}

type jsonlTamper struct {
	t    *testing.T
	path string
}

func (j *jsonlTamper) lines() []string {
	b, err := os.ReadFile(j.path)
	if err != nil {
		j.t.Fatal(err)
	}
	return strings.SplitAfter(string(b), "\n")[:strings.Count(string(b), "\n")]
}

func (j *jsonlTamper) write(lines []string) {
	if err := os.WriteFile(j.path, []byte(strings.Join(lines, "")), 0o600); err != nil {
		j.t.Fatal(err)
	}
}

func (j *jsonlTamper) editTool(seq int, tool string) {
	l := j.lines()
	old := l[seq-1]
	l[seq-1] = strings.Replace(old, `"tool":"read_file"`, `"tool":"`+tool+`"`, 1)
	if l[seq-1] == old {
		j.t.Fatal("editTool changed nothing")
	}
	j.write(l)
}
func (j *jsonlTamper) editHash(seq int) {
	l := j.lines()
	i := strings.Index(l[seq-1], `"hash":"`) + len(`"hash":"`)
	c := "0"
	if l[seq-1][i] == '0' {
		c = "1"
	}
	l[seq-1] = l[seq-1][:i] + c + l[seq-1][i+1:]
	j.write(l)
}
func (j *jsonlTamper) remove(seq int) { j.write(slices.Delete(j.lines(), seq-1, seq)) }
func (j *jsonlTamper) swap(a, b int) {
	l := j.lines()
	l[a-1], l[b-1] = l[b-1], l[a-1]
	j.write(l)
}
func (j *jsonlTamper) truncate(from int) { j.write(j.lines()[:from-1]) }
func (j *jsonlTamper) setAnchor(seq int, h string) {
	b, err := json.Marshal(Anchor{Seq: uint64(seq), Hash: h})
	if err != nil {
		j.t.Fatal(err)
	}
	if err := os.WriteFile(j.path+".head", append(b, '\n'), 0o600); err != nil {
		j.t.Fatal(err)
	}
}

// TestTamper changes one thing in a log of five records and checks that
// Verify names the first bad record, and that the log refuses to be
// appended to when its tail is what changed.
func TestTamper(t *testing.T) {
	cases := []struct {
		name   string
		tamper func(tamperer)
		seq    uint64   // the first bad record Verify must report
		kinds  []string // acceptable kinds
		noOpen bool     // New must refuse the log
	}{
		{"EditField", func(m tamperer) { m.editTool(3, "delete_everything") }, 3, []string{ProblemHash}, false},
		{"EditLastRecord", func(m tamperer) { m.editTool(5, "delete_everything") }, 5, []string{ProblemHash}, true},
		{"EditHash", func(m tamperer) { m.editHash(3) }, 3, []string{ProblemHash}, false},
		{"DeleteRecord", func(m tamperer) { m.remove(3) }, 3, []string{ProblemSeq}, false},
		{"DeleteFirstRecord", func(m tamperer) { m.remove(1) }, 1, []string{ProblemSeq}, false},
		{"SwapRecords", func(m tamperer) { m.swap(2, 3) }, 2, []string{ProblemSeq, ProblemPrev}, false},
		{"TruncateTail", func(m tamperer) { m.truncate(4) }, 4, []string{ProblemTruncated}, true},
		{"TruncateAll", func(m tamperer) { m.truncate(1) }, 1, []string{ProblemTruncated}, true},
	}
	forEachBackend(t, func(t *testing.T, be backend) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				path := be.path(t)
				l := openLog(t, be, path)
				for i := range 5 {
					mustAppend(t, l, sample(i))
				}
				l.Close()
				tc.tamper(newTamperer(t, be, path))

				rep, err := Verify(context.Background(), openBackend(t, be, path), Anchor{})
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if rep.Problem == nil {
					t.Fatalf("Verify after %s: no problem found (report %+v)", tc.name, rep)
				}
				if rep.Problem.Seq != tc.seq || !slices.Contains(tc.kinds, rep.Problem.Kind) {
					t.Errorf("Verify reported %v, want record %d (%v)", rep.Problem, tc.seq, tc.kinds)
				}
				_, err = Open(context.Background(), be.kind, path, Options{})
				if tc.noOpen && !errors.Is(err, ErrBroken) {
					t.Errorf("Open of a log whose tail was changed: err = %v, want ErrBroken", err)
				}
			})
		}

		// The documented limit: truncating and rewriting the anchor too
		// passes Verify, unless the head was recorded elsewhere.
		t.Run("TruncateAndRewriteAnchor", func(t *testing.T) {
			path := be.path(t)
			l := openLog(t, be, path)
			var recs []Record
			for i := range 5 {
				recs = append(recs, mustAppend(t, l, sample(i)))
			}
			pinned := l.Head()
			l.Close()
			m := newTamperer(t, be, path)
			m.truncate(4)
			m.setAnchor(3, recs[2].Hash)
			b := openBackend(t, be, path)
			if rep, _ := Verify(context.Background(), b, Anchor{}); rep.Problem != nil {
				t.Errorf("without a pinned head Verify found %v; the docs say this is undetectable, fix them", rep.Problem)
			}
			rep, err := Verify(context.Background(), b, pinned)
			if err != nil || rep.Problem == nil || rep.Problem.Kind != ProblemTruncated || rep.Problem.Seq != 4 {
				t.Errorf("Verify with the pinned head = %+v, %v; want truncated at 4", rep.Problem, err)
			}
		})

		t.Run("AnchorPointsElsewhere", func(t *testing.T) {
			path := be.path(t)
			l := openLog(t, be, path)
			for i := range 3 {
				mustAppend(t, l, sample(i))
			}
			l.Close()
			newTamperer(t, be, path).setAnchor(3, ZeroHash)
			rep, _ := Verify(context.Background(), openBackend(t, be, path), Anchor{})
			if rep.Problem == nil || rep.Problem.Kind != ProblemAnchor {
				t.Errorf("Verify with a forged anchor = %+v, want an anchor problem", rep.Problem)
			}
		})
	})
}

func TestSQLiteRefusesUpdateAndDelete(t *testing.T) {
	path := backends[0].path(t)
	l := openLog(t, backends[0], path)
	mustAppend(t, l, sample(1))
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{`UPDATE audit_records SET tool = 'x'`, `DELETE FROM audit_records`, `DELETE FROM audit_head`} {
		if _, err := db.Exec(q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: err = %v, want the append-only refusal", q, err)
		}
	}
}

func TestJSONLIgnoresAnUnfinishedLastLine(t *testing.T) {
	path := backends[1].path(t)
	l := openLog(t, backends[1], path)
	first := mustAppend(t, l, sample(1))
	l.Close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":2,"time":"2026-`) // the process died here
	f.Close()

	l = openLog(t, backends[1], path)
	if h := l.Head(); h.Seq != 1 || h.Hash != first.Hash {
		t.Fatalf("Head = %+v, want record 1 (the cut line was never acknowledged)", h)
	}
	second := mustAppend(t, l, sample(2))
	if second.Seq != 2 {
		t.Errorf("seq after the cut line = %d, want 2", second.Seq)
	}
	if rep := mustVerify(t, l.b); rep.Records != 2 {
		t.Errorf("Verify read %d records, want 2 (the cut line overwritten)", rep.Records)
	}
}
