package a2agw

// Agent card attestation (AASM P2 for A2A).
//
//	upstream card ─► strict JSON (duplicates, UTF-8, depth, size)
//	              ─► signatures: A2A 1.0 §8.4, a JWS over JCS(card − "signatures"),
//	                 verified with Options.CardKeys (a signed card that no trusted
//	                 key verifies is refused: a forged signature is never ignored)
//	              ─► pin: hex SHA-256 of the same canonical bytes; the first card
//	                 seen is pinned, a different one is refused until ApproveCard
//	              ─► rewrite: every JSON-RPC URL points at the gateway; other
//	                 interfaces are dropped; upstream signatures removed (they no
//	                 longer cover the card), the gateway's own added with CardSigner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/gowebpki/jcs"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// Well-known paths of the agent card: A2A 1.0 and the legacy (0.2) name.
const (
	CardPath       = "/.well-known/agent-card.json"
	LegacyCardPath = "/.well-known/agent.json"
)

// maxCardBytes bounds an agent card.
const maxCardBytes = 256 << 10

// cardAlgs are the JWS algorithms accepted on card signatures.
var cardAlgs = []jose.SignatureAlgorithm{jose.EdDSA, jose.ES256, jose.ES384, jose.RS256, jose.PS256}

// cardSignature is one entry of the card's "signatures": a JWS in the
// flattened JSON form, with the payload detached.
type cardSignature struct {
	Protected string          `json:"protected"`
	Signature string          `json:"signature"`
	Header    json.RawMessage `json:"header,omitempty"`
}

