package gateway

// The authorization API: how a client obtains a token from warden before it
// calls a tool (the standard's client-presented mode, with warden as the
// platform provider that issues tokens).
//
//	POST /warden/v1/authorize {"upstream","tool","arguments"}  [DPoP: proof]
//	                                       [Mcp-Session-Id: the client's session]
//	  ─► Host/Origin check, strict JSON (no duplicate keys, limits)
//	  ─► the upstream's stages before zero-trust (tool policy, classify)
//	  ─► ZeroTrust.Authorize: a mandate issues at once; otherwise an
//	     operator approves the exact arguments (the admin API, the console)
//	  ─► 200 {"token", "jti", "parameters_hash", "expires_at", ...}
//
// The token names the upstream (claim upstream): it is refused on any
// other. With Mcp-Session-Id, it is bound to that session of the upstream
// (session_hash) and recorded with it in the revocation registry: refused
// on any other session, and once the session closed. Without, it is bound
// to none, like one from warden token issue (a stateless client has no
// session to name). Naming a session that is not the caller's gains
// nothing: the token still needs the caller's own principal (sub), so it
// could only become unusable.
//
// With a DPoP proof (for POST on this endpoint, no ath), the token is bound
// to the proof's key (cnf.jkt): the client must then prove possession of the
// key on every call, so the token is useless to anyone who steals it. Tier 2
// and 3 calls need that. The proof is used once, like any other.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
	"github.com/agentwarden/warden/internal/policy"
	"github.com/agentwarden/warden/internal/revoke"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/transport"
	"github.com/agentwarden/warden/internal/zerotrust"
	"github.com/agentwarden/warden/internal/zerotrust/dpop"
)

// AuthorizePath is where the listener serves the authorization API.
const AuthorizePath = "/warden/v1/authorize"

// authorizer is a stage that can issue a token for a call without running it.
type authorizer interface {
	Authorize(ctx context.Context, c *Call, req TokenRequest) (string, *zerotrust.Claims, *Denial)
}

// TokenRequest is what a client asks of the token it requests.
type TokenRequest struct {
	// JKT, if not "", binds the token to that DPoP key (cnf.jkt).
	JKT string
	// Hybrid asks for binding mode C: the token also binds the tool's
	// inputSchema as the upstream declares it now, so a changed tool voids
	// it. The gateway must have seen the upstream's tools/list.
	Hybrid bool
}

// Authorize runs the stages before the zero-trust stage on c (so that no
// token is issued for a call that policy refuses anyway), then asks the
// zero-trust stage for a token bound to c, and to the DPoP key jkt if not "".
func (p *Pipeline) Authorize(ctx context.Context, c *Call, req TokenRequest) (string, *zerotrust.Claims, *Denial) {
	for _, s := range p.stages {
		if a, ok := s.(authorizer); ok {
			token, claims, d := a.Authorize(ctx, c, req)
			if d != nil && d.Stage == "" {
				d.Stage = s.Name()
			}
			return token, claims, d
		}
		if d := s.Check(ctx, c); d != nil {
			if d.Stage == "" {
				d.Stage = s.Name()
			}
			return "", nil, d
		}
	}
	return "", nil, &Denial{Stage: "authorize", Rule: deny.RuleNoZeroTrust, Code: jsonrpc.CodeInvalidParams,
		Reason: "upstream " + quote(c.Upstream) + " does not use zero-trust tokens"}
}

