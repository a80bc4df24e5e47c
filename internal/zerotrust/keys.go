package zerotrust

// The key ring signs warden's invocation tokens. On disk it is one directory:
//
//	<datadir>/keys/            mode 0700, created by the first writer
//	    ring.json              which keys exist, which one signs, when each expires
//	    <kid>.jwk              one private JWK per key, mode 0600
//
//	 generate/rotate ──▶ new key: active (signs and verifies)
//	                     old key: retired (verifies only) ── RetiredKeyLifetime ──▶ pruned
//
// A key's kid is its RFC 7638 thumbprint (SHA-256, base64url, no padding);
// loading recomputes it, so a key file cannot be swapped under another name.
// Only keys listed in ring.json are trusted: a stray .jwk file (left, say, by
// a rotation that crashed between writing the key and the ring) is ignored.
// Two processes rotating the same directory at once are not coordinated.

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Signature algorithms warden signs and accepts. Nothing else verifies: not
// "none", not HMAC (HS*, the key-confusion attack), not RSA.
const (
	AlgEdDSA = "EdDSA" // Ed25519, the default
	AlgES256 = "ES256" // ECDSA P-256 with SHA-256
)

// RetiredKeyLifetime is how long a key still verifies after a rotation
// replaced it. Tokens live 30 s by default; the margin covers tokens issued
// with a longer (unsafe) TTL and verifiers that reload the ring late.
const RetiredKeyLifetime = time.Hour

const ringFile = "ring.json"

// kidPattern is what a thumbprint kid looks like; it is also what makes a
// kid safe to use as a file name.
var kidPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

// KeySet finds the public key that verifies a token.
type KeySet interface {
	// VerificationKey returns the public key with this kid, and false when
	// the kid is unknown or the key has expired.
	VerificationKey(kid string) (jose.JSONWebKey, bool)
}

// KeyInfo describes one key of a ring, without its key material.
type KeyInfo struct {
	Kid     string
	Alg     string
	Created time.Time
	Active  bool      // the key that signs new tokens
	Expires time.Time // zero for the active key; after it a retired key no longer verifies
}

// ringEntry is one key as ring.json records it.
type ringEntry struct {
	Kid     string     `json:"kid"`
	Alg     string     `json:"alg"`
	Created time.Time  `json:"created"`
	Retired *time.Time `json:"retired,omitempty"`
	Expires *time.Time `json:"expires,omitempty"`
}

type ringManifest struct {
	Active string      `json:"active"`
	Keys   []ringEntry `json:"keys"`
}

type ringKey struct {
	ringEntry
	jwk jose.JSONWebKey // private, KeyID and Algorithm set
}

// KeyRing is a directory of signing keys: one active key that signs, and
// retired keys that verify until they expire. It is safe for concurrent use.
type KeyRing struct {
	// Immutable after LoadKeyRing.
	dir string
	now func() time.Time

	mu     sync.RWMutex // guards active and keys
	active string
	keys   []ringKey // oldest first
}

// GenerateKey returns a new private signing key as a JWK whose KeyID is its
// RFC 7638 thumbprint. alg is AlgEdDSA (also for "") or AlgES256.
func GenerateKey(alg string) (*jose.JSONWebKey, error) {
	var priv crypto.PrivateKey
	switch alg {
	case "", AlgEdDSA:
		alg = AlgEdDSA
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		priv = k
	case AlgES256:
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		priv = k
	default:
		return nil, fmt.Errorf("unsupported key algorithm %q (want %s or %s)", alg, AlgEdDSA, AlgES256)
	}
	jwk := &jose.JSONWebKey{Key: priv, Algorithm: alg, Use: "sig"}
	kid, err := Thumbprint(jwk)
	if err != nil {
		return nil, err
	}
	jwk.KeyID = kid
	return jwk, nil
}

// Thumbprint returns the RFC 7638 SHA-256 thumbprint of a JWK's public part,
// base64url without padding: the form of a kid and of cnf.jkt.
func Thumbprint(jwk *jose.JSONWebKey) (string, error) {
	sum, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(sum), nil
}

