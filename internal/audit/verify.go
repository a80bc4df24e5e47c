package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
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
	// With keys (checkpoint.go):
	ProblemSignature  = "signature"  // a checkpoint whose signature does not verify, or by a key not given
	ProblemWitness    = "witness"    // a checkpoint held by the witness that the log does not match
	ProblemUnattested = "unattested" // no record of the log is attested by a valid checkpoint
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

// Span is a run of records, From to To (seq, inclusive).
type Span struct {
	From  uint64 `json:"from"`
	To    uint64 `json:"to"`
	Count int    `json:"count"`
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

	// Checkpoints counts the checkpoint records read (with keys, those
	// whose signature verified).
	Checkpoints int `json:"checkpoints"`
	// With keys: the last valid checkpoint (nil if none), the records after
	// it, which no signature covers (nil if none), and the runs of records
	// that were first attested by a checkpoint written when the log was
	// opened (rule "open": warden stopped without closing the log, or
	// someone else appended them).
	LastCheckpoint *Checkpoint `json:"last_checkpoint,omitempty"`
	Unattested     *Span       `json:"unattested,omitempty"`
	Reopened       []Span      `json:"reopened,omitempty"`
	// Witnessed counts the witness's checkpoints that the log matches.
	Witnessed int `json:"witnessed,omitempty"`
}

// OK reports whether the log verified.
func (r Report) OK() bool { return r.Problem == nil }

// VerifyOptions are what Verify checks a log against besides its chain.
type VerifyOptions struct {
	// Want, when not zero, is a head recorded elsewhere: the log must
	// contain a record with its seq and hash.
	Want Anchor
	// Keys are the public audit keys whose checkpoints are valid. With
	// keys, every checkpoint's signature is checked, the records after the
	// last valid one are reported as unattested, and a log with records
	// but no valid checkpoint fails (ProblemUnattested).
	Keys []*VerifyKey
	// Witness are checkpoints kept outside the log (ReadWitness): each
	// must verify (with Keys) and name a record of the log by its seq and
	// hash.
	Witness []Checkpoint
}

// walker follows a chain record by record.
type walker struct {
	head Anchor // the last record that chained
	n    int    // records taken
}

func newWalker() walker { return walker{head: Anchor{Hash: ZeroHash}} }

// startAt makes rec, a record in the middle of a log, the first one the
// walker takes.
func (w *walker) startAt(rec Record) { w.head = Anchor{Seq: rec.Seq - 1, Hash: rec.PrevHash} }

// step checks that rec follows the head and, if so, makes it the head; else
// it returns the problem's kind and detail.
func (w *walker) step(rec Record) (kind, detail string) {
	if rec.IsLoss() && w.n == 0 && rec.Seq > 1 {
		// The first record of a file put where a lost one was: it
		// continues the lost chain, whose records are elsewhere.
		w.startAt(rec)
	}
	switch {
	case rec.Seq != w.head.Seq+1:
		return ProblemSeq, fmt.Sprintf("found seq %d after seq %d (a record was deleted, inserted or moved)", rec.Seq, w.head.Seq)
	case rec.PrevHash != w.head.Hash:
		return ProblemPrev, "prev_hash does not match the previous record's hash"
	case rec.ComputeHash() != rec.Hash:
		return ProblemHash, "the record's content does not match its hash (edited)"
	}
	w.head = Anchor{Seq: rec.Seq, Hash: rec.Hash}
	w.n++
	return "", ""
}

// verifyCheckpoint checks checkpoint c with the first of keys whose kid it
// names.
func verifyCheckpoint(keys []*VerifyKey, c Checkpoint) error {
	for _, k := range keys {
		if k.ID() == c.KeyID {
			return k.Verify(c)
		}
	}
	return fmt.Errorf("%w: kid %q is none of the keys given", ErrOtherKey, c.KeyID)
}

// Verify reads every record of b in storage order and reports the first one
// that breaks the chain (see the package doc for what that covers). want,
// when not zero, is a head recorded elsewhere. See VerifyWith.
func Verify(ctx context.Context, b Backend, want Anchor) (Report, error) {
	return VerifyWith(ctx, b, VerifyOptions{Want: want})
}

