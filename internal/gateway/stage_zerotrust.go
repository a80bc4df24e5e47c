package gateway

// The zero-trust stage enforces the Zero-Trust Tool Invocation Standard on
// tools/call: a call to a tool that requires it must carry a short-lived
// token bound to the caller, the upstream, the tool and the hash of these
// exact arguments (and, when it was obtained through a session, to that
// session), and usable once.
//
//	token from params._meta["io.agentwarden/token"], or, if none, the one
//	warden issued for a mandate or an approval (the consent stage, P5,
//	stage_approval.go, which runs just before)
//	Check:
//	  ─► zerotrust.Verify: signature, iss/aud, INV-1 sub+upstream+tool and
//	     session, persona, INV-2 time, INV-3 parameters_hash over the
//	     call's arguments
//	  ─► INV-5 DPoP, when the token is bound to a key (cnf.jkt) or RequireDPoP:
//	     the proof in the HTTP DPoP header must be valid for POST on one of
//	     the upstream's URLs, carry ath of this token, and be signed by the
//	     key the token names (a stolen token with the thief's proof fails)
//	  ─► INV-6 client signature, for the tools in Signatures: the client's
//	     pinned key signed this jti, tool and parameters_hash
//	(the revocation stage, P8, stage_revoke.go: jti, subject, session)
//	Commit, once every stage let the call pass:
//	  ─► store.Consume(proof jti, then token jti)   LAST (D4): nobody can burn
//	                          a token they could not use; a store error denies
//	     each with its own deadline (StoreTimeout, store.Guard): past it the
//	     call is refused (store-timeout) and the token counts as used here
//	  ─► epoch: a token that may have been issued before the store's memory
//	     began (store.IssuedBefore: iat < epoch + skew) is refused
//	  ─► forward: arguments replaced by the canonical bytes that were hashed
//	     (D1), warden's _meta key removed, everything else unchanged
//
// Session binding. A token warden issues inside a client session (a
// mandate, an approval by an operator or by elicitation, the authorize API
// named with Mcp-Session-Id) carries session_hash of that session and is
// refused on any other, and once the session closed (its revocation covers
// it). A call without a session id, on stdio or a stateless HTTP request,
// is bound to its connection instead (bindingSession): a stdio gateway
// process serves one connection, so it is one session; a stateless request
// is its own. Tokens issued outside any session (warden token issue, the
// authorize API without Mcp-Session-Id) are bound to none.
//
// The principal a call acts for comes from ZeroTrust.Subject.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
	"github.com/agentwarden/warden/internal/policy"
	"github.com/agentwarden/warden/internal/revoke"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/zerotrust"
	"github.com/agentwarden/warden/internal/zerotrust/dpop"
)

// Members of params._meta in warden's namespace. warden removes every
// io.agentwarden/ member before forwarding: none reaches an upstream.
const (
	// MetaTokenKey carries the invocation token, on every transport.
	MetaTokenKey = "io.agentwarden/token"
	// MetaSignatureKey carries the client's invocation signature (Tier 3).
	MetaSignatureKey = "io.agentwarden/signature"
	metaNamespace    = jsonrpc.WardenNamespace

	// HeaderToken carries the invocation token on streamable HTTP, in place
	// of params._meta; HeaderSignature the client signature. A POST's
	// headers apply to every tools/call it carries. warden never forwards
	// them upstream.
	HeaderToken     = "Warden-Invocation"
	HeaderSignature = "Warden-Invocation-Signature"
)

