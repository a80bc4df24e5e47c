package audit

// Signed checkpoints (issue 17). A hash chain without a secret can be
// recomputed by anyone who can write the log: append forged records, or
// rewrite the whole log, and every hash still matches. An Ed25519 audit
// key, which the log's file does not hold, closes that gap. Every Every
// records, every Interval while records wait unattested, when the log is
// closed, and when it is opened after records were left unattested, the
// log appends a checkpoint: a record of kind "checkpoint" whose kid and sig
// are the key's signature over the chain up to the record before it:
//
//	… ─▶ rec n ─▶ checkpoint n+1 ─▶ rec n+2 ─▶ … ─▶ rec m ─▶ (end)
//	     │          sig over (n, hash(rec n), time, kid)      │
//	     └── attested: changing any record ≤ n breaks the  ──┘ unattested:
//	         chain to the signed hash                          n+2..m
//
// The checkpoint is a record like any other (seq, prev_hash, hash chained,
// hash version 3), so it is in the log's order and cannot be moved. It can
// also go to a Witness, a second sink the log's writer cannot rewrite (an
// append-only file elsewhere, an HTTP endpoint), so that the head can be
// checked from outside.
//
// The signed message is
//
//	"warden.audit.checkpoint.v1" 0x00 field(seq) field(head) field(time) field(kid)
//
// with field as in the record hash (audit.go), seq the decimal seq of the
// last attested record, head its hash, and time the checkpoint's decimal
// Unix nanoseconds. kid is the RFC 7638 thumbprint of the public key, and
// sig the base64url (unpadded) Ed25519 signature.
//
// What a key holder can still do: sign anything. What a writer without the
// key can do: append records after the last checkpoint (Verify reports
// them as unattested), or drop the records after it (a witness, or the
// anchor, shows that).

