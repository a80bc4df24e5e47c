package audit

import (
	"context"
	"testing"
)

// TestQueryMarksWhatTheChainCovers: Query finds records by content and says,
// for each, whether the chain up to it is intact; after an edit, the edited
// record and every later one are not verified.
func TestQueryMarksWhatTheChainCovers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		path := be.path(t)
		l := openLog(t, be, path)
		for i := range 6 {
			rec := sample(i)
			rec.Approver = "console:alice"
			if i%2 == 1 {
				rec.Approver = "console:bob"
			}
			mustAppend(t, l, rec)
		}
		bobs := func(r *Record) bool { return r.Approver == "console:bob" }
		res, err := l.Query(ctx, bobs, 0)
		if err != nil || res.Problem != nil || res.Records != 6 {
			t.Fatalf("intact log: %+v %v", res, err)
		}
		if len(res.Matches) != 3 || res.Matches[0].Seq != 2 || !res.Matches[2].Verified {
			t.Fatalf("matches %+v", res.Matches)
		}
		if res, _ := l.Query(ctx, bobs, 2); len(res.Matches) != 2 {
			t.Fatalf("max 2: %d matches", len(res.Matches))
		}
		l.Close()

		newTamperer(t, be, path).editTool(4, "evil")
		b := openBackend(t, be, path)
		res, err = Query(ctx, b, bobs, 0)
		if err != nil || res.Problem == nil || res.Problem.Seq != 4 {
			t.Fatalf("edited log: %+v %v", res, err)
		}
		got := map[uint64]bool{}
		for _, m := range res.Matches {
			got[m.Seq] = m.Verified
		}
		if !got[2] || got[4] || got[6] {
			t.Fatalf("verified by seq %v, want 2 only", got)
		}
	})
}