// splitCard validates card strictly and returns the card without its
// "signatures" member (re-assembled from the raw members, in order) and
// the raw value of "signatures" (nil when absent).
func splitCard(card []byte) (content, sigs []byte, err error) {
	if len(card) > maxCardBytes {
		return nil, nil, fmt.Errorf("card larger than %d bytes", maxCardBytes)
	}
	if err := jsonrpc.Validate(card, jsonrpc.Limits{MaxBytes: maxCardBytes}); err != nil {
		return nil, nil, err
	}
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	ok := jsonrpc.Members(card, func(name string, raw []byte) {
		if name == "signatures" {
			sigs = raw
			return
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.Write(jsonrpc.Quote(name))
		b.WriteByte(':')
		b.Write(raw)
	})
	if !ok {
		return nil, nil, errors.New("the agent card is not a JSON object")
	}
	b.WriteByte('}')
	return b.Bytes(), sigs, nil
}

// CanonicalCard returns the bytes an agent card signature covers and its
// pin hashes: the RFC 8785 (JCS) form of the card without "signatures".
func CanonicalCard(card []byte) ([]byte, error) {
	content, _, err := splitCard(card)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(content)
}

// CardHash is the pin of an agent card: the lowercase hex SHA-256 of
// CanonicalCard.
func CardHash(card []byte) (string, error) {
	c, err := CanonicalCard(card)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

// errUnsigned is VerifyCard's answer for a card without signatures.
var errUnsigned = errors.New("the agent card is not signed")

// VerifyCard checks the signatures of an agent card with the trusted keys.
// It returns the kid (or "" if the key has none) of the first signature
// that a trusted key verifies, errUnsigned when the card has none, and an
// error when it has some but no trusted key verifies any of them.
func VerifyCard(card []byte, keys []jose.JSONWebKey) (kid string, err error) {
	content, rawSigs, err := splitCard(card)
	if err != nil {
		return "", err
	}
	if rawSigs == nil {
		return "", errUnsigned
	}
	var sigs []cardSignature
	if err := (jsonrpc.UnmarshalOptions{RejectUnknownMembers: true}).Unmarshal(rawSigs, &sigs); err != nil {
		return "", fmt.Errorf(`"signatures" must be a list of {protected, signature, header?}: %v`, err)
	}
	if len(sigs) == 0 {
		return "", errUnsigned
	}
	canonical, err := jcs.Transform(content)
	if err != nil {
		return "", fmt.Errorf("canonicalizing the card: %v", err)
	}
	if len(keys) == 0 {
		return "", errors.New("the agent card is signed, and no trusted card key is configured to verify it")
	}
	for _, s := range sigs {
		skid, err := checkCardHeader(s.Protected)
		if err != nil {
			continue
		}
		jws, err := jose.ParseDetached(s.Protected+".."+s.Signature, canonical, cardAlgs)
		if err != nil {
			continue
		}
		for _, k := range keys {
			if skid != "" && k.KeyID != "" && k.KeyID != skid {
				continue
			}
			if _, err := jws.Verify(k.Public().Key); err == nil {
				return k.KeyID, nil
			}
		}
	}
	return "", errors.New("no signature of the agent card verifies with a trusted key")
}

// checkCardHeader reads a signature's protected header: strict JSON, an
// accepted alg, no crit (no extension is understood) and no b64 (the
// payload is always base64url-encoded). Key references in it (jku, jwk,
// x5u, x5c) are never followed: only configured keys verify.
func checkCardHeader(protected string) (kid string, err error) {
	header, err := b64.DecodeString(protected)
	if err != nil {
		return "", errors.New("protected header is not base64url")
	}
	if err := jsonrpc.Validate(header, jsonrpc.Limits{MaxBytes: 8 << 10, MaxDepth: 4}); err != nil {
		return "", err
	}
	var alg string
	var bad error
	if !jsonrpc.Members(header, func(name string, raw []byte) {
		switch name {
		case "crit", "b64":
			bad = fmt.Errorf("header member %q is not supported", name)
		case "alg":
			alg, _ = jsonrpc.String(raw)
		case "kid":
			kid, _ = jsonrpc.String(raw)
		}
	}) {
		return "", errors.New("protected header is not an object")
	}
	if bad != nil {
		return "", bad
	}
	for _, a := range cardAlgs {
		if string(a) == alg {
			return kid, nil
		}
	}
	return "", fmt.Errorf("alg %q is not accepted", alg)
}

// SignCard returns card, in JCS form, with its "signatures" replaced by one
// signature of key (A2A 1.0 §8.4: JWS over the canonical card without
// signatures, payload detached). key.Algorithm names the JWS algorithm
// (default EdDSA) and key.KeyID becomes the kid.
func SignCard(card []byte, key *jose.JSONWebKey) ([]byte, error) {
	canonical, err := CanonicalCard(card)
	if err != nil {
		return nil, err
	}
	alg := jose.SignatureAlgorithm(key.Algorithm)
	if alg == "" {
		alg = jose.EdDSA
	}
	opts := &jose.SignerOptions{}
	if key.KeyID != "" {
		opts = opts.WithHeader(jose.HeaderKey("kid"), key.KeyID)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key.Key}, opts)
	if err != nil {
		return nil, err
	}
	jws, err := signer.Sign(canonical)
	if err != nil {
		return nil, err
	}
	detached, err := jws.DetachedCompactSerialize()
	if err != nil {
		return nil, err
	}
	protected, signature, _ := strings.Cut(detached, "..")
	sig, _ := json.Marshal([]cardSignature{{Protected: protected, Signature: signature}})
	var b bytes.Buffer
	b.Write(canonical[:len(canonical)-1]) // canonical is an object: "{...}"
	if len(canonical) > 2 {
		b.WriteByte(',')
	}
	b.WriteString(`"signatures":`)
	b.Write(sig)
	b.WriteByte('}')
	return jcs.Transform(b.Bytes())
}

// rewriteCard returns the card clients see: its JSON-RPC interfaces (1.0
// supportedInterfaces, 0.3 url and additionalInterfaces) point at
// publicURL, interfaces of other bindings are dropped (the gateway relays
// JSON-RPC only, and a client must not bypass it), and upstream signatures
// are removed. The result is in JCS form.
func rewriteCard(card []byte, publicURL string) ([]byte, error) {
	content, _, err := splitCard(card)
	if err != nil {
		return nil, err
	}
	var m map[string]any // numbers keep their text through the rewrite
	if err := (jsonrpc.UnmarshalOptions{UseNumber: true}).Unmarshal(content, &m); err != nil {
		return nil, err
	}
	version := "1.0"
	if list, ok := m["supportedInterfaces"].([]any); ok {
		var kept []any
		for _, it := range list {
			iface, ok := it.(map[string]any)
			if !ok {
				continue
			}
			if v, ok := iface["protocolVersion"].(string); ok && v != "" {
				version = v
			}
			if iface["protocolBinding"] != "JSONRPC" {
				continue
			}
			iface["url"] = publicURL
			kept = append(kept, iface)
		}
		if len(kept) == 0 {
			kept = []any{map[string]any{"url": publicURL, "protocolBinding": "JSONRPC", "protocolVersion": version}}
		}
		m["supportedInterfaces"] = kept
	}
	if _, ok := m["url"]; ok {
		m["url"] = publicURL
		m["preferredTransport"] = "JSONRPC"
	}
	if list, ok := m["additionalInterfaces"].([]any); ok {
		var kept []any
		for _, it := range list {
			if iface, ok := it.(map[string]any); ok && iface["transport"] == "JSONRPC" {
				iface["url"] = publicURL
				kept = append(kept, iface)
			}
		}
		if kept == nil {
			delete(m, "additionalInterfaces")
		} else {
			m["additionalInterfaces"] = kept
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(out)
}

// fetchCard gets the upstream's card: Options.CardURL, or the well-known
// path on the upstream's origin, falling back to the legacy path on 404.
func (h *Handler) fetchCard(ctx context.Context) ([]byte, error) {
	up, err := url.Parse(h.opts.Upstream)
	if err != nil {
		return nil, err
	}
	origin := up.Scheme + "://" + up.Host
	urls := []string{origin + CardPath, origin + LegacyCardPath}
	if h.opts.CardURL != "" {
		urls = []string{h.opts.CardURL}
	}
	var lastErr error
	for _, u := range urls {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/json")
		if req.URL.Scheme+"://"+req.URL.Host == origin {
			for k, v := range h.opts.UpstreamHeader {
				req.Header[k] = v
			}
		}
		resp, err := h.client.Do(req)
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxCardBytes+1))
		resp.Body.Close()
		switch {
		case err != nil:
			return nil, err
		case resp.StatusCode == http.StatusNotFound:
			lastErr = fmt.Errorf("GET %s: %s", u, resp.Status)
			continue
		case resp.StatusCode != http.StatusOK:
			return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
		case len(body) > maxCardBytes:
			return nil, fmt.Errorf("GET %s: card larger than %d bytes", u, maxCardBytes)
		}
		return body, nil
	}
	return nil, lastErr
}
