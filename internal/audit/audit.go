// Package audit is warden's append-only, hash-chained audit log (AASM P6).
//
// Every message the gateway decides on becomes one Record. Records are
// numbered from 1 without gaps (Seq) and each carries the hash of the one
// before it (PrevHash), so that editing, deleting, reordering or inserting a
// record breaks the chain at that record. Log.Append returns only after the
// record is durable: the gateway appends before the reply leaves, and denies
// the call when Append fails.
//
// # Hash encoding (version 1)
//
// Hash is the lowercase hex SHA-256 of this byte string:
//
//	"warden.audit.v1" 0x00
//	field(seq)          decimal ASCII, no sign, no leading zeros
//	field(time)         decimal ASCII Unix time in nanoseconds (UTC)
//	field(prev_hash)    64 lowercase hex digits; the first record's is 64 "0"
//	field(actor) field(session) field(upstream) field(method)
//	field(request_id) field(tool) field(params_hash) field(decision)
//	field(stage) field(rule) field(invariant) field(jti) field(approver)
//	field(direction)
//
// where field(s) is the length of s in bytes as a 4-byte big-endian unsigned
// integer followed by the bytes of s (UTF-8; strings that are not valid UTF-8
// are replaced by Append before hashing, each bad byte sequence by U+FFFD).
// request_id is the JSON-RPC id as it appeared on the wire (`7`, `"abc"`).
// The length prefixes make the encoding injective: no two different records
// share a preimage. The hash field itself is not part of the preimage. A new
// field means a new version tag.
//
// # Hash encoding (version 2)
//
// A record with a reason (why a stage refused the message, or why warden
// answered in the upstream's place) is hashed as version 1 with the tag
// "warden.audit.v2" and field(reason) appended after field(direction). A
// record without one keeps version 1, so the logs written before reasons
// were recorded verify as they did, and one chain may hold both.
//
// # Hash encoding (version 3)
//
// A record with a request_hash, a kind, a kid or a sig (a tools/call's
// request hash, a checkpoint: checkpoint.go) is hashed with the tag
// "warden.audit.v3" and, after field(direction):
//
//	field(reason) field(request_hash) field(kind) field(kid) field(sig)
//
// (each possibly empty). Records without any of the four keep version 1
// or 2.
//
// # Backends
//
// A Backend stores records and an anchor: the seq and hash of the last
// record, kept apart from the records (SQLite: the audit_head table, written
// in the same transaction; JSONL: a sidecar file "<path>.head", written
// after the records are on disk and lagging them: jsonl.go). NewJSONL, the
// group-commit file, writes one JSON object per line, a batch in one write
// and one fdatasync; NewSQLite keeps the records in an SQLite database.
// Log does the chaining and group commit for both: concurrent Appends that
// queue while a batch is being written are chained by the writer and
// written in one durable step.
//
//	Append ─┐
//	Append ─┼─▶ reqs ─▶ writer: seq++, prev, hash ×n ─▶ Backend.Write (one fsync) ─▶ replies
//	Append ─┘
//
// # What Verify detects
//
// Verify walks every record and reports the first one that is wrong: a hash
// that does not match the record's content (an edited field or an edited
// hash), a seq that is not the previous seq plus one (a deleted, inserted or
// reordered record), a prev_hash that is not the previous record's hash, or a
// record that cannot be read. Truncation — deleting the last records — leaves
// a chain that is valid as far as it goes; the anchor is what reveals it: the
// log then ends before the anchor's seq.
//
// What the chain alone cannot see: someone who can write both the records
// and the anchor can rewrite the log's tail, or all of it, and recompute
// every hash; a hash chain without a secret only proves that the log is the
// one that ends in a given head. Signed checkpoints (checkpoint.go) close
// that gap for every record before the last checkpoint; a head recorded
// elsewhere (Verify's want, or a witness) pins it too. The JSONL anchor
// lags the records (it is written at checkpoints, while idle and at
// close), so a crash leaves it behind the records; that is not reported
// (the records after the anchor still chain correctly), and the next idle
// tick moves it forward.
package audit

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Decision is what the gateway did with a message.
type Decision string

// The decisions a record may carry.
const (
	Allow Decision = "allow" // relayed
	Deny  Decision = "deny"  // refused by a stage
	Error Decision = "error" // relayed, and the upstream or the relay failed it
)

// valid reports whether d is one of the defined decisions.
func (d Decision) valid() bool { return d == Allow || d == Deny || d == Error }

// ZeroHash is the PrevHash of the first record of a chain.
const ZeroHash = "0000000000000000000000000000000000000000000000000000000000000000"

// The domain-separation tags at the start of a preimage: version 1, and
// version 2 for a record with a reason.
const (
	hashVersion       = "warden.audit.v1"
	hashVersionReason = "warden.audit.v2"
	hashVersion3      = "warden.audit.v3"
)

// MaxReason bounds a record's Reason in bytes: Append cuts a longer one
// (at a character boundary, ending it with "…").
const MaxReason = 1024

