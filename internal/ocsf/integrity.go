package ocsf

import (
	"math"
	"strconv"

	"github.com/agentwarden/warden/internal/audit"
)

// Attestation is the attestation object of OCSF 1.9's record_integrity
// profile.
type Attestation struct {
	UID          string       `json:"uid,omitempty"`
	ChainUID     string       `json:"chain_uid,omitempty"`
	AuthorityUID string       `json:"authority_uid,omitempty"`
	Fingerprint  *Fingerprint `json:"fingerprint,omitempty"`
	PrevEvent    *PrevEvent   `json:"prev_event,omitempty"`
}

// Fingerprint is the OCSF fingerprint object.
type Fingerprint struct {
	AlgorithmID     int    `json:"algorithm_id"`
	Algorithm       string `json:"algorithm,omitempty"`
	EncodingID      int    `json:"encoding_id,omitempty"`
	Encoding        string `json:"encoding,omitempty"`
	SerializationID int    `json:"serialization_id,omitempty"`
	Serialization   string `json:"serialization,omitempty"`
	Value           string `json:"value"`
}

// PrevEvent is the OCSF prev_event object: the previous link of a chain.
type PrevEvent struct {
	UID         string       `json:"uid"`
	TypeUID     int          `json:"type_uid,omitempty"`
	Fingerprint *Fingerprint `json:"fingerprint,omitempty"`
}

// auditSerialization names what an audit record's hash is computed over:
// the record's fields in the encoding docs/audit.md defines, not the OCSF
// event. OCSF has no caption for it, so it is serialization_id 99 (Other).
const auditSerialization = "warden.audit"

func recordFingerprint(hash string) *Fingerprint {
	return &Fingerprint{AlgorithmID: 3, Algorithm: "SHA-256", EncodingID: 1, Encoding: "Hex",
		SerializationID: 99, Serialization: auditSerialization, Value: hash}
}

func (b *Base) base() *Base { return b }

// Chain attests the events of consecutive records of one audit log with
// OCSF 1.9's record_integrity profile: each record's activity event carries
// the record's hash (attestation_list[0].fingerprint), the previous
// record's seq and hash (prev_event), and its seq (metadata.sequence, and
// the uid "audit:SEQ" that is also the event's metadata.uid). A verifier
// recomputes the hashes from the audit records (docs/audit.md) or checks
// that the events chain: each prev_event.fingerprint is the fingerprint of
// the event named by prev_event.uid. Build the events with Builder.Version
// SchemaVersionIntegrity. A Chain is used by one goroutine.
type Chain struct {
	// UID is chain_uid, the same for every event of the log.
	UID string

	prevSeq  uint64
	prevType int
}

// Attest adds r's attestation to ev when ev is r's activity event (the one
// whose metadata.uid names r), and reports whether it did; Detection
// Findings of the record are linked to it by metadata.correlation_uid.
func (ch *Chain) Attest(ev Event, r *audit.Record) bool {
	bb, ok := ev.(interface{ base() *Base })
	if !ok {
		return false
	}
	b := bb.base()
	uid := "audit:" + strconv.FormatUint(r.Seq, 10)
	if r.Seq == 0 || b.Metadata.UID != uid {
		return false
	}
	a := Attestation{UID: uid, ChainUID: ch.UID, Fingerprint: recordFingerprint(r.Hash)}
	if r.Seq > 1 && r.PrevHash != "" && r.PrevHash != audit.ZeroHash {
		a.PrevEvent = &PrevEvent{UID: "audit:" + strconv.FormatUint(r.Seq-1, 10), Fingerprint: recordFingerprint(r.PrevHash)}
		if ch.prevSeq == r.Seq-1 {
			a.PrevEvent.TypeUID = ch.prevType
		}
	}
	b.AttestationList = append(b.AttestationList, a)
	b.Metadata.Profiles = append(b.Metadata.Profiles, "record_integrity")
	if r.Seq <= math.MaxInt32 { // metadata.sequence is an integer_t
		b.Metadata.Sequence = r.Seq
	}
	ch.prevSeq, ch.prevType = r.Seq, b.TypeUID
	return true
}
