// Package pin attests an MCP server's tools (AASM P2, capability
// attestation) by pinning their definitions: once warden has accepted what a
// tool says it is, any later change to it (a "rug pull") blocks the tool
// until a person re-approves the new definition.
//
// The pin of a tool is
//
//	pin = lowercase hex( SHA-256( JCS( definition without its top-level "_meta" ) ) )
//
// where definition is the tool object exactly as the server sent it in a
// tools/list answer: name, title, description, inputSchema, outputSchema,
// annotations, icons and any member a later revision adds. Only the
// top-level "_meta" member is left out (see [Hash]). JCS is RFC 8785, through
// zerotrust.Canonicalize, so two answers that differ only in member order or
// whitespace pin the same.
//
// Pins come from three sources ([Source]): first use (trust on first use:
// the first definition seen is pinned, or held for a person when FirstUse
// is "hold"), a signed manifest (warden manifest sign: Ed25519, compact
// JWS), or a person's approval of a changed definition. For an upstream
// with a manifest, first use pins nothing: a tool the manifest does not
// name is blocked as unpinned.
//
//	tools/list answer ─► Pinner.CheckList ─► pinned, unchanged ─► kept
//	                                      ├► new, first_use: pin ─► pinned, kept
//	                                      ├► new, held / not in manifest ─┐
//	                                      └► changed ────────────────────┴► dropped, Pending
//	                                                                         │
//	tools/call ─► Pinner.Allowed ─► refused while Pending ◄─ Approve(exact new hash) / Reject
//
// Pins and pending changes live in a [Store]: memory, SQLite, or Redis,
// shared by several gateways. The [Pinner] keeps a copy in memory so that
// Allowed does not touch the store; on a [Shared] store it reloads the copy
// when another gateway writes, and reads the store for a tool it has no
// entry for.
package pin

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// Source says where a pin came from.
type Source string

// Sources of pins.
const (
	SourceFirstUse Source = "first-use" // the first definition seen (trust on first use)
	SourceManifest Source = "manifest"  // a signed manifest loaded at start
	SourceApproved Source = "approved"  // a person approved this definition
)

// Definition is one tool of a tools/list answer.
type Definition struct {
	Name string // the decoded "name" member; "" when missing or not a string
	Raw  []byte // the tool object exactly as the server sent it
}

// Record is a pin: the definition of one tool of one upstream that warden
// accepts.
type Record struct {
	Upstream string
	Tool     string
	Hash     string // lowercase hex SHA-256 of Definition
	// Definition is the canonical (JCS) definition that was pinned, for
	// diffs. It is nil for a manifest pin whose tool has not been seen yet:
	// a manifest carries hashes only.
	Definition []byte
	Source     Source
	Approver   string    // who approved it; "" for first use and manifests
	At         time.Time // when it was pinned (for a manifest: its issued_at)
}

// Kind says what a change to an upstream's tools is.
type Kind string

// Kinds of changes.
const (
	KindPinned    Kind = "pinned"    // a new tool, pinned on first use (not blocked)
	KindChanged   Kind = "changed"   // a pinned tool's definition changed: blocked
	KindNew       Kind = "new"       // a new tool held for approval (first_use: hold): blocked
	KindUnpinned  Kind = "unpinned"  // a tool the upstream's manifest does not name: blocked
	KindInvalid   Kind = "invalid"   // a tool that cannot be pinned (no name, duplicate, not canonicalizable): blocked
	KindRemoved   Kind = "removed"   // a pinned tool is no longer listed (informational)
	KindUndecided Kind = "undecided" // the store could not be read or written: blocked (fail-secure)
)

// Pending is a definition waiting for a person: a changed tool, a new tool
// held on first use, or a tool a manifest does not name. It is keyed by
// (Upstream, Tool): only the latest definition the server sent waits, and
// only its hash can be approved.
type Pending struct {
	Upstream string
	Tool     string
	Kind     Kind   // KindChanged, KindNew or KindUnpinned
	OldHash  string // the pinned hash; "" when the tool had no pin
	Old      []byte // the pinned canonical definition; nil when unknown
	NewHash  string
	New      []byte // the canonical definition the server sends now
	Seen     time.Time
	// Rejected is set by Reject: the tool stays blocked, and the same
	// definition is not offered for approval again (a different one is).
	Rejected bool
	Decider  string    // who rejected it
	Decided  time.Time // when
}

// Diff returns the line diff of the pinned and the new definition,
// pretty-printed (see [Diff]).
func (p Pending) Diff() string { return Diff(p.Old, p.New) }