// Record is one entry of the audit log. Seq, PrevHash and Hash are set by
// Log.Append; the caller fills the rest. Empty strings mean "not applicable"
// (a notification has no RequestID, an allowed call no Stage).
type Record struct {
	Seq      uint64    `json:"seq"`
	Time     time.Time `json:"time"`
	PrevHash string    `json:"prev_hash"`
	Hash     string    `json:"hash"`

	Actor      string   `json:"actor"`       // who called: token subject, client identity, or "" if unknown
	Session    string   `json:"session"`     // session id; "" for stdio and stateless sessions
	Upstream   string   `json:"upstream"`    // upstream name
	Method     string   `json:"method"`      // JSON-RPC method
	RequestID  string   `json:"request_id"`  // raw JSON-RPC id, "" for notifications
	Tool       string   `json:"tool"`        // tool of a tools/call
	ParamsHash string   `json:"params_hash"` // hex SHA-256 of the JCS arguments
	Decision   Decision `json:"decision"`
	Stage      string   `json:"stage"`     // stage that denied or failed the call
	Rule       string   `json:"rule"`      // rule of that stage
	Invariant  string   `json:"invariant"` // zero-trust invariant that failed, e.g. "INV-3"
	JTI        string   `json:"jti"`       // token id consumed for the call
	Approver   string   `json:"approver"`  // who approved a held call
	// Direction is who sent the message: "client" (to the upstream),
	// "upstream" (to the client), or "warden" (its own request to the
	// client or the upstream, or its answer in the upstream's place).
	Direction string `json:"direction"`
	// Reason says, in words, why the stage refused the message, or why
	// warden answered in the upstream's place; "" otherwise. At most
	// MaxReason bytes.
	Reason string `json:"reason,omitempty"`
	// RequestHash, on a client's tools/call, is the OWASP Agent Control
	// Standard's request_hash: lowercase hex SHA-256 of the JCS (RFC 8785)
	// form of the request's params as the client sent them; "" otherwise.
	RequestHash string `json:"request_hash,omitempty"`
	// Kind is "" for the record of a message and CheckpointKind for a
	// signed checkpoint (checkpoint.go), which also has KeyID and Sig.
	Kind  string `json:"kind,omitempty"`
	KeyID string `json:"kid,omitempty"`
	Sig   string `json:"sig,omitempty"`
}

// Anchor is the seq and hash of the last record of a log: a log's head, as
// kept by a backend apart from the records, or recorded by an operator.
type Anchor struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// ComputeHash returns the hash of r as defined in the package doc, from every
// field but Hash.
func (r *Record) ComputeHash() string {
	var seq, ns [20]byte
	// On the stack unless the record is unusually long: the writer hashes
	// every record, and this is the only buffer it needs.
	var buf [1536]byte
	b := buf[:0]
	v3 := r.RequestHash != "" || r.Kind != "" || r.KeyID != "" || r.Sig != ""
	switch {
	case v3:
		b = append(b, hashVersion3...)
	case r.Reason != "":
		b = append(b, hashVersionReason...)
	default:
		b = append(b, hashVersion...)
	}
	b = append(b, 0)
	b = appendField(b, strconv.AppendUint(seq[:0], r.Seq, 10))
	b = appendField(b, strconv.AppendInt(ns[:0], r.Time.UnixNano(), 10))
	for _, s := range [...]string{r.PrevHash, r.Actor, r.Session, r.Upstream, r.Method, r.RequestID,
		r.Tool, r.ParamsHash, string(r.Decision), r.Stage, r.Rule, r.Invariant, r.JTI, r.Approver, r.Direction} {
		b = appendField(b, s)
	}
	switch {
	case v3:
		for _, s := range [...]string{r.Reason, r.RequestHash, r.Kind, r.KeyID, r.Sig} {
			b = appendField(b, s)
		}
	case r.Reason != "":
		b = appendField(b, r.Reason)
	}
	sum := sha256.Sum256(b)
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], sum[:])
	return string(h[:])
}

func appendField[T string | []byte](b []byte, s T) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// normalize prepares a caller's record for chaining: valid UTF-8 everywhere
// (JSON cannot carry anything else, so a JSONL round trip would change the
// hash) and a UTC time with no monotonic reading.
func (r *Record) normalize() error {
	if !r.Decision.valid() {
		return errors.New("audit: decision " + strconv.Quote(string(r.Decision)) + " is not allow, deny or error")
	}
	for _, p := range []*string{&r.Actor, &r.Session, &r.Upstream, &r.Method, &r.RequestID, &r.Tool,
		&r.ParamsHash, &r.Stage, &r.Rule, &r.Invariant, &r.JTI, &r.Approver, &r.Direction, &r.Reason,
		&r.RequestHash, &r.Kind, &r.KeyID, &r.Sig} {
		if !utf8.ValidString(*p) {
			*p = strings.ToValidUTF8(*p, "\uFFFD")
		}
	}
	if len(r.Reason) > MaxReason {
		cut := MaxReason - len("…")
		for cut > 0 && !utf8.RuneStart(r.Reason[cut]) {
			cut--
		}
		r.Reason = r.Reason[:cut] + "…"
	}
	if r.Time.Before(minTime) || r.Time.After(maxTime) {
		return errors.New("audit: record time " + r.Time.String() + " is outside the representable range")
	}
	r.Time = r.Time.UTC().Round(0)
	return nil
}

// The range of times whose Unix nanoseconds fit in an int64.
var (
	minTime = time.Unix(0, -1<<63+1)
	maxTime = time.Unix(0, 1<<63-1)
)

// Errors returned by this package.
var (
	// ErrClosed is returned by Append after Close.
	ErrClosed = errors.New("audit: log closed")
	// ErrBroken is wrapped by New when a stored record from the last
	// checkpoint on does not chain or match its hash, the records end
	// before the anchor, or the last checkpoint's signature does not verify
	// (open.go); and by a backend that can no longer guarantee that a
	// failed write left nothing behind.
	ErrBroken = errors.New("audit: log is broken")
)