// LoadKeyRing reads the key ring in dir (normally KeysDir(DefaultDataDir())).
// A missing directory is an empty ring; nothing is created until Rotate.
// Refused, with the file named: a private key file readable or writable by
// group or others, a malformed JWK, a key whose thumbprint is not its kid,
// an algorithm other than EdDSA or ES256.
func LoadKeyRing(dir string) (*KeyRing, error) {
	r := &KeyRing{dir: dir, now: time.Now}
	if dir == "" {
		return nil, errors.New("no key directory: set WARDEN_DATA_DIR or pass --data-dir")
	}
	if fi, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return r, nil
	} else if err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", dir)
	} else if runtime.GOOS != "windows" && fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("%s: key directory has mode %04o; it must not be writable by group or others (chmod 700 %s)",
			dir, fi.Mode().Perm(), dir)
	}
	path := filepath.Join(dir, ringFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	var m ringManifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	for i, e := range m.Keys {
		if !kidPattern.MatchString(e.Kid) {
			return nil, fmt.Errorf("%s: keys[%d].kid %q is not a SHA-256 JWK thumbprint", path, i, e.Kid)
		}
		jwk, err := readKeyFile(filepath.Join(dir, e.Kid+".jwk"), e)
		if err != nil {
			return nil, err
		}
		r.keys = append(r.keys, ringKey{ringEntry: e, jwk: jwk})
	}
	if m.Active != "" {
		k := r.find(m.Active)
		if k == nil || k.Retired != nil {
			return nil, fmt.Errorf("%s: active key %q is not a current key of the ring", path, m.Active)
		}
		r.active = m.Active
	}
	return r, nil
}

