package audit

import (
	"context"
	"errors"
	"fmt"
)

// Checked is a record found by Query, with the chain's verdict up to it.
type Checked struct {
	Record
	// Verified: this record and every record before it chain correctly
	// (seq, prev_hash and hash, as Verify checks them). A record after the
	// first broken one is not verified, whatever its own content.
	Verified bool
}

// QueryResult is what Query found.
type QueryResult struct {
	Matches []Checked // in storage order
	Records int       // records read
	// Problem is the first record that breaks the chain, nil if none was
	// seen. Query does not look at the anchor: use Verify for truncation.
	Problem *Problem
}

// Query reads every record of b in storage order, checks the chain as it
// goes, and returns the records match accepts (at most max of them, the
// first ones; max <= 0 means 1000), each marked with whether the chain is
// intact up to it. match runs once per record, on the scanning goroutine.
// The cost is one full scan of the log.
func Query(ctx context.Context, b Backend, match func(*Record) bool, max int) (QueryResult, error) {
	if max <= 0 {
		max = 1000
	}
	var res QueryResult
	head := Anchor{Hash: ZeroHash}
	_, err := b.Scan(ctx, func(rec Record) error {
		i := res.Records
		res.Records++
		if res.Problem == nil {
			var kind, detail string
			switch {
			case rec.Seq != head.Seq+1:
				kind, detail = ProblemSeq, fmt.Sprintf("found seq %d after seq %d", rec.Seq, head.Seq)
			case rec.PrevHash != head.Hash:
				kind, detail = ProblemPrev, "prev_hash does not match the previous record's hash"
			case rec.ComputeHash() != rec.Hash:
				kind, detail = ProblemHash, "the record's content does not match its hash (edited)"
			}
			if kind != "" {
				res.Problem = &Problem{Kind: kind, Seq: head.Seq + 1, Index: i, Detail: detail}
			} else {
				head = Anchor{Seq: rec.Seq, Hash: rec.Hash}
			}
		}
		if len(res.Matches) < max && match(&rec) {
			res.Matches = append(res.Matches, Checked{Record: rec, Verified: res.Problem == nil})
		}
		return nil
	})
	if re, ok := errors.AsType[*ReadError](err); ok {
		if res.Problem == nil {
			res.Problem = &Problem{Kind: ProblemRead, Seq: head.Seq + 1, Index: re.Index, Detail: re.Err.Error()}
		}
		return res, nil
	}
	return res, err
}

// Query searches the log; see the package function Query.
func (l *Log) Query(ctx context.Context, match func(*Record) bool, max int) (QueryResult, error) {
	return Query(ctx, l.b, match, max)
}
