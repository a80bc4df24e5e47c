package approval

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/testenv"
)

// testQuorumContract is the two-person rule on a backend: open returns a
// queue whose level-1 requests need two approvers.
func testQuorumContract(t *testing.T, open func(t *testing.T) *Queue) {
	sensitive := func() Request { r := req(); r.Classification = 1; return r }

	t.Run("TwoDistinctApproversRunIt", func(t *testing.T) {
		q := open(t)
		p := q.Submit(sensitive())
		if n := q.Needs(p); n != 2 {
			t.Fatalf("Needs = %d, want 2", n)
		}
		var more *MoreApprovals
		if err := q.DecideExact(p.ID, p.Hash, true, "console:alice", "looks right"); !errors.As(err, &more) || len(more.Votes) != 1 || more.Need != 2 {
			t.Fatalf("the first approval: %v, want MoreApprovals 1 of 2", err)
		}
		if _, ok := q.Get(p.ID); !ok {
			t.Fatal("one approval of two settled the call")
		}
		if err := q.Decide(p.ID, true, "console:alice", "again"); !errors.Is(err, ErrSameApprover) {
			t.Fatalf("the same approver again: %v, want ErrSameApprover", err)
		}
		if votes, err := q.Votes(p.ID); err != nil || len(votes) != 1 || votes[0].Approver != "console:alice" || votes[0].Reason != "looks right" {
			t.Fatalf("votes %+v %v", votes, err)
		}
		if err := q.DecideExact(p.ID, "other-hash", true, "console:bob", ""); !errors.Is(err, ErrHash) {
			t.Fatalf("a vote for other arguments: %v, want ErrHash", err)
		}
		if err := q.DecideExact(p.ID, p.Hash, true, "console:bob", "agreed"); err != nil {
			t.Fatalf("the second approver: %v", err)
		}
		d := q.Wait(t.Context(), p.ID)
		if !d.Approved || d.Approver != "console:alice, console:bob" || d.Reason != "console:alice: looks right; console:bob: agreed" {
			t.Errorf("decision %+v", d)
		}
	})

	t.Run("OneDenialDenies", func(t *testing.T) {
		q := open(t)
		p := q.Submit(sensitive())
		var more *MoreApprovals
		if err := q.Decide(p.ID, true, "console:alice", ""); !errors.As(err, &more) {
			t.Fatal(err)
		}
		if err := q.Decide(p.ID, false, "console:bob", "no"); err != nil {
			t.Fatal(err)
		}
		if d := q.Wait(t.Context(), p.ID); d.Approved || d.Approver != "console:bob" {
			t.Errorf("decision %+v", d)
		}
	})

	t.Run("OtherLevelsNeedOne", func(t *testing.T) {
		q := open(t)
		p := q.Submit(req())
		if err := q.Decide(p.ID, true, "console:alice", ""); err != nil {
			t.Fatal(err)
		}
		if d := q.Wait(t.Context(), p.ID); !d.Approved {
			t.Errorf("decision %+v", d)
		}
	})

	t.Run("ConcurrentLastApprovals", func(t *testing.T) {
		q := open(t)
		p := q.Submit(sensitive())
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i, who := range []string{"a", "b", "c"} {
			wg.Go(func() { errs[i] = q.Decide(p.ID, true, who, "") })
		}
		wg.Wait()
		ok, more := 0, 0
		for _, err := range errs {
			var m *MoreApprovals
			switch {
			case err == nil:
				ok++
			case errors.As(err, &m):
				more++
			case errors.Is(err, ErrUnknown): // voted after the call was settled
			default:
				t.Errorf("concurrent approval: %v", err)
			}
		}
		if ok < 1 || more < 1 {
			t.Errorf("%d completed, %d recorded as partial: want at least one of each", ok, more)
		}
		if d := q.Wait(t.Context(), p.ID); !d.Approved {
			t.Errorf("decision %+v", d)
		}
	})
}

func TestMemoryQuorum(t *testing.T) {
	testQuorumContract(t, func(t *testing.T) *Queue {
		q := NewQueue(Options{Timeout: time.Minute, Approvers: map[int]int{1: 2}})
		t.Cleanup(func() { q.Close() })
		return q
	})
}

func TestRedisQuorum(t *testing.T) {
	rd := testenv.StartRedis(t, false)
	testQuorumContract(t, func(t *testing.T) *Queue {
		return redisQueue(t, rd.URL, Options{Timeout: time.Minute, Approvers: map[int]int{1: 2}})
	})
}

func TestAPIReportsPartialApproval(t *testing.T) {
	q := NewQueue(Options{Timeout: time.Minute, Approvers: map[int]int{2: 2}})
	t.Cleanup(func() { q.Close() })
	r := req()
	r.Classification = 2
	p := q.Submit(r)
	h := Handler(q, "tok-0123456789abcdef")
	post := func(approver string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		rq := httptest.NewRequest("POST", "http://127.0.0.1:8788/v1/approvals/"+p.ID+"/allow", strings.NewReader(`{"approver":"`+approver+`"}`))
		rq.Header.Set("Authorization", "Bearer tok-0123456789abcdef")
		h.ServeHTTP(rec, rq)
		return rec
	}
	if rec := post("alice"); rec.Code != http.StatusAccepted || !strings.Contains(rec.Body.String(), `"approvals":1,`) || !strings.Contains(rec.Body.String(), `"needed":2`) {
		t.Fatalf("first approval: %d %s", rec.Code, rec.Body)
	}
	if rec := post("alice"); rec.Code != http.StatusConflict {
		t.Fatalf("same approver: %d %s", rec.Code, rec.Body)
	}
	if rec := post("bob"); rec.Code != http.StatusOK {
		t.Fatalf("second approver: %d %s", rec.Code, rec.Body)
	}
	if d := q.Wait(t.Context(), p.ID); !d.Approved || d.Approver != "alice, bob" {
		t.Errorf("decision %+v", d)
	}
}

// TestRedisQuorumAcrossInstances: the two approvals of a two-person call
// may come through two gateway instances sharing one Redis.
func TestRedisQuorumAcrossInstances(t *testing.T) {
	rd := testenv.StartRedis(t, false)
	o := Options{Timeout: time.Minute, Approvers: map[int]int{1: 2}}
	a, b := redisQueue(t, rd.URL, o), redisQueue(t, rd.URL, o)
	r := req()
	r.Classification = 1
	p := a.Submit(r)
	var more *MoreApprovals
	if err := a.DecideExact(p.ID, p.Hash, true, "console:alice", ""); !errors.As(err, &more) {
		t.Fatalf("alice through A: %v", err)
	}
	if votes, err := b.Votes(p.ID); err != nil || len(votes) != 1 || votes[0].Approver != "console:alice" {
		t.Fatalf("B sees the votes %+v %v", votes, err)
	}
	if err := b.DecideExact(p.ID, p.Hash, true, "console:alice", ""); !errors.Is(err, ErrSameApprover) {
		t.Fatalf("alice again through B: %v", err)
	}
	if err := b.DecideExact(p.ID, p.Hash, true, "console:bob", ""); err != nil {
		t.Fatalf("bob through B: %v", err)
	}
	if d := a.Wait(t.Context(), p.ID); !d.Approved || d.Approver != "console:alice, console:bob" {
		t.Errorf("decision on A: %+v", d)
	}
}
