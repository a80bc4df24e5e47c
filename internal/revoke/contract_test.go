package revoke

import (
	"context"
	"crypto/rand"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/testenv"
)

// opener returns a fresh handle on the registry under test, closed at
// cleanup. Handles from one opener may share storage, so tests draw their
// ids from uid.
type opener func(t *testing.T) Registry

func uid(t *testing.T, what string) string {
	return what + "-" + strings.ReplaceAll(t.Name(), "/", ".") + "-" + rand.Text()[:10]
}

func mustCheck(t *testing.T, reg Registry, tok Token) (bool, string) {
	t.Helper()
	revoked, reason, err := reg.Check(t.Context(), tok)
	if err != nil {
		t.Fatalf("Check(%+v): %v", tok, err)
	}
	return revoked, reason
}

// testContract is the one contract suite every Registry runs.
func testContract(t *testing.T, open opener) {
	t.Run("TokenByID", func(t *testing.T) {
		reg := open(t)
		tok := Token{ID: uid(t, "jti"), Subject: uid(t, "sub"), IssuedAt: time.Now()}
		if revoked, _ := mustCheck(t, reg, tok); revoked {
			t.Fatal("a token nobody revoked is reported revoked")
		}
		if err := reg.Revoke(t.Context(), Revocation{Kind: KindToken, ID: tok.ID, By: "ops:bob", Reason: "leaked"}); err != nil {
			t.Fatal(err)
		}
		revoked, reason := mustCheck(t, reg, tok)
		if !revoked || !strings.Contains(reason, tok.ID) || !strings.Contains(reason, "ops:bob") || !strings.Contains(reason, "leaked") {
			t.Fatalf("revoked token: %v %q (the reason must name the token, who and why)", revoked, reason)
		}
		other := Token{ID: uid(t, "jti"), Subject: tok.Subject, IssuedAt: time.Now()}
		if revoked, _ := mustCheck(t, reg, other); revoked {
			t.Fatal("revoking one token revoked another of the same subject")
		}
	})

	t.Run("SubjectBeforeTime", func(t *testing.T) {
		reg := open(t)
		sub := uid(t, "sub")
		cut := time.Now().Truncate(time.Second)
		if err := reg.Revoke(t.Context(), Revocation{Kind: KindSubject, ID: sub, Before: cut, By: "ops"}); err != nil {
			t.Fatal(err)
		}
		old := Token{ID: uid(t, "jti"), Subject: sub, IssuedAt: cut.Add(-10 * time.Second)}
		if revoked, reason := mustCheck(t, reg, old); !revoked || !strings.Contains(reason, sub) {
			t.Fatalf("a token issued before the subject's revocation: %v %q", revoked, reason)
		}
		later := Token{ID: uid(t, "jti"), Subject: sub, IssuedAt: cut.Add(2 * time.Second)}
		if revoked, _ := mustCheck(t, reg, later); revoked {
			t.Fatal("a token issued after the subject's revocation is refused")
		}
		someoneElse := Token{ID: uid(t, "jti"), Subject: uid(t, "sub"), IssuedAt: cut.Add(-10 * time.Second)}
		if revoked, _ := mustCheck(t, reg, someoneElse); revoked {
			t.Fatal("another subject's token is refused")
		}
		// Revoking again with an earlier time never narrows the revocation.
		if err := reg.Revoke(t.Context(), Revocation{Kind: KindSubject, ID: sub, Before: cut.Add(-time.Hour), By: "ops"}); err != nil {
			t.Fatal(err)
		}
		if revoked, _ := mustCheck(t, reg, old); !revoked {
			t.Fatal("a second, earlier revocation of the subject un-revoked its tokens")
		}
	})

	t.Run("SessionAndBinding", func(t *testing.T) {
		reg := open(t)
		sess := uid(t, "sess")
		bound := Token{ID: uid(t, "jti"), Subject: "alice", IssuedAt: time.Now()}
		if err := reg.Bind(t.Context(), sess, bound.ID, time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		onSession := Token{ID: uid(t, "jti"), Subject: "alice", IssuedAt: time.Now(), Session: sess}
		unrelated := Token{ID: uid(t, "jti"), Subject: "alice", IssuedAt: time.Now(), Session: uid(t, "sess")}
		for _, tok := range []Token{bound, onSession, unrelated} {
			if revoked, _ := mustCheck(t, reg, tok); revoked {
				t.Fatalf("before the session closed: %+v is refused", tok)
			}
		}
		if err := reg.Revoke(t.Context(), Revocation{Kind: KindSession, ID: sess, By: "gateway", Reason: "DELETE"}); err != nil {
			t.Fatal(err)
		}
		// The bound token is refused wherever it is presented.
		elsewhere := bound
		elsewhere.Session = uid(t, "sess")
		for _, tok := range []Token{bound, elsewhere, onSession} {
			if revoked, reason := mustCheck(t, reg, tok); !revoked || !strings.Contains(reason, "closed") {
				t.Errorf("after the session closed: %+v: %v %q", tok, revoked, reason)
			}
		}
		if revoked, _ := mustCheck(t, reg, unrelated); revoked {
			t.Error("closing one session revoked another's token")
		}
	})

	t.Run("ListNewestFirst", func(t *testing.T) {
		reg := open(t)
		a, b := uid(t, "jti"), uid(t, "sub")
		reg.Revoke(t.Context(), Revocation{Kind: KindToken, ID: a, At: time.Now().Add(-time.Second), By: "x"})
		reg.Revoke(t.Context(), Revocation{Kind: KindSubject, ID: b, By: "y", Reason: "offboarded"})
		list, err := reg.List(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range list {
			if r.ID == a || r.ID == b {
				got = append(got, string(r.Kind)+":"+r.ID+":"+r.By)
			}
		}
		want := []string{"sub:" + b + ":y", "jti:" + a + ":x"}
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("list %v, want %v", got, want)
		}
	})

	t.Run("ExpiredIsForgotten", func(t *testing.T) {
		reg := open(t)
		tok := Token{ID: uid(t, "jti"), Subject: "alice", IssuedAt: time.Now()}
		if err := reg.Revoke(t.Context(), Revocation{Kind: KindToken, ID: tok.ID, Until: time.Now().Add(300 * time.Millisecond), By: "x"}); err != nil {
			t.Fatal(err)
		}
		if revoked, _ := mustCheck(t, reg, tok); !revoked {
			t.Fatal("not revoked before its until")
		}
		// Kept: SQLite and Redis compare with their real clocks (Redis
		// expires keys on the server's), which no bubble reaches.
		time.Sleep(500 * time.Millisecond)
		if revoked, _ := mustCheck(t, reg, tok); revoked {
			t.Fatal("still revoked after its until: the registry grows without bound")
		}
	})

	t.Run("ConcurrentRevokeAndCheck", func(t *testing.T) {
		reg := open(t)
		sub := uid(t, "sub")
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Go(func() {
				if i%5 == 0 {
					if err := reg.Revoke(t.Context(), Revocation{Kind: KindSubject, ID: sub, By: "x"}); err != nil {
						t.Error(err)
					}
					return
				}
				if _, _, err := reg.Check(t.Context(), Token{ID: uid(t, "jti"), Subject: sub, IssuedAt: time.Now()}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if revoked, _ := mustCheck(t, reg, Token{ID: uid(t, "jti"), Subject: sub, IssuedAt: time.Now().Add(-time.Minute)}); !revoked {
			t.Fatal("the subject's revocation was lost under concurrency")
		}
	})

	t.Run("InvalidRefused", func(t *testing.T) {
		reg := open(t)
		for _, r := range []Revocation{
			{Kind: "user", ID: "x"},
			{Kind: KindToken, ID: ""},
			{Kind: KindToken, ID: strings.Repeat("a", MaxIDLen+1)},
			{Kind: KindToken, ID: "x", Until: time.Now().Add(-time.Second)},
		} {
			if err := reg.Revoke(t.Context(), r); !errors.Is(err, ErrInvalid) {
				t.Errorf("Revoke(%+v) = %v, want ErrInvalid", r, err)
			}
		}
		if revoked, _, err := reg.Check(t.Context(), Token{}); err == nil || !revoked {
			t.Errorf("Check of a token without an id = (%v, %v), want (true, error)", revoked, err)
		}
	})

	t.Run("FailSecure", func(t *testing.T) {
		reg := open(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if revoked, _, err := reg.Check(ctx, Token{ID: uid(t, "jti")}); err == nil || !revoked {
			t.Errorf("Check with a cancelled context = (%v, %v), want (true, error)", revoked, err)
		}
		reg.Close()
		if revoked, _, err := reg.Check(t.Context(), Token{ID: uid(t, "jti")}); !errors.Is(err, ErrClosed) || !revoked {
			t.Errorf("Check after Close = (%v, %v), want (true, ErrClosed)", revoked, err)
		}
		if err := reg.Revoke(t.Context(), Revocation{Kind: KindToken, ID: "x"}); !errors.Is(err, ErrClosed) {
			t.Errorf("Revoke after Close = %v, want ErrClosed", err)
		}
	})
}

func TestMemoryContract(t *testing.T) {
	testContract(t, func(t *testing.T) Registry {
		r := NewMemory()
		t.Cleanup(func() { r.Close() })
		return r
	})
}

func TestSQLiteContract(t *testing.T) {
	path := filepath.Join(t.TempDir(), "revoked.db")
	testContract(t, func(t *testing.T) Registry {
		r, err := OpenSQLite(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	})
}

func TestRedisContract(t *testing.T) {
	rd := testenv.StartRedis(t, false)
	testContract(t, func(t *testing.T) Registry {
		r, err := OpenRedis(t.Context(), rd.URL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	})
}

// TestSharedAcrossHandles: a revocation made through one handle is refused
// through another on the same storage, as between gateway processes.
func TestSharedAcrossHandles(t *testing.T) {
	rd := testenv.StartRedis(t, false)
	path := filepath.Join(t.TempDir(), "revoked.db")
	for name, open := range map[string]func() (Registry, error){
		"sqlite": func() (Registry, error) { return OpenSQLite(path) },
		"redis":  func() (Registry, error) { return OpenRedis(t.Context(), rd.URL) },
	} {
		t.Run(name, func(t *testing.T) {
			a, err := open()
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := open()
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			tok := Token{ID: uid(t, "jti"), Subject: "alice", IssuedAt: time.Now()}
			if err := a.Revoke(t.Context(), Revocation{Kind: KindToken, ID: tok.ID, By: "ops"}); err != nil {
				t.Fatal(err)
			}
			if revoked, _ := mustCheck(t, b, tok); !revoked {
				t.Fatal("a revocation made through one handle is not seen through another")
			}
		})
	}
}

// TestRedisDownDenies: with the server gone, Check cannot decide and says
// so; the caller denies.
func TestRedisDownDenies(t *testing.T) {
	rd := testenv.StartRedis(t, false)
	reg, err := OpenRedis(t.Context(), rd.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	rd.Kill()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	revoked, reason, err := reg.Check(ctx, Token{ID: "jti-1", Subject: "alice", IssuedAt: time.Now()})
	if err == nil || !revoked || !strings.Contains(reason, "could not decide") {
		t.Fatalf("Check with Redis down = (%v, %q, %v), want (true, a reason, an error)", revoked, reason, err)
	}
}