// Authorize issues a token for c without running it: at once for a
// mandate, otherwise once an operator approves the exact arguments. jkt, if
// not "", binds the token to that DPoP key; Tier 2 and 3 calls, and
// RequireDPoP, need one.
func (z ZeroTrust) Authorize(ctx context.Context, c *Call, req TokenRequest) (string, *zerotrust.Claims, *Denial) {
	jkt := req.JKT
	if z.Signer == nil {
		return "", nil, &Denial{Rule: deny.RuleIssue, Reason: "this gateway does not issue tokens"}
	}
	sub, ok := "", false
	if z.Subject != nil {
		sub, ok = z.Subject(c)
	}
	if !ok {
		return "", nil, &Denial{Rule: deny.RuleNoPrincipal, Reason: "the request has no authenticated principal to issue a token for"}
	}
	hash, canonical, err := c.Hashed()
	if err != nil {
		return "", nil, &Denial{Rule: deny.RuleINV3, Invariant: "INV-3", Code: jsonrpc.CodeInvalidParams,
			Reason: "INV-3 parameter integrity: the arguments cannot be hashed: " + err.Error()}
	}
	if jkt == "" && (z.RequireDPoP || policy.TierOf(c.Level) >= 2) {
		return "", nil, &Denial{Rule: deny.RuleINV5, Invariant: "INV-5",
			Reason: "INV-5 transport binding: a token for this call must be DPoP-bound" + tierReason(c) +
				"; send a DPoP proof for this request, signed by the key the client will prove on each call"}
	}
	mode, schemaHash := zerotrust.BindingAdHoc, ""
	if req.Hybrid {
		if schemaHash = c.SchemaHash(); schemaHash == "" {
			return "", nil, &Denial{Rule: deny.RuleSchemaUnknown, Code: jsonrpc.CodeInvalidParams,
				Reason: "a hybrid token binds the tool's inputSchema, and the gateway has not seen tool " + quote(c.Tool) + " in upstream " + quote(c.Upstream) + "'s tools/list"}
		}
		mode = zerotrust.BindingHybrid
	}
	switch {
	case z.Mandates[MandateKey(c.Tool, hash)] && !req.Hybrid:
		mode = zerotrust.BindingPreDefined
	case z.Approvals != nil && z.AdminApproval:
		if d := z.approve(ctx, c, sub, hash, canonical); d != nil {
			return "", nil, d
		}
	default:
		return "", nil, &Denial{Rule: deny.RuleApprovalUnavailable,
			Reason: "no mandate covers this call, and this gateway has no operator approval (hold_for_approval with the admin channel)"}
	}
	token, claims, err := zerotrust.Issue(z.Signer, zerotrust.IssueRequest{Sub: sub, Upstream: c.Upstream, Tool: c.Tool,
		Session: c.Session, Arguments: canonical, ParametersHash: hash, Aud: z.Audience, Iss: z.Issuer, Persona: z.Persona,
		Classification: c.Level, DPoPJKT: jkt, BindingMode: mode, SchemaHash: schemaHash})
	if err != nil {
		return "", nil, &Denial{Rule: deny.RuleIssue, Reason: "warden could not issue the token", Cause: err.Error()}
	}
	if c.Session != "" && z.Revocations != nil {
		// The session's end revokes the token wherever it is presented,
		// on every gateway sharing the registry. Unrecorded, it is not
		// handed out.
		until := time.Unix(claims.Expiry, 0).Add(z.Skew)
		if err := z.Revocations.Bind(ctx, c.Session, claims.ID, until); err != nil {
			return "", nil, &Denial{Rule: deny.RuleRevocationStore, Reason: "P8 credential revocation: the token could not be bound to its session in the revocation registry, so it is not issued", Cause: err.Error()}
		}
	}
	return token, &claims, nil
}

// zeroTrust returns the pipeline's zero-trust stage, if it has one.
func (p *Pipeline) zeroTrust() (ZeroTrust, bool) {
	for _, s := range p.stages {
		if z, ok := s.(ZeroTrust); ok {
			return z, true
		}
	}
	return ZeroTrust{}, false
}

// authorizeRequest is the body of POST /warden/v1/authorize.
type authorizeRequest struct {
	Upstream  string          `json:"upstream"` // "" means the default upstream
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// BindingMode "hybrid" asks for binding mode C; "" is decided by warden
	// (pre-defined for a mandate, else ad-hoc).
	BindingMode string `json:"binding_mode"`
}

// AuthorizeResponse is the answer to an authorized request.
type AuthorizeResponse struct {
	Token          string `json:"token"`
	JTI            string `json:"jti"`
	ExpiresAt      string `json:"expires_at"` // RFC 3339
	ParametersHash string `json:"parameters_hash"`
	BindingMode    string `json:"binding_mode"`
	Classification int    `json:"classification,omitempty"`
	Tier           int    `json:"tier,omitempty"`
	JKT            string `json:"cnf_jkt,omitempty"`
	SchemaHash     string `json:"schema_hash,omitempty"`
	Approver       string `json:"approver,omitempty"`
	// Header names where to present the token: the HTTP header, or
	// params._meta[Meta] of the tools/call.
	Header string `json:"header"`
	Meta   string `json:"meta"`
}