// ZeroTrust is the "zero-trust" stage.
type ZeroTrust struct {
	Keys  zerotrust.KeySet
	Store store.Store
	// Requires selects the tools that need a token; nil means every tool.
	Requires Permitter
	// Subject returns the authenticated principal of the call. A call with
	// no principal is refused.
	Subject func(c *Call) (string, bool)
	// Audience and Issuer are what tokens must carry; "" means warden's
	// defaults.
	Audience, Issuer string
	// Persona, if set, is the role a token's presenter must hold (step 3a).
	Persona string
	// Skew is the clock tolerance for nbf and exp.
	Skew time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	// RequireDPoP refuses tokens that are not bound to a DPoP key.
	RequireDPoP bool
	// URLs returns the absolute URLs by which a client reaches the call's
	// upstream; a DPoP proof's htu must be one of them. nil means DPoP-bound
	// tokens are refused (there is no HTTP request to bind them to, as on
	// stdio).
	URLs func(c *Call) []*url.URL
	// DPoP configures proof checks (algorithms, iat window, nonce).
	DPoP dpop.Options

	// Signatures selects the tools that also need a client signature by a
	// key pinned for the subject (Tier 3, INV-6); nil means none. These
	// tools need a token whether or not Requires lists them.
	Signatures Permitter
	// ClientKeys returns the public keys pinned for a subject.
	ClientKeys func(sub string) []jose.JSONWebKey

	// Approvals, when set with Signer, holds a call that needs a token but
	// carries none until a person decides (the standard's ad-hoc mode, for
	// unmodified MCP clients). On approval warden, as the platform provider,
	// issues a token bound to the subject, the tool and the exact arguments
	// the person saw, and the call is validated with it like any other. Such
	// a token is not DPoP-bound and carries no client signature.
	Approvals *approval.Queue
	Signer    *zerotrust.KeyRing
	// AdminApproval means an operator can decide on held calls through the
	// admin API; ElicitApproval means the client's user is asked through
	// MCP elicitation when the client declared it. The first decision wins.
	// With neither available for a call, it is refused at once.
	AdminApproval, ElicitApproval bool

	// Mandates are pre-approved invocations (binding mode B): the keys are
	// tool + "\x00" + parameters_hash. A call without a token that matches
	// one gets a token from Signer, with binding_mode "pre-defined".
	Mandates map[string]bool

	// Revocations, if set, is the revocation registry (AASM P8): a token
	// whose jti, subject (issued before a time) or session was revoked is
	// refused before it is consumed. A registry that cannot decide refuses
	// the call.
	Revocations revoke.Registry

	// StoreTimeout is the longest each consumption (the DPoP proof's jti,
	// the token's jti) waits for Store; 0 means store.DefaultTimeout. Past
	// it the call is refused (store-timeout) and the token counts as used
	// on this gateway, whatever the store answers later.
	StoreTimeout time.Duration
}

// undecided remembers, for every ZeroTrust stage of the process, the proof
// and token ids whose consumption timed out: they count as used until they
// expire. One set serves all stages because ids are random and single-use
// everywhere; it bounds the memory per process.
var undecided = store.NewGuard(store.DefaultGuardSize)

// MayBlock reports whether the stage's consent entry can wait for a
// person: the relay then runs each request on its own goroutine.
func (z ZeroTrust) MayBlock() bool { return z.Approvals != nil && z.Signer != nil }

// Name implements Stage.
func (ZeroTrust) Name() string { return stageZeroTrust }

// stageZeroTrust is the zero-trust stage's name, which the consent and
// revocation stages' refusals carry too (docs/errors.md lists their rules
// under it).
const stageZeroTrust = "zero-trust"

// entries are the StageTable entries that z's configuration makes: consent
// (when z can issue tokens), z itself, and revocation (when it has a
// registry). NewPipeline puts them in place of z.
func (z ZeroTrust) entries() []Stage {
	s := make([]Stage, 0, 3)
	if z.Signer != nil && (len(z.Mandates) > 0 || z.MayBlock()) {
		s = append(s, Consent{zt: z})
	}
	s = append(s, z)
	if z.Revocations != nil {
		s = append(s, Revocation{Registry: z.Revocations})
	}
	return s
}

// verifiedToken is what the zero-trust stage's Check established, for the
// revocation stage and its own commit half.
type verifiedToken struct {
	claims  *zerotrust.Claims
	proof   *dpop.Proof      // the DPoP proof, nil when the token is not bound to a key
	held    bool             // warden issued the token in this call (the consent stage)
	session string           // the session the call is bound to (bindingSession)
	forward *jsonrpc.Message // what is sent upstream once the token is consumed
}