// Change is one thing a tools/list answer showed about an upstream's tools.
// Unchanged tools make no Change.
type Change struct {
	Upstream string
	Tool     string
	Kind     Kind
	// Blocked means the tool was dropped from the answer and calls to it
	// are refused until a person approves it.
	Blocked bool
	// Again means the same pending definition was reported before: the
	// change is not new, the tool is still blocked.
	Again   bool
	OldHash string
	NewHash string
	Old     []byte // canonical definitions; nil when unknown
	New     []byte
	Reason  string // one sentence for the log and the audit record
}

// Result is the outcome of checking one tools/list answer.
type Result struct {
	// Allowed are the tools that pass, in the order of the answer.
	Allowed []string
	// Changes are the tools that are new, changed, blocked or removed.
	Changes []Change
	// Err is set when the store failed; the tools it could not decide on
	// are blocked (KindUndecided).
	Err error
}

// Blocked reports whether tool was blocked in r.
func (r Result) Blocked(tool string) bool {
	for _, c := range r.Changes {
		if c.Tool == tool && c.Blocked {
			return true
		}
	}
	return false
}

// Errors.
var (
	// ErrNoPending is returned by Approve and Reject when nothing waits for
	// the tool.
	ErrNoPending = errors.New("pin: no pending definition for that tool")
	// ErrHashMismatch is returned by Approve and Reject when the hash named
	// is not the hash of the definition waiting: the server changed it
	// again, or the approver looked at something else.
	ErrHashMismatch = errors.New("pin: the hash does not match the pending definition")
	// ErrApprover is returned when no approver is named.
	ErrApprover = errors.New("pin: an approver identity is required")
	// ErrClosed is returned by a store after Close.
	ErrClosed = errors.New("pin: store closed")
)

// metaMember is the one member left out of the hash.
const metaMember = "_meta"

// Hash returns the pin of a tool definition (the raw tool object as the
// server sent it) and the canonical bytes it hashed.
//
// Everything the model or the client can see counts: every member of the
// object, at any depth, except the top-level "_meta" member, which MCP
// reserves for protocol metadata that servers and intermediaries may vary
// (trace context, UI hints) without changing what the tool is. A "_meta"
// inside inputSchema or annotations counts like any other member. A member
// name spelled with escapes ("_\u006deta") is the name it decodes to.
//
// The definition must be a JSON object without duplicate member names, in
// valid UTF-8, with no number beyond ±2^53 (zerotrust.Canonicalize): a tool
// that fails this cannot be pinned and is blocked (fail-secure).
func Hash(raw []byte) (hash string, canonical []byte, err error) {
	if err := jsonrpc.Validate(raw, jsonrpc.Limits{}); err != nil {
		return "", nil, fmt.Errorf("tool definition: %w", err)
	}
	obj := []byte{'{'}
	isObject := jsonrpc.Members(raw, func(name string, value []byte) {
		if name == metaMember {
			return
		}
		if len(obj) > 1 {
			obj = append(obj, ',')
		}
		obj = append(obj, jsonrpc.Quote(name)...)
		obj = append(obj, ':')
		obj = append(obj, value...)
	})
	if !isObject {
		return "", nil, errors.New("tool definition is not a JSON object")
	}
	obj = append(obj, '}')
	hash, canonical, err = zerotrust.ParamsHash(obj)
	if err != nil {
		return "", nil, fmt.Errorf("tool definition: %w", err)
	}
	return hash, canonical, nil
}

// ParseTools returns the tools of a tools/list result (one page of it): the
// raw bytes of each element of its "tools" array, and their decoded names.
// The result must be JSON the strict decoder accepted. An element that is
// not an object, or has no string name, comes back with Name "".
func ParseTools(result []byte) ([]Definition, error) {
	tools, ok := jsonrpc.Lookup(result, "tools")
	if !ok {
		return nil, errors.New("tools/list result has no tools member")
	}
	var elems []json.RawMessage // each element's bytes as the upstream sent them
	if err := jsonrpc.Unmarshal(tools, &elems); err != nil {
		return nil, fmt.Errorf("tools/list result: tools is not an array: %w", err)
	}
	defs := make([]Definition, len(elems))
	for i, e := range elems {
		defs[i].Raw = e
		if raw, ok := jsonrpc.Lookup(e, "name"); ok {
			defs[i].Name, _ = jsonrpc.String(raw)
		}
	}
	return defs, nil
}

// isHash reports whether s is 64 lowercase hex digits.
func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