// authorizeHandler serves the authorization API.
func (g *Gateway) authorizeHandler(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, d *Denial) { writeAPIError(w, status, d.Error()) }
	bad := func(rule deny.Rule, reason string) {
		fail(http.StatusBadRequest, &Denial{Stage: "authorize", Rule: rule, Code: jsonrpc.CodeInvalidRequest, Reason: reason})
	}
	if ln := g.listeners[g.anyUpstream()]; ln != nil {
		if rule, msg := ln.CheckRebinding(r); rule != "" {
			fail(http.StatusForbidden, &Denial{Stage: "listener", Rule: deny.Rule(rule), Reason: msg})
			return
		}
	}
	var principal string
	if g.opts.Authenticate != nil {
		var ref *transport.AuthRefusal
		if principal, ref = g.opts.Authenticate(r); ref != nil {
			if ref.Challenge != "" {
				w.Header().Set("WWW-Authenticate", ref.Challenge)
			}
			fail(ref.Status, &Denial{Stage: "auth", Rule: deny.Rule(ref.Rule), Reason: ref.Message})
			return
		}
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		fail(http.StatusUnsupportedMediaType, &Denial{Stage: "authorize", Rule: deny.RuleContentType, Code: jsonrpc.CodeInvalidRequest,
			Reason: "the body must be application/json"})
		return
	}
	maxBytes := g.opts.Limits.MaxBytes
	if maxBytes <= 0 {
		maxBytes = jsonrpc.DefaultMaxBytes
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(maxBytes)+1))
	if err != nil {
		bad(deny.RuleBody, "could not read the body: "+err.Error())
		return
	}
	// The strict decoder first: encoding/json would take the last of two
	// duplicate "arguments", and a different parser the first.
	if err := jsonrpc.Validate(body, g.opts.Limits); err != nil {
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) {
			rpcErr = jsonrpc.Detail{Stage: "authorize", Rule: string(deny.RuleJSON)}.Errorf(jsonrpc.CodeParseError, err.Error())
		}
		writeAPIError(w, http.StatusBadRequest, rpcErr)
		return
	}
	// Exact member names: encoding/json would take "Tool" (or "toolſ")
	// for the tool, which the approver would then be shown as asked.
	var req authorizeRequest
	if err := (jsonrpc.UnmarshalOptions{Limits: g.opts.Limits, RejectUnknownMembers: true}).Unmarshal(body, &req); err != nil {
		bad(deny.RuleJSON, "the body must be {\"upstream\", \"tool\", \"arguments\"}: "+err.Error())
		return
	}
	if req.Tool == "" {
		bad(deny.RuleTool, "tool is required")
		return
	}
	if req.BindingMode != "" && req.BindingMode != zerotrust.BindingHybrid {
		bad(deny.RuleBindingMode, "binding_mode may only be \"hybrid\" (warden chooses ad-hoc or pre-defined itself)")
		return
	}
	if req.Upstream == "" {
		req.Upstream = g.opts.Default
	}
	u := g.upstreams[req.Upstream]
	if u == nil {
		fail(http.StatusNotFound, &Denial{Stage: "authorize", Rule: deny.RuleUpstream, Code: jsonrpc.CodeInvalidParams,
			Reason: "no upstream " + quote(req.Upstream)})
		return
	}
	session, d := authorizeSession(r)
	if d != nil {
		fail(http.StatusBadRequest, d)
		return
	}
	z, _ := u.Pipeline.zeroTrust()
	jkt, d := g.authorizeProof(r, z.StoreTimeout)
	if d != nil {
		if d.Cause != "" {
			g.log.Warn("token refused", "upstream", u.Name, "tool", req.Tool, "stage", d.Stage, "rule", d.Rule, "cause", d.Cause)
		}
		fail(http.StatusUnauthorized, d)
		return
	}
	params := append([]byte(`{"name":`), jsonrpc.Quote(req.Tool)...)
	if len(req.Arguments) > 0 {
		params = append(append(params, `,"arguments":`...), req.Arguments...)
	}
	msg := jsonrpc.NewRequest(jsonrpc.IntID(0), mcp.MethodToolsCall, append(params, '}'))
	c, d := newCall(msg, u.Name, session)
	if d == nil {
		c.tools, c.Principal = u.tools.info(), principal
		var token string
		var claims *zerotrust.Claims
		treq := TokenRequest{JKT: jkt, Hybrid: req.BindingMode == zerotrust.BindingHybrid}
		if token, claims, d = u.Pipeline.Authorize(r.Context(), c, treq); d == nil {
			g.log.Info("token issued", "upstream", u.Name, "tool", c.Tool, "jti", claims.ID, "approver", c.Approver)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			_ = json.NewEncoder(w).Encode(AuthorizeResponse{
				Token: token, JTI: claims.ID, ExpiresAt: time.Unix(claims.Expiry, 0).UTC().Format(time.RFC3339),
				ParametersHash: claims.ParametersHash, BindingMode: claims.BindingMode,
				Classification: c.Level, Tier: policy.TierOf(c.Level), JKT: jkt, Approver: c.Approver, SchemaHash: claims.SchemaHash,
				Header: HeaderToken, Meta: MetaTokenKey,
			})
			return
		}
	}
	g.log.Info("token refused", "upstream", u.Name, "tool", req.Tool, "stage", d.Stage, "rule", d.Rule, "cause", d.Cause)
	fail(http.StatusForbidden, d)
}