// needs reports whether c needs a token, and whether also the client's
// signature: by its tier (from the classify stage), raised by the
// upstream's require_* lists and the security and taint stages' asking for
// approval.
func (z ZeroTrust) needs(c *Call) (need, needSig bool) {
	tier := policy.TierOf(c.Level)
	needSig = tier >= 3
	if !needSig && z.Signatures != nil {
		needSig, _ = z.Signatures.Permits(c.Tool)
	}
	if z.Requires != nil && !needSig && tier == 0 && !c.NeedsApproval {
		if ok, _ := z.Requires.Permits(c.Tool); !ok {
			return false, false
		}
	}
	return true, needSig
}

// subject returns the principal c acts for; false if it has none.
func (z ZeroTrust) subject(c *Call) (string, bool) {
	if z.Subject == nil {
		return "", false
	}
	return z.Subject(c)
}

// Check implements Stage: it verifies the call's token (INV-1..3, 5, 6)
// and keeps it for the revocation stage and Commit.
func (z ZeroTrust) Check(ctx context.Context, c *Call) *Denial {
	if c.Msg.Method != mcp.MethodToolsCall || c.Msg.Kind != jsonrpc.KindRequest {
		return nil
	}
	need, needSig := z.needs(c)
	if !need {
		return nil
	}
	sub, ok := z.subject(c)
	if !ok {
		return &Denial{Rule: deny.RuleNoPrincipal, Reason: "the call has no authenticated principal to check the token's sub against"}
	}
	c.Subject = sub
	session := bindingSession(ctx, c)
	token, d := presented(c, MetaTokenKey, HeaderToken)
	if d != nil {
		return d
	}
	// held: warden issued the token itself, for a mandate or an approval.
	// It never leaves the gateway, so there is no transport to bind it to:
	// Tier 2's DPoP requirement does not apply to it.
	held := token == ""
	if held {
		switch {
		case needSig:
			return &Denial{Rule: deny.RuleTokenMissing, Reason: "tool " + quote(c.Tool) + classSuffix(c) +
				" needs a token and the client's own signature of the invocation (Tier 3); an approval cannot stand in for them"}
		case c.issued == "":
			return &Denial{Rule: deny.RuleTokenMissing,
				Reason: "tool " + quote(c.Tool) + " needs a zero-trust token in params._meta[" + quote(MetaTokenKey) + "]"}
		}
		token = c.issued
	}
	now := time.Now()
	if z.Now != nil {
		now = z.Now()
	}
	// The call's one hashing (Call.Hashed): the canonical form is both
	// what the token must bind and what is forwarded.
	hash, canonical, err := c.Hashed()
	if err != nil {
		return &Denial{Rule: deny.RuleINV3, Reason: "INV-3 parameter integrity: the arguments cannot be hashed: " + err.Error()}
	}
	c.ParamsHash = hash
	claims, verr := zerotrust.Verify(z.Keys, token, zerotrust.Expect{
		Sub: sub, Upstream: c.Upstream, Tool: c.Tool, Session: session,
		Arguments: c.Arguments, ParametersHash: hash, SchemaHash: c.SchemaHash(),
		Aud: z.Audience, Iss: z.Issuer, Persona: z.Persona, Now: now, Skew: z.Skew,
	})
	if verr != nil {
		return verifyDenial(verr)
	}
	c.JTI = claims.ID
	var proof *dpop.Proof
	if claims.Confirmation != nil || (!held && (z.RequireDPoP || policy.TierOf(c.Level) >= 2)) {
		var d *Denial
		if proof, d = z.checkDPoP(c, token, claims); d != nil {
			return d
		}
	}
	if needSig {
		sig, d := presented(c, MetaSignatureKey, HeaderSignature)
		if d != nil {
			return d
		}
		var pinned []jose.JSONWebKey
		if z.ClientKeys != nil {
			pinned = z.ClientKeys(sub)
		}
		inv := zerotrust.Invocation{JTI: claims.ID, Tool: c.Tool, ParametersHash: hash}
		if verr := zerotrust.VerifyInvocation(sig, pinned, inv); verr != nil {
			return verifyDenial(verr)
		}
	}
	// Build what will be forwarded before consuming, so that nothing after
	// the consume can fail.
	c.verified = &verifiedToken{claims: claims, proof: proof, held: held, session: session,
		forward: canonicalCall(c.Msg, canonical)}
	return nil
}