// VerifyWith reads every record of b in storage order and reports the first
// one that breaks the chain, then checks the chain against the anchor and
// opts. The error is for failures to read the backend at all; a bad record
// is a Problem, not an error.
func VerifyWith(ctx context.Context, b Backend, opts VerifyOptions) (Report, error) {
	var rep Report
	w := newWalker()
	want := opts.Want
	var wantSeen bool
	witnessed := map[uint64]string{} // seq → the log's hash there, for the witness's seqs
	for _, c := range opts.Witness {
		witnessed[c.Seq] = ""
	}
	var lastCk uint64 // seq of the last valid checkpoint record
	anchor, err := b.Scan(ctx, func(rec Record) error {
		i := rep.Records
		p := func(kind, detail string) error {
			rep.Problem = &Problem{Kind: kind, Seq: w.head.Seq + 1, Index: i, Detail: detail}
			return errStop
		}
		if kind, detail := w.step(rec); kind != "" {
			return p(kind, detail)
		}
		if want.Seq != 0 && rec.Seq == want.Seq {
			if rec.Hash != want.Hash {
				rep.Problem = &Problem{Kind: ProblemAnchor, Seq: rec.Seq, Index: i, Detail: "hash differs from the wanted head (the log was rewritten)"}
				return errStop
			}
			wantSeen = true
		}
		if _, ok := witnessed[rec.Seq]; ok {
			witnessed[rec.Seq] = rec.Hash
		}
		if rec.IsLoss() {
			rep.Losses = append(rep.Losses, Problem{Kind: ProblemLost, Seq: rec.Seq, Index: i, Detail: rec.Reason})
		}
		if rec.IsCheckpoint() {
			if len(opts.Keys) > 0 {
				c := rec.Checkpoint()
				if err := verifyCheckpoint(opts.Keys, c); err != nil {
					rep.Problem = &Problem{Kind: ProblemSignature, Seq: rec.Seq, Index: i,
						Detail: fmt.Sprintf("checkpoint over seq %d: %v (forged, or edited)", c.Seq, err)}
					return errStop
				}
				if rec.Rule == CheckpointOpen && rec.Seq-1 > lastCk {
					rep.Reopened = append(rep.Reopened, Span{From: lastCk + 1, To: rec.Seq - 1, Count: int(rec.Seq - 1 - lastCk)})
				}
				rep.LastCheckpoint, lastCk = &c, rec.Seq
			}
			rep.Checkpoints++
		}
		rep.Records++
		return nil
	})
	head := w.head
	rep.Head, rep.Anchor = head, anchor
	if re, ok := errors.AsType[*ReadError](err); ok {
		rep.Problem = &Problem{Kind: ProblemRead, Seq: head.Seq + 1, Index: re.Index, Detail: re.Err.Error()}
		return rep, nil
	}
	if err != nil && !errors.Is(err, errStop) {
		return rep, err
	}
	if len(opts.Keys) > 0 && head.Seq > lastCk {
		from := lastCk + 1
		if lastCk == 0 && rep.Records > 0 {
			from = head.Seq - uint64(rep.Records) + 1 // a log that begins with a loss record
		}
		if from <= head.Seq {
			rep.Unattested = &Span{From: from, To: head.Seq, Count: int(head.Seq - from + 1)}
		}
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
	}
	if rep.Problem != nil {
		return rep, nil
	}
	for _, c := range opts.Witness {
		if len(opts.Keys) > 0 {
			if err := verifyCheckpoint(opts.Keys, c); err != nil {
				rep.Problem = &Problem{Kind: ProblemWitness, Seq: c.Seq, Detail: fmt.Sprintf("the witness's checkpoint over seq %d: %v", c.Seq, err)}
				return rep, nil
			}
		}
		switch h := witnessed[c.Seq]; {
		case c.Seq > head.Seq:
			rep.Problem = &Problem{Kind: ProblemWitness, Seq: c.Seq, Index: rep.Records,
				Detail: fmt.Sprintf("the witness attests seq %d, but the log ends at seq %d: records were removed, or the log was rewritten", c.Seq, head.Seq)}
		case h != c.Head:
			rep.Problem = &Problem{Kind: ProblemWitness, Seq: c.Seq,
				Detail: fmt.Sprintf("the log's record has hash %s, the witness attested %s (at %s): the log was rewritten", h, c.Head, c.Time.UTC().Format(time.RFC3339))}
		}
		if rep.Problem != nil {
			return rep, nil
		}
		rep.Witnessed++
	}
	switch {
	case len(opts.Keys) > 0 && rep.Records > 0 && rep.LastCheckpoint == nil:
		rep.Problem = &Problem{Kind: ProblemUnattested, Seq: rep.Unattested.From, Index: 0,
			Detail: fmt.Sprintf("no valid checkpoint: none of the %d records is attested by the keys given (the log was rewritten, or never signed by these keys)", rep.Records)}
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
