package pin

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func testKeys(t testing.TB) (ed25519.PrivateKey, ed25519.PublicKey) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

func testManifest(t testing.TB) *Manifest {
	m, err := MakeManifest("files", mustParseTB(t, listOf(toolRead, toolWrite)), time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustParseTB(t testing.TB, result []byte) []Definition {
	defs, err := ParseTools(result)
	if err != nil {
		t.Fatal(err)
	}
	return defs
}

func TestManifestSignVerifyRoundTrip(t *testing.T) {
	priv, pub := testKeys(t)
	_, other := testKeys(t)
	m := testManifest(t)
	tok, err := SignManifest(m, priv, "kid-1")
	if err != nil {
		t.Fatal(err)
	}
	got, err := VerifyManifest([]byte(tok+"\n"), []ed25519.PublicKey{other, pub})
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(got, m) {
		t.Fatalf("verified manifest differs:\n%s", cmp.Diff(m, got))
	}
	if h, ok := got.ToolHash("read"); !ok || h != hashFor(t, toolRead) {
		t.Fatalf("ToolHash(read) = %s, %v", h, ok)
	}
}

// resign builds a compact JWS from a header and payload of the test's
// choosing, signed with priv.
func resign(header, payload string, priv ed25519.PrivateKey) string {
	s := b64.EncodeToString([]byte(header)) + "." + b64.EncodeToString([]byte(payload))
	return s + "." + b64.EncodeToString(ed25519.Sign(priv, []byte(s)))
}

func TestManifestVerifyRefuses(t *testing.T) {
	priv, pub := testKeys(t)
	wrong, _ := testKeys(t)
	m := testManifest(t)
	tok, _ := SignManifest(m, priv, "")
	parts := strings.Split(tok, ".")
	payload, _ := b64.DecodeString(parts[1])

	// Tampering: an attacker replaces read's hash with the poisoned one.
	tampered := strings.Replace(string(payload), hashFor(t, toolRead), hashFor(t, toolReadPoisoned), 1)
	if tampered == string(payload) {
		t.Fatal("test bug: nothing tampered")
	}
	hs := hmac.New(sha256.New, pub)
	hs.Write([]byte(`x`))
	const goodHeader = `{"alg":"EdDSA","typ":"warden-manifest+jwt"}`
	for _, c := range []struct {
		name, token string
		want        string
	}{
		{"tampered payload", parts[0] + "." + b64.EncodeToString([]byte(tampered)) + "." + parts[2], "does not verify"},
		{"signed by another key", resign(goodHeader, string(payload), wrong), "does not verify"},
		{"flipped signature", parts[0] + "." + parts[1] + "." + flip(parts[2]), ""},
		{"alg none", b64.EncodeToString([]byte(`{"alg":"none","typ":"warden-manifest+jwt"}`)) + "." + parts[1] + ".", "alg"},
		{"alg HS256 with the public key as secret", b64.EncodeToString([]byte(`{"alg":"HS256","typ":"warden-manifest+jwt"}`)) + "." + parts[1] + "." +
			base64.RawURLEncoding.EncodeToString(hs.Sum(nil)), "alg"},
		{"typ of an invocation token", resign(`{"alg":"EdDSA","typ":"wzt+jwt"}`, string(payload), priv), "typ"},
		{"crit header", resign(`{"alg":"EdDSA","typ":"warden-manifest+jwt","crit":["x"]}`, string(payload), priv), "unknown members"},
		{"duplicate alg", resign(`{"alg":"none","alg":"EdDSA","typ":"warden-manifest+jwt"}`, string(payload), priv), "duplicate"},
		{"two parts", parts[0] + "." + parts[1], "3 parts"},
		{"padded base64", parts[0] + "=." + parts[1] + "." + parts[2], "header"},
		{"unknown payload member", resign(goodHeader, `{"upstream":"files","tools":[],"issued_at":"2026-01-02T03:04:05Z","admin":true}`, priv), "unknown"},
		{"payload member in another case", resign(goodHeader, `{"Upstream":"files","tools":[],"issued_at":"2026-01-02T03:04:05Z"}`, priv), "unknown"},
		{"duplicate tool", resign(goodHeader, `{"upstream":"files","tools":[{"name":"a","hash":"`+hashOf("a")+`"},{"name":"a","hash":"`+hashOf("b")+`"}],"issued_at":"2026-01-02T03:04:05Z"}`, priv), "twice"},
		{"short hash", resign(goodHeader, `{"upstream":"files","tools":[{"name":"a","hash":"abc"}],"issued_at":"2026-01-02T03:04:05Z"}`, priv), "hex"},
		{"no upstream", resign(goodHeader, `{"tools":[],"issued_at":"2026-01-02T03:04:05Z"}`, priv), "upstream"},
		{"trailing data", resign(goodHeader, `{"upstream":"files","tools":[],"issued_at":"2026-01-02T03:04:05Z"} {}`, priv), "manifest"},
	} {
		got, err := VerifyManifest([]byte(c.token), []ed25519.PublicKey{pub})
		if err == nil {
			t.Errorf("%s: accepted: %+v", c.name, got)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q lacks %q", c.name, err, c.want)
		}
	}
	if _, err := VerifyManifest([]byte(tok), nil); err == nil {
		t.Error("verified without keys")
	}
	if _, err := VerifyManifest([]byte(resign(goodHeader, string(payload), wrong)), []ed25519.PublicKey{pub}); !errors.Is(err, ErrSignature) {
		t.Errorf("wrong key: %v, want ErrSignature", err)
	}
}

func flip(s string) string {
	b := []byte(s)
	if b[0] == 'A' {
		b[0] = 'B'
	} else {
		b[0] = 'A'
	}
	return string(b)
}

func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	priv, pub, kid, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	privPath, pubPath := filepath.Join(dir, "k.jwk"), filepath.Join(dir, "k.pub.jwk")
	os.WriteFile(privPath, priv, 0o600)
	os.WriteFile(pubPath, pub, 0o644)
	key, gotKid, err := LoadPrivateKey(privPath)
	if err != nil || gotKid != kid {
		t.Fatalf("LoadPrivateKey: %v (kid %s, want %s)", err, gotKid, kid)
	}
	pk, err := LoadPublicKey(pubPath)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := SignManifest(testManifest(t), key, kid)
	path := filepath.Join(dir, "m.jws")
	os.WriteFile(path, []byte(tok), 0o644)
	if _, err := LoadManifest(path, []ed25519.PublicKey{pk}); err != nil {
		t.Fatalf("LoadManifest: %v", err)
	}
	if _, err := LoadPublicKey(privPath); err == nil {
		t.Error("LoadPublicKey accepted a private key")
	}
	os.Chmod(privPath, 0o644)
	if _, _, err := LoadPrivateKey(privPath); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("LoadPrivateKey of a world-readable file: %v", err)
	}
}