// Commit implements CommitStage: the token Check verified is consumed
// (INV-4), the last step of all, and c.Forward set to the call with
// canonical arguments.
func (z ZeroTrust) Commit(ctx context.Context, c *Call) *Denial {
	v := c.verified
	if v == nil {
		return nil
	}
	if d := z.consume(ctx, v.claims, v.proof, v.held); d != nil {
		return d
	}
	c.Forward = v.forward
	return nil
}

// consume is the last step: the proof's jti, then the token's, each within
// StoreTimeout. An undecided store denies; so does a token the store's
// epoch cannot vouch for, unless held: warden minted that one in this very
// call, with a fresh random jti, so no lost state can have seen it.
func (z ZeroTrust) consume(ctx context.Context, claims *zerotrust.Claims, proof *dpop.Proof, held bool) *Denial {
	expires := time.Unix(claims.Expiry, 0).Add(z.Skew)
	if proof != nil {
		window := z.DPoP.IATWindow
		if window <= 0 {
			window = dpop.DefaultIATWindow
		}
		fresh, err := undecided.Consume(ctx, z.Store, store.NSProof, proof.JTI, proof.IAT.Add(2*window), z.StoreTimeout)
		switch {
		case errors.Is(err, store.ErrTimeout):
			// The proof's fate is unknown, and so the token's: a proof
			// goes with one token, and the call is refused.
			undecided.Remember(store.NSToken, claims.ID, expires)
		case errors.Is(err, store.ErrUndecided):
			err, fresh = nil, false // it counts as used
		}
		if err != nil {
			return storeDenial("the DPoP proof", err)
		}
		if !fresh {
			return &Denial{Rule: deny.RuleINV5, Invariant: "INV-5", Step: "7", Reason: "INV-5 transport binding: this DPoP proof was already used (step 7)"}
		}
	}
	fresh, epoch, err := undecided.ConsumeSince(ctx, z.Store, store.NSToken, claims.ID, expires, z.StoreTimeout)
	if err != nil {
		return storeDenial("the token", err)
	}
	if !held && store.IssuedBefore(claims.IssuedAt, epoch, z.Skew) {
		// The store's memory may begin after the token was issued (a
		// restart of a memory store, a Redis that lost its data), taking
		// into account that iat has whole seconds and that the issuer's
		// clock may run up to the skew ahead: it may have been used in
		// the state the store lost, and nobody can tell.
		return &Denial{Rule: deny.RuleEpoch, Invariant: "INV-4", Step: "6", Reason: "INV-4 atomic consumption: the token may have been issued before the replay store's epoch (" +
			epoch.UTC().Format(time.RFC3339Nano) + ", allowing " + z.Skew.String() + " of clock skew), so its single use cannot be proven; get a new one (step 6)"}
	}
	if !fresh {
		return &Denial{Rule: deny.RuleINV4, Invariant: "INV-4", Step: "6", Reason: "INV-4 atomic consumption: this token was already used (step 6)"}
	}
	return nil
}

// storeDenial refuses a call whose consumption of what (a proof, a token)
// the replay store could not decide.
func storeDenial(what string, err error) *Denial {
	switch {
	case errors.Is(err, store.ErrUndecided):
		return &Denial{Rule: deny.RuleINV4, Invariant: "INV-4", Step: "6", Reason: "INV-4 atomic consumption: this token counts as used: " +
			"an earlier use of it on this gateway got no answer from the replay store in time (step 6)"}
	case errors.Is(err, store.ErrTimeout):
		return &Denial{Rule: deny.RuleStoreTimeout, Reason: "the replay store did not answer in time for " + what +
			", so the call is refused and the token counts as used", Cause: err.Error()}
	case errors.Is(err, store.ErrBusy):
		return &Denial{Rule: deny.RuleStoreTimeout, Reason: "the replay store has left too many consumptions unanswered, so the call is refused without asking it", Cause: err.Error()}
	}
	return &Denial{Rule: deny.RuleStore, Reason: "the replay store could not decide, so the call is refused", Cause: err.Error()}
}

