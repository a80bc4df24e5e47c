package zerotrust

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// privateMembers are the JWK members that carry private key material
// (RFC 7518 §6.2.2, §6.3.2, §6.4; RFC 8037 §2).
var privateMembers = []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"}

func TestGenerateKeyKidIsThumbprint(t *testing.T) {
	for _, alg := range []string{"", AlgEdDSA, AlgES256} {
		k, err := GenerateKey(alg)
		if err != nil {
			t.Fatal(err)
		}
		pub := k.Public()
		tp, err := Thumbprint(&pub)
		if err != nil {
			t.Fatal(err)
		}
		if k.KeyID != tp || len(k.KeyID) != 43 || strings.ContainsAny(k.KeyID, "=+/") {
			t.Errorf("%q: kid %q, thumbprint of the public key %q", alg, k.KeyID, tp)
		}
		if want := map[string]string{"": AlgEdDSA}[alg]; want != "" && k.Algorithm != want {
			t.Errorf("default algorithm %q, want EdDSA", k.Algorithm)
		}
	}
	for _, alg := range []string{"RS256", "HS256", "none", "ES384"} {
		if _, err := GenerateKey(alg); err == nil {
			t.Errorf("GenerateKey(%q) succeeded", alg)
		}
	}
}

func TestRotationKeepsOldKeyForVerification(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	r, err := LoadKeyRing(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Issue(r, IssueRequest{Sub: "alice", Upstream: "u", Tool: "t"}); err == nil {
		t.Fatal("an empty ring issued a token")
	}
	first, err := r.Rotate(AlgEdDSA)
	if err != nil {
		t.Fatal(err)
	}
	oldTok, _ := issue(t, r, IssueRequest{})
	second, err := r.Rotate(AlgES256)
	if err != nil {
		t.Fatal(err)
	}
	newTok, _ := issue(t, r, IssueRequest{})
	if first.Kid == second.Kid {
		t.Fatal("rotation kept the kid")
	}
	if h := decodeSegment(t, strings.Split(newTok, ".")[0]); h["kid"] != second.Kid || h["alg"] != AlgES256 {
		t.Errorf("new token header %v, want kid %s ES256", h, second.Kid)
	}
	want := expect()
	// Now, after both tokens were issued: checking both at the first one's
	// iat failed whenever a second boundary fell between the two issues.
	want.Now = time.Now()
	if _, verr := Verify(r, oldTok, want); verr != nil {
		t.Errorf("token of the retired key: %v", verr)
	}

	// The same holds for a ring read back from disk.
	r2, err := LoadKeyRing(dir)
	if err != nil {
		t.Fatal(err)
	}
	keys := r2.Keys()
	if len(keys) != 2 || keys[0].Kid != first.Kid || keys[0].Active || !keys[1].Active || keys[0].Expires.IsZero() {
		t.Fatalf("reloaded ring: %+v", keys)
	}
	for _, tok := range []string{oldTok, newTok} {
		if _, verr := Verify(r2, tok, want); verr != nil {
			t.Errorf("reloaded ring: %v", verr)
		}
	}

	// Once the retired key expires it verifies nothing, and the next
	// rotation deletes its file.
	later := time.Now().Add(RetiredKeyLifetime + time.Minute)
	r2.now = func() time.Time { return later }
	if _, verr := Verify(r2, oldTok, want); verr == nil || verr.Invariant != "signature" {
		t.Errorf("token of an expired key: %v", verr)
	}
	if strings.Contains(string(r2.PublicJWKS()), first.Kid) {
		t.Error("the JWKS still publishes an expired key")
	}
	if _, err := r2.Rotate(""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, first.Kid+".jwk")); !os.IsNotExist(err) {
		t.Errorf("expired key file not pruned: %v", err)
	}
	if n := len(r2.Keys()); n != 2 {
		t.Errorf("after pruning, %d keys, want 2", n)
	}
}