// readKeyFile loads and checks one private key file.
func readKeyFile(path string, e ringEntry) (jose.JSONWebKey, error) {
	var jwk jose.JSONWebKey
	fi, err := os.Lstat(path)
	if err != nil {
		return jwk, err
	}
	if !fi.Mode().IsRegular() {
		return jwk, fmt.Errorf("%s: private key is not a regular file", path)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return jwk, fmt.Errorf("%s: private key file has mode %04o; it must not be accessible to group or others (chmod 600 %s)",
			path, fi.Mode().Perm(), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return jwk, err
	}
	if err := json.Unmarshal(data, &jwk); err != nil {
		return jwk, fmt.Errorf("%s: malformed JWK: %v", path, err)
	}
	if !jwk.Valid() || jwk.IsPublic() {
		return jwk, fmt.Errorf("%s: malformed JWK: not a private signing key", path)
	}
	if err := checkKeyAlg(&jwk); err != nil {
		return jwk, fmt.Errorf("%s: %v", path, err)
	}
	if jwk.Algorithm != e.Alg {
		return jwk, fmt.Errorf("%s: key algorithm %s differs from %s in %s", path, jwk.Algorithm, e.Alg, ringFile)
	}
	kid, err := Thumbprint(&jwk)
	if err != nil {
		return jwk, fmt.Errorf("%s: malformed JWK: %v", path, err)
	}
	if kid != e.Kid {
		return jwk, fmt.Errorf("%s: key thumbprint %s does not match its kid %s", path, kid, e.Kid)
	}
	if jwk.KeyID != "" && jwk.KeyID != kid {
		return jwk, fmt.Errorf("%s: kid member %q does not match the key's thumbprint %s", path, jwk.KeyID, kid)
	}
	jwk.KeyID = kid
	return jwk, nil
}

// checkKeyAlg checks that a JWK's alg is allowed and fits its key type.
func checkKeyAlg(jwk *jose.JSONWebKey) error {
	switch jwk.Algorithm {
	case AlgEdDSA:
		switch jwk.Key.(type) {
		case ed25519.PrivateKey, ed25519.PublicKey:
			return nil
		}
	case AlgES256:
		var curve elliptic.Curve
		switch k := jwk.Key.(type) {
		case *ecdsa.PrivateKey:
			curve = k.Curve
		case *ecdsa.PublicKey:
			curve = k.Curve
		}
		if curve == elliptic.P256() {
			return nil
		}
	default:
		return fmt.Errorf("key algorithm %q is not allowed (want %s or %s)", jwk.Algorithm, AlgEdDSA, AlgES256)
	}
	return fmt.Errorf("key type does not fit algorithm %s", jwk.Algorithm)
}

func (r *KeyRing) find(kid string) *ringKey {
	for i := range r.keys {
		if r.keys[i].Kid == kid {
			return &r.keys[i]
		}
	}
	return nil
}

// Rotate generates a key with alg (AlgEdDSA when ""), makes it the signing
// key, retires the previous one for RetiredKeyLifetime, prunes expired keys,
// and writes the ring to disk, creating the directory with mode 0700. On the
// first call it simply creates the ring. It returns the new key.
func (r *KeyRing) Rotate(alg string) (KeyInfo, error) {
	jwk, err := GenerateKey(alg)
	if err != nil {
		return KeyInfo{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := ensurePrivateDir(r.dir); err != nil {
		return KeyInfo{}, err
	}
	data, err := json.Marshal(jwk)
	if err != nil {
		return KeyInfo{}, err
	}
	if err := writeFileAtomic(filepath.Join(r.dir, jwk.KeyID+".jwk"), data); err != nil {
		return KeyInfo{}, err
	}

	now := r.now().UTC().Truncate(time.Second)
	expires := now.Add(RetiredKeyLifetime)
	keys := make([]ringKey, 0, len(r.keys)+1)
	var pruned []string
	for _, k := range r.keys {
		if k.Retired == nil {
			k.Retired, k.Expires = &now, &expires
		}
		if !k.Expires.After(now) {
			pruned = append(pruned, k.Kid)
			continue
		}
		keys = append(keys, k)
	}
	keys = append(keys, ringKey{ringEntry: ringEntry{Kid: jwk.KeyID, Alg: jwk.Algorithm, Created: now}, jwk: *jwk})

	m := ringManifest{Active: jwk.KeyID}
	for _, k := range keys {
		m.Keys = append(m.Keys, k.ringEntry)
	}
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return KeyInfo{}, err
	}
	if err := writeFileAtomic(filepath.Join(r.dir, ringFile), append(manifest, '\n')); err != nil {
		return KeyInfo{}, err
	}
	r.keys, r.active = keys, jwk.KeyID
	for _, kid := range pruned {
		// The ring no longer lists it, so a leftover file is untrusted anyway.
		_ = os.Remove(filepath.Join(r.dir, kid+".jwk"))
	}
	return KeyInfo{Kid: jwk.KeyID, Alg: jwk.Algorithm, Created: now, Active: true}, nil
}

// writeFileAtomic writes data to path with mode 0600 through a temporary
// file and a rename, so a reader never sees half a file.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op after the rename
	if err := f.Chmod(0o600); err != nil && runtime.GOOS != "windows" {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Signer returns the active private key as a go-jose signing key; its
// KeyID, the kid header of what it signs, is set. It fails when the ring has
// no key yet.
func (r *KeyRing) Signer() (jose.SigningKey, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	k := r.find(r.active)
	if k == nil {
		return jose.SigningKey{}, fmt.Errorf("no signing key in %s: run 'warden keys generate'", r.dir)
	}
	return jose.SigningKey{Algorithm: jose.SignatureAlgorithm(k.Alg), Key: k.jwk}, nil
}

// VerificationKey implements KeySet: the public part of the active key or
// of a retired key that has not expired.
func (r *KeyRing) VerificationKey(kid string) (jose.JSONWebKey, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	k := r.find(kid)
	if k == nil || !r.current(k) {
		return jose.JSONWebKey{}, false
	}
	return k.jwk.Public(), true
}

// current reports whether k still verifies. r.mu is held.
func (r *KeyRing) current(k *ringKey) bool {
	return k.Expires == nil || r.now().Before(*k.Expires)
}

// Keys lists the ring's keys that still verify, oldest first.
func (r *KeyRing) Keys() []KeyInfo {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []KeyInfo
	for i := range r.keys {
		k := &r.keys[i]
		if !r.current(k) {
			continue
		}
		info := KeyInfo{Kid: k.Kid, Alg: k.Alg, Created: k.Created, Active: k.Kid == r.active}
		if k.Expires != nil {
			info.Expires = *k.Expires
		}
		out = append(out, info)
	}
	return out
}

// PublicJWKS returns the ring's verification keys (active first, then the
// unexpired retired keys) as a JWK Set. Only public members are written.
func (r *KeyRing) PublicJWKS() []byte {
	r.mu.RLock()
	defer r.mu.RUnlock()
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{}}
	for i := range slices.Backward(r.keys) {
		k := &r.keys[i]
		if !r.current(k) {
			continue
		}
		pub := k.jwk.Public()
		if !pub.IsPublic() {
			continue // never publish what is not a public key
		}
		if k.Kid == r.active {
			set.Keys = slices.Insert(set.Keys, 0, pub)
		} else {
			set.Keys = append(set.Keys, pub)
		}
	}
	data, err := json.Marshal(set)
	if err != nil {
		// Public Ed25519 and P-256 keys always marshal.
		panic("zerotrust: marshaling the JWKS: " + err.Error())
	}
	return data
}

// JWKSHandler serves PublicJWKS as application/jwk-set+json, read fresh on
// every request so a rotation shows at once.
func (r *KeyRing) JWKSHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body := r.PublicJWKS()
		h := w.Header()
		h.Set("Content-Type", "application/jwk-set+json")
		h.Set("Cache-Control", "public, max-age=60")
		h.Set("X-Content-Type-Options", "nosniff")
		if req.Method == http.MethodHead {
			return
		}
		w.Write(body)
	})
}