// presented returns what the client sent in params._meta[metaKey] or in the
// HTTP header; "" if neither. Two different values, or the header twice,
// are refused: warden will not guess which one the client meant.
func presented(c *Call, metaKey, header string) (string, *Denial) {
	raw, _ := jsonrpc.Lookup(c.Msg.Params, "_meta", metaKey)
	meta, _ := jsonrpc.String(raw)
	values := http.Header(c.Msg.Header).Values(header)
	switch {
	case len(values) > 1:
		return "", &Denial{Rule: deny.RuleAmbiguousCredential, Reason: "the request has more than one " + header + " header"}
	case len(values) == 0:
		return meta, nil
	case meta != "" && meta != values[0]:
		return "", &Denial{Rule: deny.RuleAmbiguousCredential,
			Reason: "the " + header + " header and params._meta[" + quote(metaKey) + "] carry different values"}
	}
	return values[0], nil
}

// classSuffix describes c's classification for a refusal, "" if none.
func classSuffix(c *Call) string {
	if c.Level == 0 {
		return ""
	}
	return fmt.Sprintf(" (classification %d by rule %s)", c.Level, quote(c.ClassRule))
}

// tierReason says why a classified call needs DPoP, "" if not classified.
func tierReason(c *Call) string {
	if t := policy.TierOf(c.Level); t >= 2 {
		return fmt.Sprintf(" for Tier %d%s", t, classSuffix(c))
	}
	return ""
}

// verifyDenial turns a token verification failure into a denial that names
// the invariant and the step.
func verifyDenial(v *zerotrust.VerifyError) *Denial {
	d := &Denial{Rule: deny.Rule(v.Invariant), Reason: v.Error(), Step: v.Step}
	if strings.HasPrefix(v.Invariant, "INV-") {
		d.Invariant = v.Invariant
	}
	return d
}

// checkDPoP is INV-5: a valid proof, for this token, by the token's key.
func (z ZeroTrust) checkDPoP(c *Call, token string, claims *zerotrust.Claims) (*dpop.Proof, *Denial) {
	deny := func(format string, args ...any) (*dpop.Proof, *Denial) {
		return nil, &Denial{Rule: deny.RuleINV5, Invariant: "INV-5", Step: "7", Reason: "INV-5 transport binding: " + fmt.Sprintf(format, args...) + " (step 7)"}
	}
	if claims.Confirmation == nil || claims.Confirmation.JKT == "" {
		return deny("DPoP is required%s, but the token is not bound to a key (no cnf.jkt)", tierReason(c))
	}
	if z.URLs == nil {
		return deny("a DPoP-bound token needs an HTTP request to bind to; this transport has none")
	}
	h := http.Header(c.Msg.Header)
	if len(h.Values(dpop.HeaderName)) == 0 {
		return deny("the token is bound to a key, but the request has no DPoP proof header")
	}
	var proof *dpop.Proof
	var perr *dpop.Error
	for _, u := range z.URLs(c) {
		proof, perr = dpop.Verify(h, dpop.Request{Method: http.MethodPost, URL: u, AccessToken: token}, z.DPoP)
		if perr == nil || perr.Rule != dpop.RuleHTU {
			break
		}
	}
	if perr != nil {
		return deny("%s", perr.Error())
	}
	if !proof.BoundTo(claims.Confirmation.JKT) {
		return deny("the proof is signed by another key than the one the token is bound to")
	}
	return proof, nil
}

// canonicalCall rebuilds a tools/call so that its arguments are canonical
// (their RFC 8785 form) and its _meta lacks warden's token. Every other member of
// params keeps its exact bytes and order.
func canonicalCall(msg *jsonrpc.Message, canonical []byte) *jsonrpc.Message {
	params := []byte{'{'}
	first := true
	add := func(name string, value []byte) {
		if !first {
			params = append(params, ',')
		}
		first = false
		params = appendJSONString(params, name)
		params = append(params, ':')
		params = append(params, value...)
	}
	sawArgs := false
	jsonrpc.Members(msg.Params, func(name string, value []byte) {
		switch name {
		case "arguments":
			sawArgs = true
			add(name, canonical)
		case "_meta":
			if meta := jsonrpc.WithoutPrefixed(value, metaNamespace); meta != nil {
				add(name, meta)
			}
		default:
			add(name, value)
		}
	})
	if !sawArgs {
		add("arguments", canonical)
	}
	params = append(params, '}')
	return jsonrpc.NewRequest(msg.ID, msg.Method, params)
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	return append(b, jsonrpc.Quote(s)...)
}
