package pin

// Signed manifests: the pins of one upstream, attested by whoever holds an
// Ed25519 key (`warden manifest keygen|make|sign|verify`).
//
//	payload  {"upstream":"files","tools":[{"name":"read","hash":"<64 hex>"}],"issued_at":"2026-01-02T03:04:05Z"}
//	header   {"alg":"EdDSA","kid":"<RFC 7638 thumbprint>","typ":"warden-manifest+jwt"}
//	file     base64url(header) "." base64url(payload) "." base64url(Ed25519 signature)
//
// Verification accepts EdDSA only (never "none", HMAC or RSA), the exact
// typ, strict base64url, and a payload decoded strictly: duplicate or
// unknown members, a member name in another case, trailing data, a malformed
// hash or a duplicated tool are refused.

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// ManifestType is the typ header of a signed manifest.
const ManifestType = "warden-manifest+jwt"

// maxManifestBytes bounds a manifest file.
const maxManifestBytes = 4 << 20

// Manifest lists the pins of one upstream's tools.
type Manifest struct {
	Upstream string         `json:"upstream"`
	Tools    []ManifestTool `json:"tools"`
	IssuedAt time.Time      `json:"issued_at"`
}

// ManifestTool is the pin of one tool in a manifest.
type ManifestTool struct {
	Name string `json:"name"`
	Hash string `json:"hash"` // see Hash
}

// ErrSignature is returned by VerifyManifest when no configured key
// verifies the signature.
var ErrSignature = errors.New("pin: the manifest's signature does not verify with any configured key")

