package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Problem kinds reported by Verify.
const (
	ProblemHash      = "hash"      // the record's content does not match its hash
	ProblemSeq       = "seq"       // the record's seq is not the previous seq + 1
	ProblemPrev      = "prev_hash" // the record's prev_hash is not the previous record's hash
	ProblemRead      = "read"      // the record cannot be decoded
	ProblemTruncated = "truncated" // the records end before the anchor (or the wanted head)
	ProblemAnchor    = "anchor"    // the record at the anchor's seq has another hash
	ProblemLost      = "lost"      // a loss record: the log's file was lost while warden ran (lost.go)
)

// Problem is the first bad record Verify found.
type Problem struct {
	Kind string `json:"kind"`
	// Seq is the seq the bad record should have had: the position in the
	// chain where it breaks (for truncation, the first missing seq).
	Seq uint64 `json:"seq"`
	// Index is the 0-based position of the bad record in storage order.
	Index  int    `json:"index"`
	Detail string `json:"detail"`
}

func (p *Problem) String() string {
	return fmt.Sprintf("record %d: %s: %s", p.Seq, p.Kind, p.Detail)
}

// Report is the result of Verify.
type Report struct {
	Records int    `json:"records"` // records read
	Head    Anchor `json:"head"`    // last record that chains correctly
	Anchor  Anchor `json:"anchor"`  // the backend's anchor
	// Problem is the first bad record, or nil when the log is intact. A
	// break of the chain comes before a loss record, which does not stop
	// the walk.
	Problem *Problem `json:"problem,omitempty"`
	// Losses are the loss records, in order (kind ProblemLost, Seq the
	// loss record's).
	Losses []Problem `json:"losses,omitempty"`
}

// OK reports whether the log verified.
func (r Report) OK() bool { return r.Problem == nil }

// Verify reads every record of b in storage order and reports the first one
// that breaks the chain (see the package doc for what that covers). want,
// when not zero, is a head recorded elsewhere: the log must contain a record
// with want's seq and hash. The error is for failures to read the backend at
// all; a bad record is a Problem, not an error.
func Verify(ctx context.Context, b Backend, want Anchor) (Report, error) {
	var rep Report
	head := Anchor{Hash: ZeroHash}
	var wantSeen bool
	anchor, err := b.Scan(ctx, func(rec Record) error {
		i := rep.Records
		p := func(kind, detail string) error {
			rep.Problem = &Problem{Kind: kind, Seq: head.Seq + 1, Index: i, Detail: detail}
			return errStop
		}
		if rec.IsLoss() && i == 0 && rec.Seq > 1 {
			// The first record of a file put where a lost one was: it
			// continues the lost chain, whose records are elsewhere.
			head = Anchor{Seq: rec.Seq - 1, Hash: rec.PrevHash}
		}
		switch {
		case rec.Seq != head.Seq+1:
			return p(ProblemSeq, fmt.Sprintf("found seq %d after seq %d (a record was deleted, inserted or moved)", rec.Seq, head.Seq))
		case rec.PrevHash != head.Hash:
			return p(ProblemPrev, "prev_hash does not match the previous record's hash")
		case rec.ComputeHash() != rec.Hash:
			return p(ProblemHash, "the record's content does not match its hash (edited)")
		}
		if want.Seq != 0 && rec.Seq == want.Seq {
			if rec.Hash != want.Hash {
				return p(ProblemAnchor, "hash differs from the wanted head (the log was rewritten)")
			}
			wantSeen = true
		}
		if rec.IsLoss() {
			rep.Losses = append(rep.Losses, Problem{Kind: ProblemLost, Seq: rec.Seq, Index: i, Detail: rec.Reason})
		}
		rep.Records++
		head = Anchor{Seq: rec.Seq, Hash: rec.Hash}
		return nil
	})
	rep.Head, rep.Anchor = head, anchor
	if re, ok := errors.AsType[*ReadError](err); ok {
		rep.Problem = &Problem{Kind: ProblemRead, Seq: head.Seq + 1, Index: re.Index, Detail: re.Err.Error()}
		return rep, nil
	}
	if err != nil && !errors.Is(err, errStop) {
		return rep, err
	}
	if rep.Problem != nil {
		return rep, nil
	}
	switch {
	case anchor.Seq > head.Seq:
		rep.Problem = &Problem{Kind: ProblemTruncated, Seq: head.Seq + 1, Index: rep.Records,
			Detail: fmt.Sprintf("the log ends at seq %d but its anchor is at seq %d: the last %d records are missing", head.Seq, anchor.Seq, anchor.Seq-head.Seq)}
	case anchor.Seq > 0 && !anchorMatches(b, anchor, head):
		rep.Problem = &Problem{Kind: ProblemAnchor, Seq: anchor.Seq, Index: int(anchor.Seq - 1),
			Detail: "the record at the anchor's seq does not have the anchor's hash"}
	case want.Seq > head.Seq:
		rep.Problem = &Problem{Kind: ProblemTruncated, Seq: head.Seq + 1, Index: rep.Records,
			Detail: fmt.Sprintf("the log ends at seq %d but the wanted head is at seq %d", head.Seq, want.Seq)}
	case want.Seq != 0 && !wantSeen:
		rep.Problem = &Problem{Kind: ProblemAnchor, Seq: want.Seq, Detail: "the wanted head was not found"}
	case len(rep.Losses) > 0:
		rep.Problem = &rep.Losses[0]
	}
	return rep, nil
}

// anchorMatches reports whether the anchor names a record of the chain. The
// scan kept only the last record, so an anchor behind the head (a JSONL crash
// between the records and the anchor) is checked by a second pass.
func anchorMatches(b Backend, anchor, head Anchor) bool {
	if anchor.Seq == head.Seq {
		return anchor.Hash == head.Hash
	}
	match := false
	b.Scan(context.Background(), func(rec Record) error {
		if rec.Seq == anchor.Seq {
			match = rec.Hash == anchor.Hash
			return errStop
		}
		return nil
	})
	return match
}

// Export writes every record of b as one JSON object per line, in storage
// order, in the JSONL backend's format (so an export can be verified by
// opening it with NewJSONL).
func Export(ctx context.Context, b Backend, w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	if _, err := b.Scan(ctx, func(rec Record) error { return enc.Encode(&rec) }); err != nil {
		return fmt.Errorf("audit: export: %w", err)
	}
	return bw.Flush()
}