import (
	"bufio"
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// CheckpointKind is the Kind of a checkpoint record.
const CheckpointKind = "checkpoint"

// The rules of checkpoint records: what made the log write one.
const (
	CheckpointCount    = "count"    // Every records since the last one
	CheckpointInterval = "interval" // records waited Interval unattested
	CheckpointClose    = "close"    // Log.Close
	CheckpointOpen     = "open"     // the log was opened with unattested records at its end
)

// Defaults of CheckpointOptions.
const (
	DefaultCheckpointEvery    = 1000
	DefaultCheckpointInterval = 10 * time.Second
)

const checkpointTag = "warden.audit.checkpoint.v1"

// CheckpointOptions configures the signed checkpoints of a Log. The zero
// value writes none.
type CheckpointOptions struct {
	// Key signs checkpoints; nil writes none (and the log is not attested).
	Key *SigningKey
	// Every is how many records may follow a checkpoint before the next;
	// 0 means DefaultCheckpointEvery.
	Every int
	// Interval is how long records may wait unattested; 0 means
	// DefaultCheckpointInterval, negative only Every and Close.
	Interval time.Duration
	// Witness, if set, also receives every checkpoint once it is durable
	// in the log, from a queue of 64 on its own goroutine, so that a slow
	// witness does not hold up records. A witness that fails, or falls
	// 64 behind, is logged; the log goes on. Close drains the queue (for
	// at most 10 s) and closes the witness; so does New when it fails
	// after taking it.
	Witness Witness
	// Witnessed, if set, is the last checkpoint the witness holds (the
	// last line of the witness file, ReadWitness). New refuses a log that
	// ends before its seq or holds another hash there: records were cut
	// or rewritten while warden was down.
	Witnessed *Checkpoint
}

// Checkpoint is the audit key's signature over a log's chain up to one
// record: as a witness holds it, or as derived from a checkpoint record.
type Checkpoint struct {
	Seq   uint64    `json:"seq"`  // the last attested record
	Head  string    `json:"head"` // its hash
	Time  time.Time `json:"time"`
	KeyID string    `json:"kid"`
	Sig   string    `json:"sig"`
}

// message is the byte string the key signs (see the top of this file).
func (c *Checkpoint) message() []byte {
	var seq, ns [20]byte
	b := make([]byte, 0, 160)
	b = append(b, checkpointTag...)
	b = append(b, 0)
	b = appendField(b, strconv.AppendUint(seq[:0], c.Seq, 10))
	b = appendField(b, c.Head)
	b = appendField(b, strconv.AppendInt(ns[:0], c.Time.UnixNano(), 10))
	return appendField(b, c.KeyID)
}

// IsCheckpoint reports whether r is a checkpoint record.
func (r *Record) IsCheckpoint() bool { return r.Kind == CheckpointKind }

// Checkpoint returns what checkpoint record r signs: the record before it.
func (r *Record) Checkpoint() Checkpoint {
	return Checkpoint{Seq: r.Seq - 1, Head: r.PrevHash, Time: r.Time, KeyID: r.KeyID, Sig: r.Sig}
}

// SigningKey is an audit key's private half. It is safe for concurrent use.
type SigningKey struct {
	id   string
	priv ed25519.PrivateKey
}

// VerifyKey is an audit key's public half.
type VerifyKey struct {
	id  string
	pub ed25519.PublicKey
}

// ID returns the key's kid: the RFC 7638 thumbprint of its public JWK.
func (k *SigningKey) ID() string { return k.id }

// ID returns the key's kid.
func (k *VerifyKey) ID() string { return k.id }

// Public returns the key's public half.
func (k *SigningKey) Public() *VerifyKey {
	return &VerifyKey{id: k.id, pub: k.priv.Public().(ed25519.PublicKey)}
}

// sign returns the checkpoint of head (seq, hash) at t.
func (k *SigningKey) sign(seq uint64, head string, t time.Time) Checkpoint {
	c := Checkpoint{Seq: seq, Head: head, Time: t, KeyID: k.id}
	c.Sig = base64.RawURLEncoding.EncodeToString(ed25519.Sign(k.priv, c.message()))
	return c
}

// Errors of VerifyKey.Verify.
var (
	ErrOtherKey     = errors.New("signed by another key")
	ErrBadSignature = errors.New("the signature does not verify")
)

// Verify checks c's signature; the error wraps ErrOtherKey when c names
// another kid, and ErrBadSignature when the signature is wrong.
func (k *VerifyKey) Verify(c Checkpoint) error {
	if c.KeyID != k.id {
		return fmt.Errorf("%w (kid %q, not %q)", ErrOtherKey, c.KeyID, k.id)
	}
	sig, err := base64.RawURLEncoding.DecodeString(c.Sig)
	if err != nil || !ed25519.Verify(k.pub, c.message(), sig) {
		return fmt.Errorf("%w with key %s", ErrBadSignature, k.id)
	}
	return nil
}

// GenerateKey makes a new audit key and returns it as a private JWK and a
// public JWK (JSON, one line each), and its kid.
func GenerateKey() (private, public []byte, kid string, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, "", err
	}
	jwk := jose.JSONWebKey{Key: pub, Algorithm: "EdDSA", Use: "sig"}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, nil, "", err
	}
	kid = base64.RawURLEncoding.EncodeToString(tp)
	jwk.KeyID = kid
	if public, err = json.Marshal(&jwk); err != nil {
		return nil, nil, "", err
	}
	jwk.Key = priv
	if private, err = json.Marshal(&jwk); err != nil {
		return nil, nil, "", err
	}
	return private, public, kid, nil
}

// parseJWK reads an Ed25519 JWK and checks that its kid, if any, is its
// thumbprint.
func parseJWK(data []byte) (jose.JSONWebKey, string, error) {
	var jwk jose.JSONWebKey
	if err := jwk.UnmarshalJSON(bytes.TrimSpace(data)); err != nil {
		return jwk, "", fmt.Errorf("not a JWK: %w", err)
	}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return jwk, "", err
	}
	kid := base64.RawURLEncoding.EncodeToString(tp)
	if jwk.KeyID != "" && jwk.KeyID != kid {
		return jwk, "", fmt.Errorf("its kid %q is not its thumbprint %q", jwk.KeyID, kid)
	}
	return jwk, kid, nil
}