// MakeManifest returns the manifest of tools (a complete tools/list answer
// of upstream), issued at issued.
func MakeManifest(upstream string, tools []Definition, issued time.Time) (*Manifest, error) {
	m := &Manifest{Upstream: upstream, Tools: []ManifestTool{}, IssuedAt: issued.UTC().Truncate(time.Second)}
	for _, d := range tools {
		if d.Name == "" {
			return nil, errors.New("pin: a tool without a name cannot be pinned")
		}
		h, _, err := Hash(d.Raw)
		if err != nil {
			return nil, fmt.Errorf("pin: tool %q: %w", d.Name, err)
		}
		m.Tools = append(m.Tools, ManifestTool{Name: d.Name, Hash: h})
	}
	slices.SortFunc(m.Tools, func(a, b ManifestTool) int { return strings.Compare(a.Name, b.Name) })
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// Validate checks m and returns every problem at once.
func (m *Manifest) Validate() error {
	var errs []error
	if m.Upstream == "" {
		errs = append(errs, errors.New("upstream: required"))
	}
	if m.IssuedAt.IsZero() {
		errs = append(errs, errors.New("issued_at: required"))
	}
	if m.Tools == nil {
		errs = append(errs, errors.New("tools: required (an empty list blocks every tool)"))
	}
	seen := map[string]bool{}
	for i, t := range m.Tools {
		switch {
		case t.Name == "":
			errs = append(errs, fmt.Errorf("tools[%d].name: required", i))
		case seen[t.Name]:
			errs = append(errs, fmt.Errorf("tools[%d].name: %q is listed twice", i, t.Name))
		}
		seen[t.Name] = true
		if !isHash(t.Hash) {
			errs = append(errs, fmt.Errorf("tools[%d].hash: %q is not 64 lowercase hex digits", i, t.Hash))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("pin: invalid manifest: %w", errors.Join(errs...))
	}
	return nil
}

// ToolHash returns the pinned hash of tool, and false when m does not
// name it.
func (m *Manifest) ToolHash(tool string) (string, bool) {
	for _, t := range m.Tools {
		if t.Name == tool {
			return t.Hash, true
		}
	}
	return "", false
}

// Marshal returns m as indented JSON, the unsigned manifest file.
func (m *Manifest) Marshal() ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ParseManifest decodes an unsigned manifest strictly.
func ParseManifest(data []byte) (*Manifest, error) {
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("pin: manifest of %d bytes is larger than %d", len(data), maxManifestBytes)
	}
	if err := jsonrpc.Validate(data, jsonrpc.Limits{MaxBytes: maxManifestBytes}); err != nil {
		return nil, fmt.Errorf("pin: manifest: %w", err)
	}
	if err := exactMembers(data, "upstream", "tools", "issued_at"); err != nil {
		return nil, fmt.Errorf("pin: manifest: %w", err)
	}
	if tools, ok := jsonrpc.Lookup(data, "tools"); ok {
		var elems []json.RawMessage
		if json.Unmarshal(tools, &elems) == nil {
			for i, e := range elems {
				if err := exactMembers(e, "name", "hash"); err != nil {
					return nil, fmt.Errorf("pin: manifest: tools[%d]: %w", i, err)
				}
			}
		}
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("pin: manifest: %w", err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// exactMembers refuses an object with a member not in names, matched
// exactly (encoding/json alone would take "Upstream" for "upstream").
func exactMembers(obj []byte, names ...string) error {
	var bad []string
	isObject := jsonrpc.Members(obj, func(name string, _ []byte) {
		if !slices.Contains(names, name) {
			bad = append(bad, name)
		}
	})
	if !isObject {
		return errors.New("not a JSON object")
	}
	if len(bad) > 0 {
		return fmt.Errorf("unknown members %q (want %s)", bad, strings.Join(names, ", "))
	}
	return nil
}

// manifestHeader is the protected header of a signed manifest.
type manifestHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid,omitempty"`
	Typ string `json:"typ"`
}

var b64 = base64.RawURLEncoding.Strict()

// SignManifest returns m as a compact JWS signed with key; kid (may be
// "") names the key in the header, as a hint for people.
func SignManifest(m *Manifest, key ed25519.PrivateKey, kid string) (string, error) {
	if len(key) != ed25519.PrivateKeySize {
		return "", errors.New("pin: not an Ed25519 private key")
	}
	if err := m.Validate(); err != nil {
		return "", err
	}
	header, err := json.Marshal(manifestHeader{Alg: zerotrust.AlgEdDSA, Kid: kid, Typ: ManifestType})
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	signed := b64.EncodeToString(header) + "." + b64.EncodeToString(payload)
	return signed + "." + b64.EncodeToString(ed25519.Sign(key, []byte(signed))), nil
}

// VerifyManifest checks a signed manifest (a compact JWS; surrounding
// whitespace is ignored) against keys and returns the manifest. Any key may
// verify it: the kid header is a hint, not a selector.
func VerifyManifest(token []byte, keys []ed25519.PublicKey) (*Manifest, error) {
	if len(keys) == 0 {
		return nil, errors.New("pin: no manifest keys configured")
	}
	token = bytes.TrimSpace(token)
	if len(token) > maxManifestBytes {
		return nil, fmt.Errorf("pin: signed manifest of %d bytes is larger than %d", len(token), maxManifestBytes)
	}
	parts := strings.Split(string(token), ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("pin: not a compact JWS (want 3 parts, got %d)", len(parts))
	}
	raw, err := b64.DecodeString(parts[0])
	if err != nil {
		return nil, fmt.Errorf("pin: malformed JWS header: %v", err)
	}
	if err := jsonrpc.Validate(raw, jsonrpc.Limits{}); err != nil {
		return nil, fmt.Errorf("pin: malformed JWS header: %v", err)
	}
	if err := exactMembers(raw, "alg", "kid", "typ"); err != nil {
		return nil, fmt.Errorf("pin: JWS header: %v", err)
	}
	var h manifestHeader
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, fmt.Errorf("pin: malformed JWS header: %v", err)
	}
	if h.Alg != zerotrust.AlgEdDSA {
		return nil, fmt.Errorf("pin: JWS alg %q is not allowed (want %s)", h.Alg, zerotrust.AlgEdDSA)
	}
	if !strings.EqualFold(h.Typ, ManifestType) {
		return nil, fmt.Errorf("pin: JWS typ %q is not %q: not a warden manifest", h.Typ, ManifestType)
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil || len(sig) != ed25519.SignatureSize {
		return nil, errors.New("pin: malformed JWS signature")
	}
	signed := []byte(parts[0] + "." + parts[1])
	ok := false
	for _, k := range keys {
		if len(k) == ed25519.PublicKeySize && ed25519.Verify(k, signed, sig) {
			ok = true
			break
		}
	}
	if !ok {
		return nil, ErrSignature
	}
	payload, err := b64.DecodeString(parts[1])
	if err != nil {
		return nil, fmt.Errorf("pin: malformed JWS payload: %v", err)
	}
	return ParseManifest(payload)
}

// LoadManifest reads and verifies the signed manifest file at path.
func LoadManifest(path string, keys []ed25519.PublicKey) (*Manifest, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	m, err := VerifyManifest(data, keys)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

func readBounded(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxManifestBytes {
		return nil, fmt.Errorf("%s: %d bytes is larger than %d", path, fi.Size(), maxManifestBytes)
	}
	return os.ReadFile(path)
}

// GenerateKey makes a manifest signing key: the private JWK (to keep, mode
// 0600) and the public JWK (to configure in gateways), and its kid, the
// RFC 7638 thumbprint.
func GenerateKey() (private, public []byte, kid string, err error) {
	jwk, err := zerotrust.GenerateKey(zerotrust.AlgEdDSA)
	if err != nil {
		return nil, nil, "", err
	}
	if private, err = jwk.MarshalJSON(); err != nil {
		return nil, nil, "", err
	}
	if public, err = jwk.Public().MarshalJSON(); err != nil {
		return nil, nil, "", err
	}
	return append(private, '\n'), append(public, '\n'), jwk.KeyID, nil
}

// LoadPrivateKey reads a private JWK made by GenerateKey. A file readable
// by group or others is refused, as ssh does.
func LoadPrivateKey(path string) (key ed25519.PrivateKey, kid string, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, "", err
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, "", fmt.Errorf("%s: private key file has mode %04o; it must not be accessible to group or others (chmod 600 %s)",
			path, fi.Mode().Perm(), path)
	}
	data, err := readBounded(path)
	if err != nil {
		return nil, "", err
	}
	var jwk jose.JSONWebKey
	if err := jwk.UnmarshalJSON(data); err != nil {
		return nil, "", fmt.Errorf("%s: not a JWK: %v", path, err)
	}
	priv, ok := jwk.Key.(ed25519.PrivateKey)
	if !ok {
		return nil, "", fmt.Errorf("%s: not an Ed25519 private key", path)
	}
	kid, err = zerotrust.Thumbprint(&jwk)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %v", path, err)
	}
	return priv, kid, nil
}

// LoadPublicKey reads a public JWK made by GenerateKey. A private key is
// refused: gateways hold public keys only.
func LoadPublicKey(path string) (ed25519.PublicKey, error) {
	jwk, err := zerotrust.LoadPublicJWK(path)
	if err != nil {
		return nil, err
	}
	pub, ok := jwk.Key.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("%s: not an Ed25519 public key", path)
	}
	return pub, nil
}