// FuzzParseManifest: whatever the bytes, parsing does not panic, and a
// manifest it accepts is valid and survives a round trip unchanged.
func FuzzParseManifest(f *testing.F) {
	m := testManifest(f)
	b, _ := m.Marshal()
	f.Add(b)
	f.Add([]byte(`{"upstream":"u","tools":[],"issued_at":"2026-01-02T03:04:05Z"}`))
	f.Add([]byte(`{"upstream":"u","tools":[{"name":"a","hash":"` + strings.Repeat("a", 64) + `"}],"issued_at":"2026-01-02T03:04:05.5+02:00"}`))
	f.Add([]byte(`{"Upstream":"u","upstream":"v","tools":null}`))
	f.Add([]byte(`{"upstream":"u","tools":[{"name":"a","name":"b"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("accepted an invalid manifest: %v", err)
		}
		for _, tool := range m.Tools {
			if tool.Name == "" || !isHash(tool.Hash) {
				t.Fatalf("accepted tool %+v", tool)
			}
		}
		out, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseManifest(out)
		if err != nil {
			t.Fatalf("re-parsing %s: %v", out, err)
		}
		if !cmp.Equal(m, again, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })) {
			t.Fatalf("round trip changed the manifest:\n%s", cmp.Diff(m, again))
		}
	})
}

// FuzzVerifyManifest: no token verifies without the key's signature over
// exactly its bytes; nothing panics.
func FuzzVerifyManifest(f *testing.F) {
	priv, pub := testKeys(f)
	tok, _ := SignManifest(testManifest(f), priv, "k")
	f.Add([]byte(tok))
	f.Add([]byte("a.b.c"))
	f.Add([]byte(".."))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := VerifyManifest(data, []ed25519.PublicKey{pub})
		if err != nil {
			return
		}
		if strings.TrimSpace(string(data)) != tok {
			// Ed25519 signatures are not malleable and base64 is strict:
			// only the signed token itself verifies.
			t.Fatalf("a different token verified: %q → %+v", data, m)
		}
	})
}
