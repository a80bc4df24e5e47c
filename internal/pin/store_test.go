package pin

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testStoreContract is the one contract suite every Store runs.
func testStoreContract(t *testing.T, open func(t *testing.T) Store) {
	at := time.UnixMilli(1_700_000_000_123).UTC()
	h1, h2, h3 := hashOf("1"), hashOf("2"), hashOf("3")

	t.Run("PinFirstOnce", func(t *testing.T) {
		s := open(t)
		a := Record{Upstream: "u", Tool: "t", Hash: h1, Definition: []byte(`{"name":"t"}`), Source: SourceFirstUse, At: at}
		got, inserted, err := s.PinFirst(t.Context(), a)
		if err != nil || !inserted || !cmp.Equal(got, a) {
			t.Fatalf("first PinFirst = %+v, %v, %v; want the record inserted", got, inserted, err)
		}
		b := a
		b.Hash = h2
		got, inserted, err = s.PinFirst(t.Context(), b)
		if err != nil || inserted || got.Hash != h1 {
			t.Fatalf("second PinFirst = %+v, %v, %v; want the first pin kept", got, inserted, err)
		}
		pins, err := s.Pins(t.Context(), "u")
		if err != nil || len(pins) != 1 || !cmp.Equal(pins[0], a) {
			t.Fatalf("Pins = %+v, %v", pins, err)
		}
	})

	t.Run("SetDeleteAndOrder", func(t *testing.T) {
		s := open(t)
		for _, r := range []Record{
			{Upstream: "b", Tool: "z", Hash: h1, Source: SourceManifest, At: at},
			{Upstream: "a", Tool: "y", Hash: h2, Source: SourceApproved, Approver: "alice", At: at},
			{Upstream: "a", Tool: "x", Hash: h3, Source: SourceFirstUse, At: at},
		} {
			if err := s.SetPin(t.Context(), r); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.SetPin(t.Context(), Record{Upstream: "a", Tool: "x", Hash: h1, Source: SourceManifest, At: at}); err != nil {
			t.Fatal(err)
		}
		pins, _ := s.Pins(t.Context(), "")
		var got []string
		for _, r := range pins {
			got = append(got, r.Upstream+"/"+r.Tool+"="+r.Hash[:1]+":"+string(r.Source)+":"+r.Approver)
		}
		want := []string{"a/x=" + h1[:1] + ":manifest:", "a/y=" + h2[:1] + ":approved:alice", "b/z=" + h1[:1] + ":manifest:"}
		if !cmp.Equal(got, want) {
			t.Fatalf("Pins = %v, want %v", got, want)
		}
		if err := s.DeletePin(t.Context(), "a", "x"); err != nil {
			t.Fatal(err)
		}
		if pins, _ := s.Pins(t.Context(), "a"); len(pins) != 1 || pins[0].Tool != "y" {
			t.Fatalf("after DeletePin: %+v", pins)
		}
	})

	t.Run("HoldApproveExactHash", func(t *testing.T) {
		s := open(t)
		old := Record{Upstream: "u", Tool: "t", Hash: h1, Definition: []byte("old"), Source: SourceFirstUse, At: at}
		s.SetPin(t.Context(), old)
		p := Pending{Upstream: "u", Tool: "t", Kind: KindChanged, OldHash: h1, Old: []byte("old"), NewHash: h2, New: []byte("new"), Seen: at}
		got, err := s.Hold(t.Context(), p)
		if err != nil || !cmp.Equal(got, p) {
			t.Fatalf("Hold = %+v, %v", got, err)
		}
		if _, err := s.Approve(t.Context(), "u", "t", h3, "alice", at); !errors.Is(err, ErrHashMismatch) {
			t.Fatalf("Approve with another hash: %v, want ErrHashMismatch", err)
		}
		if _, err := s.Approve(t.Context(), "u", "t", h1, "alice", at); !errors.Is(err, ErrHashMismatch) {
			t.Fatalf("Approve with the old hash: %v, want ErrHashMismatch", err)
		}
		if _, err := s.Approve(t.Context(), "u", "t", h2, " ", at); !errors.Is(err, ErrApprover) {
			t.Fatalf("Approve without approver: %v, want ErrApprover", err)
		}
		if _, err := s.Approve(t.Context(), "u", "other", h2, "alice", at); !errors.Is(err, ErrNoPending) {
			t.Fatalf("Approve of a tool with nothing pending: %v, want ErrNoPending", err)
		}
		r, err := s.Approve(t.Context(), "u", "t", h2, "alice", at.Add(time.Second))
		want := Record{Upstream: "u", Tool: "t", Hash: h2, Definition: []byte("new"), Source: SourceApproved, Approver: "alice", At: at.Add(time.Second)}
		if err != nil || !cmp.Equal(r, want) {
			t.Fatalf("Approve = %+v, %v", r, err)
		}
		pins, _ := s.Pins(t.Context(), "u")
		pend, _ := s.Pendings(t.Context(), "u")
		if len(pins) != 1 || !cmp.Equal(pins[0], want) || len(pend) != 0 {
			t.Fatalf("after Approve: pins %+v pending %+v", pins, pend)
		}
		if _, err := s.Approve(t.Context(), "u", "t", h2, "alice", at); !errors.Is(err, ErrNoPending) {
			t.Fatalf("second Approve: %v, want ErrNoPending", err)
		}
	})

	t.Run("RejectIsRemembered", func(t *testing.T) {
		s := open(t)
		p := Pending{Upstream: "u", Tool: "t", Kind: KindNew, NewHash: h2, New: []byte("new"), Seen: at}
		s.Hold(t.Context(), p)
		if _, err := s.Reject(t.Context(), "u", "t", h3, "bob", at); !errors.Is(err, ErrHashMismatch) {
			t.Fatalf("Reject with another hash: %v", err)
		}
		got, err := s.Reject(t.Context(), "u", "t", h2, "bob", at.Add(time.Second))
		if err != nil || !got.Rejected || got.Decider != "bob" || !got.Decided.Equal(at.Add(time.Second)) {
			t.Fatalf("Reject = %+v, %v", got, err)
		}
		// The same definition again keeps the rejection; a new one replaces it.
		again, _ := s.Hold(t.Context(), Pending{Upstream: "u", Tool: "t", Kind: KindNew, NewHash: h2, New: []byte("new"), Seen: at.Add(time.Hour)})
		if !again.Rejected || !again.Seen.Equal(at) {
			t.Fatalf("Hold of the rejected definition again = %+v, want the rejection kept", again)
		}
		other, _ := s.Hold(t.Context(), Pending{Upstream: "u", Tool: "t", Kind: KindNew, NewHash: h3, New: []byte("newer"), Seen: at.Add(time.Hour)})
		if other.Rejected || other.NewHash != h3 {
			t.Fatalf("Hold of a different definition = %+v, want it pending afresh", other)
		}
		if pins, _ := s.Pins(t.Context(), "u"); len(pins) != 0 {
			t.Fatalf("Reject pinned something: %+v", pins)
		}
		if err := s.DropPending(t.Context(), "u", "t"); err != nil {
			t.Fatal(err)
		}
		if pend, _ := s.Pendings(t.Context(), ""); len(pend) != 0 {
			t.Fatalf("after DropPending: %+v", pend)
		}
	})

	t.Run("InvalidInputRefused", func(t *testing.T) {
		s := open(t)
		for _, r := range []Record{
			{Upstream: "", Tool: "t", Hash: h1, Source: SourceFirstUse},
			{Upstream: "u", Tool: "t", Hash: "ABC", Source: SourceFirstUse},
			{Upstream: "u", Tool: "t", Hash: h1, Source: "trust-me"},
		} {
			if err := s.SetPin(t.Context(), r); err == nil {
				t.Errorf("SetPin(%+v) accepted", r)
			}
		}
		if _, err := s.Hold(t.Context(), Pending{Upstream: "u", Tool: "t", Kind: KindRemoved, NewHash: h1}); err == nil {
			t.Error("Hold of a removed tool accepted")
		}
	})

	t.Run("ConcurrentFirstUseOneWinner", func(t *testing.T) {
		s := open(t)
		var wg sync.WaitGroup
		var won atomic.Int32
		start := make(chan struct{})
		for i := range 32 {
			wg.Go(func() {
				<-start
				_, ins, err := s.PinFirst(context.Background(), Record{Upstream: "u", Tool: "race", Hash: hashOf(fmt.Sprint(i)), Source: SourceFirstUse, At: at})
				if err != nil {
					t.Error(err)
				}
				if ins {
					won.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		if won.Load() != 1 {
			t.Fatalf("%d concurrent first uses inserted, want 1", won.Load())
		}
	})

	t.Run("ClosedRefuses", func(t *testing.T) {
		s := open(t)
		s.Close()
		if _, err := s.Pins(t.Context(), ""); !errors.Is(err, ErrClosed) {
			t.Fatalf("Pins after Close: %v", err)
		}
		if err := s.SetPin(t.Context(), Record{Upstream: "u", Tool: "t", Hash: h1, Source: SourceFirstUse}); !errors.Is(err, ErrClosed) {
			t.Fatalf("SetPin after Close: %v", err)
		}
	})
}

func hashOf(s string) string {
	h, _, err := Hash([]byte(`{"name":` + fmt.Sprintf("%q", s) + `}`))
	if err != nil {
		panic(err)
	}
	return h
}

func TestMemoryStoreContract(t *testing.T) {
	testStoreContract(t, func(t *testing.T) Store {
		s := NewMemory()
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestSQLiteStoreContract(t *testing.T) {
	testStoreContract(t, func(t *testing.T) Store {
		s, err := OpenSQLite(filepath.Join(t.TempDir(), "pins.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// When the test binary runs with envChild set, it is a gateway that pins a
// tool, holds a changed one, prints "done" and waits to be killed.
const envChild = "WARDEN_PIN_TEST_CHILD_DB"

func TestMain(m *testing.M) {
	if path := os.Getenv(envChild); path != "" {
		os.Exit(pinChild(path))
	}
	os.Exit(m.Run())
}

func pinChild(path string) int {
	s, err := OpenSQLite(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	p, err := New(context.Background(), Options{Store: s, Logger: discardLogger()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	p.CheckList(ctx, "files", listOf(toolRead, toolWrite))
	p.CheckList(ctx, "files", listOf(toolReadPoisoned, toolWrite))
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(w, "done")
	w.Flush()
	select {} // killed by the parent, without Close
}

// TestSQLitePinsSurviveKill: a gateway process pins read and write, sees
// read change, and is killed; a new gateway on the same file still refuses
// read (before any tools/list) and allows write, and the pending change can
// be approved there.
func TestSQLitePinsSurviveKill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pins.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "done" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q, %v", line, err)
	}
	cmd.Process.Kill()
	cmd.Wait()

	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := New(t.Context(), Options{Store: s, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if ok, reason := p.Allowed("files", "read"); ok || !strings.Contains(reason, "changed") {
		t.Fatalf("after restart, read: Allowed = %v (%s), want blocked as changed", ok, reason)
	}
	if ok, reason := p.Allowed("files", "write"); !ok {
		t.Fatalf("after restart, write: refused (%s)", reason)
	}
	pend := p.Pending()
	if len(pend) != 1 || pend[0].Tool != "read" || !strings.Contains(pend[0].Diff(), "+ ") {
		t.Fatalf("after restart, Pending = %+v", pend)
	}
	if _, err := p.Approve(t.Context(), "files", "read", pend[0].NewHash, "alice"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := p.Allowed("files", "read"); !ok {
		t.Fatal("read still refused after its approval")
	}
}