func TestPublicJWKSHasNoPrivateMembers(t *testing.T) {
	r := newRing(t, AlgEdDSA)
	if _, err := r.Rotate(AlgES256); err != nil {
		t.Fatal(err)
	}
	var set struct{ Keys []map[string]any }
	if err := json.Unmarshal(r.PublicJWKS(), &set); err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != 2 {
		t.Fatalf("JWKS has %d keys, want 2", len(set.Keys))
	}
	if set.Keys[0]["kid"] != activeKid(t, r) || set.Keys[0]["alg"] != AlgES256 {
		t.Errorf("first JWKS key %v is not the active key", set.Keys[0])
	}
	for _, k := range set.Keys {
		for _, m := range privateMembers {
			if _, ok := k[m]; ok {
				t.Errorf("JWKS key %v has private member %q", k["kid"], m)
			}
		}
		if k["use"] != "sig" || k["kid"] == "" {
			t.Errorf("JWKS key %v lacks use/kid", k)
		}
	}

	srv := httptest.NewServer(r.JWKSHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/jwk-set+json" || resp.StatusCode != 200 {
		t.Errorf("GET: %d %s", resp.StatusCode, ct)
	}
	resp, err = http.Post(srv.URL, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", resp.StatusCode)
	}
}

func TestRotateCreatesPrivateFiles(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix permissions")
	}
	data := filepath.Join(t.TempDir(), "data")
	dir := KeysDir(data)
	r, err := LoadKeyRing(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatal("loading created the data directory")
	}
	k, err := r.Rotate("")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{data: 0o700, dir: 0o700, filepath.Join(dir, k.Kid+".jwk"): 0o600, filepath.Join(dir, "ring.json"): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %04o, want %04o", path, fi.Mode().Perm(), want)
		}
	}
}

func TestLoadKeyRingRefusesUnsafeOrBrokenKeys(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix permissions")
	}
	other, _ := GenerateKey(AlgEdDSA)
	otherJSON, _ := json.Marshal(other)
	for _, tc := range []struct {
		name string
		edit func(dir, keyFile string)
		want string
	}{
		{"key readable by others", func(_, f string) { os.Chmod(f, 0o644) }, "mode 0644"},
		{"key readable by group", func(_, f string) { os.Chmod(f, 0o640) }, "mode 0640"},
		{"malformed JWK", func(_, f string) { os.WriteFile(f, []byte(`{"kty":"OKP","crv":"Ed25519","x":"!!"}`), 0o600) }, "malformed JWK"},
		{"not JSON", func(_, f string) { os.WriteFile(f, []byte("garbage"), 0o600) }, "malformed JWK"},
		{"public key only", func(_, f string) {
			k := readJWK(t, f)
			pub := k.Public()
			data, _ := json.Marshal(pub)
			os.WriteFile(f, data, 0o600)
		}, "not a private signing key"},
		{"another key under this kid", func(_, f string) { os.WriteFile(f, otherJSON, 0o600) }, "does not match"},
		{"missing key file", func(_, f string) { os.Remove(f) }, ".jwk"},
		{"key directory writable by others", func(d, _ string) { os.Chmod(d, 0o777) }, "writable by group or others"},
		{"unknown field in ring.json", func(d, _ string) {
			os.WriteFile(filepath.Join(d, "ring.json"), []byte(`{"active":"","keys":[],"extra":1}`), 0o600)
		}, "unknown field"},
		{"path in kid", func(d, _ string) {
			os.WriteFile(filepath.Join(d, "ring.json"), []byte(`{"active":"","keys":[{"kid":"../../etc/passwd","alg":"EdDSA"}]}`), 0o600)
		}, "not a SHA-256 JWK thumbprint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "keys")
			r, err := LoadKeyRing(dir)
			if err != nil {
				t.Fatal(err)
			}
			k, err := r.Rotate(AlgEdDSA)
			if err != nil {
				t.Fatal(err)
			}
			keyFile := filepath.Join(dir, k.Kid+".jwk")
			tc.edit(dir, keyFile)
			_, err = LoadKeyRing(dir)
			if err == nil {
				t.Fatal("LoadKeyRing accepted it")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), dir) {
				t.Errorf("error %q does not name the file and %q", err, tc.want)
			}
		})
	}
}

func readJWK(t *testing.T, path string) *jose.JSONWebKey {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var k jose.JSONWebKey
	if err := json.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	return &k
}

// TestRingConcurrentUse issues and verifies while another goroutine rotates;
// run under -race it checks the ring's locking.
func TestRingConcurrentUse(t *testing.T) {
	r := newRing(t, AlgEdDSA)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 5 {
			if _, err := r.Rotate(""); err != nil {
				t.Error(err)
			}
		}
	}()
	for range 50 {
		tok, _ := issue(t, r, IssueRequest{})
		if _, verr := Verify(r, tok, expect()); verr != nil {
			t.Fatalf("Verify during rotation: %v", verr)
		}
		_ = r.PublicJWKS()
	}
	<-done
}