// writeAPIError writes {"error": e} with its data as JSON, as in a
// JSON-RPC error response.
func writeAPIError(w http.ResponseWriter, status int, e *jsonrpc.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	body := append([]byte(`{"error":{"code":`), strconv.FormatInt(e.Code, 10)...)
	body = append(append(body, `,"message":`...), jsonrpc.Quote(e.Message)...)
	if len(e.Data) > 0 {
		body = append(append(body, `,"data":`...), e.Data...)
	}
	_, _ = w.Write(append(body, "}}\n"...))
}

// authorizeSession returns the client session an authorize request names
// in Mcp-Session-Id, "" for none. A session id is visible ASCII (MCP,
// streamable HTTP); two headers are refused, as warden will not guess.
func authorizeSession(r *http.Request) (string, *Denial) {
	values := r.Header.Values(mcp.HeaderSessionID)
	bad := func(reason string) (string, *Denial) {
		return "", &Denial{Stage: "authorize", Rule: deny.RuleSession, Code: jsonrpc.CodeInvalidRequest, Reason: reason}
	}
	switch {
	case len(values) == 0:
		return "", nil
	case len(values) > 1:
		return bad("the request has more than one " + mcp.HeaderSessionID + " header")
	case values[0] == "" || len(values[0]) > revoke.MaxIDLen:
		return bad(mcp.HeaderSessionID + " must name a session")
	}
	for i := 0; i < len(values[0]); i++ {
		if b := values[0][i]; b < 0x21 || b > 0x7e {
			return bad(mcp.HeaderSessionID + " may only contain visible ASCII characters")
		}
	}
	return values[0], nil
}

// authorizeProof checks the request's DPoP proof, if any, and returns the
// thumbprint of its key ("" without a proof). The proof is consumed, within
// timeout (0: store.DefaultTimeout).
func (g *Gateway) authorizeProof(r *http.Request, timeout time.Duration) (string, *Denial) {
	if len(r.Header.Values(dpop.HeaderName)) == 0 {
		return "", nil
	}
	deny := func(format string, args ...any) (string, *Denial) {
		return "", &Denial{Stage: "authorize", Rule: deny.RuleINV5, Invariant: "INV-5", Reason: "INV-5 transport binding: " + fmt.Sprintf(format, args...)}
	}
	if g.opts.AuthorizeURL == nil || g.opts.ProofStore == nil {
		return deny("this gateway does not bind tokens to DPoP keys")
	}
	proof, perr := dpop.Verify(r.Header, dpop.Request{Method: http.MethodPost, URL: g.opts.AuthorizeURL}, dpop.Options{})
	if perr != nil {
		return deny("%s", perr.Error())
	}
	fresh, err := undecided.Consume(r.Context(), g.opts.ProofStore, store.NSProof, proof.JTI, proof.IAT.Add(2*dpop.DefaultIATWindow), timeout)
	if err != nil {
		_, d := deny("the replay store could not decide")
		d.Cause = err.Error()
		return "", d
	}
	if !fresh {
		return deny("this DPoP proof was already used")
	}
	return proof.JKT, nil
}

// anyUpstream names an upstream whose listener options (Host and Origin
// checks) the API shares; they are the same for all.
func (g *Gateway) anyUpstream() string {
	if g.opts.Default != "" {
		return g.opts.Default
	}
	return g.opts.Upstreams[0].Name
}

// authorizeURL is the absolute URL of the authorization API under base.
func authorizeURL(base string) *url.URL {
	u, err := url.Parse(base + AuthorizePath)
	if err != nil {
		return nil
	}
	return u
}