// LoadSigningKey reads the private audit key at path (a JWK, as
// `warden keys audit` writes it). A file readable or writable by group or
// others is refused.
func LoadSigningKey(path string) (*SigningKey, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("audit key: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("audit key %s: mode %04o lets group or others read it: chmod 600 it", path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("audit key: %w", err)
	}
	jwk, kid, err := parseJWK(data)
	if err != nil {
		return nil, fmt.Errorf("audit key %s: %w", path, err)
	}
	priv, ok := jwk.Key.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("audit key %s: want a private Ed25519 key (OKP, crv Ed25519, with d)", path)
	}
	return &SigningKey{id: kid, priv: priv}, nil
}

// LoadVerifyKey reads a public audit key (the .pub file `warden keys audit`
// writes). A private key is refused: the verifier never needs it.
func LoadVerifyKey(path string) (*VerifyKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("audit key: %w", err)
	}
	jwk, kid, err := parseJWK(data)
	if err != nil {
		return nil, fmt.Errorf("audit key %s: %w", path, err)
	}
	switch k := jwk.Key.(type) {
	case ed25519.PublicKey:
		return &VerifyKey{id: kid, pub: k}, nil
	case ed25519.PrivateKey:
		return nil, fmt.Errorf("audit key %s holds the private key: pass the public one (%s.pub)", path, path)
	}
	return nil, fmt.Errorf("audit key %s: want a public Ed25519 key (OKP, crv Ed25519)", path)
}

// Witness receives each checkpoint after it is durable in the log.
type Witness interface {
	Witness(ctx context.Context, c Checkpoint) error
	Close() error
}

// FileWitness appends each checkpoint as one JSON line to a file and syncs
// it. Put the file where the log's writer cannot rewrite it (another
// owner with chattr +a, a mount of another machine).
type FileWitness struct {
	mu sync.Mutex
	f  *os.File
}

// NewFileWitness opens (creating, mode 0600) the witness file at path for
// appending.
func NewFileWitness(path string) (*FileWitness, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit witness: %w", err)
	}
	return &FileWitness{f: f}, nil
}

// Witness implements Witness.
func (w *FileWitness) Witness(_ context.Context, c Checkpoint) error {
	b, err := json.Marshal(&c)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.f.Write(append(b, '\n')); err != nil {
		return err
	}
	return w.f.Sync()
}

// Close implements Witness.
func (w *FileWitness) Close() error { return w.f.Close() }

// HTTPWitness POSTs each checkpoint as a JSON object to a URL and wants a
// 2xx answer.
type HTTPWitness struct {
	URL    string
	Client *http.Client // nil: a client with a 5 s timeout
}

// Witness implements Witness.
func (w *HTTPWitness) Witness(ctx context.Context, c Checkpoint) error {
	b, err := json.Marshal(&c)
	if err != nil {
		return err
	}
	client := w.Client
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("audit witness %s: HTTP %d", w.URL, resp.StatusCode)
	}
	return nil
}

// Close implements Witness.
func (w *HTTPWitness) Close() error { return nil }

// ReadWitness reads a witness file: one Checkpoint per line. A line that
// is not one is an error naming the line; an unfinished last line (a crash
// during a write) is ignored.
func ReadWitness(path string) ([]Checkpoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("audit witness: %w", err)
	}
	defer f.Close()
	var out []Checkpoint
	r := bufio.NewReader(f)
	for line := 1; ; line++ {
		b, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("audit witness %s: %w", path, err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var c Checkpoint
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("audit witness %s:%d: %w", path, line, err)
		}
		out = append(out, c)
	}
}

// Witnesses hands each checkpoint to every witness in turn.
type Witnesses []Witness

// Witness implements Witness: every witness gets the checkpoint, and the
// errors are joined.
func (ws Witnesses) Witness(ctx context.Context, c Checkpoint) error {
	var errs []error
	for _, w := range ws {
		errs = append(errs, w.Witness(ctx, c))
	}
	return errors.Join(errs...)
}

// Close implements Witness.
func (ws Witnesses) Close() error {
	var errs []error
	for _, w := range ws {
		errs = append(errs, w.Close())
	}
	return errors.Join(errs...)
}
