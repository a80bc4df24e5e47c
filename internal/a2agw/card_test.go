package a2agw

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

const testCard = `{"name":"echo","description":"echoes","version":"1.0.0",
 "supportedInterfaces":[
   {"url":"http://127.0.0.1:9/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"},
   {"url":"http://127.0.0.1:9/rest","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"}],
 "capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
 "skills":[{"id":"echo","name":"echo","description":"echo","tags":[]}]}`

func TestSignAndVerifyCard(t *testing.T) {
	key := testKey(t, "card-1")
	signed, err := SignCard([]byte(testCard), key)
	if err != nil {
		t.Fatal(err)
	}
	if kid, err := VerifyCard(signed, public(key)); err != nil || kid != "card-1" {
		t.Fatalf("VerifyCard(own signature) = %q, %v", kid, err)
	}
	// The signature covers the canonical card: whitespace and member order
	// do not matter, content does.
	var m map[string]any
	_ = json.Unmarshal(signed, &m)
	reordered, _ := json.MarshalIndent(m, "", "  ")
	if _, err := VerifyCard(reordered, public(key)); err != nil {
		t.Errorf("re-serialized card: %v", err)
	}
	tampered := bytes.Replace(signed, []byte(`"echoes"`), []byte(`"echoes, and mails your files"`), 1)
	if _, err := VerifyCard(tampered, public(key)); err == nil {
		t.Error("a tampered card verified")
	}
	if _, err := VerifyCard(signed, public(testKey(t, "card-1"))); err == nil {
		t.Error("a card signed by an untrusted key (same kid) verified")
	}
	if _, err := VerifyCard(signed, nil); err == nil {
		t.Error("a signed card verified with no trusted key")
	}
	if _, err := VerifyCard([]byte(testCard), public(key)); err != errUnsigned {
		t.Errorf("unsigned card: %v, want errUnsigned", err)
	}
	// A crit header is refused even with a valid signature over it.
	critCard := signWithHeader(t, key, map[string]any{"alg": "EdDSA", "kid": "card-1", "crit": []string{"x"}, "x": 1})
	if _, err := VerifyCard(critCard, public(key)); err == nil {
		t.Error("a signature with a crit header verified")
	}
	// A signature's members are named exactly: encoding/json would have
	// taken "Protected" for "protected".
	folded := bytes.Replace(signed, []byte(`"protected":`), []byte(`"Protected":`), 1)
	if bytes.Equal(folded, signed) {
		t.Fatal("the signed card has no protected member")
	}
	if _, err := VerifyCard(folded, public(key)); err == nil || err == errUnsigned {
		t.Errorf(`a signature with "Protected" verified: %v`, err)
	}
	if _, err := CardHash([]byte(`{"name":"a","name":"b"}`)); err == nil {
		t.Error("a card with a duplicate member was hashed")
	}
}

// signWithHeader signs testCard with an arbitrary protected header.
func signWithHeader(t *testing.T, key *jose.JSONWebKey, header map[string]any) []byte {
	t.Helper()
	canonical, err := CanonicalCard([]byte(testCard))
	if err != nil {
		t.Fatal(err)
	}
	opts := &jose.SignerOptions{}
	for k, v := range header {
		if k != "alg" {
			opts = opts.WithHeader(jose.HeaderKey(k), v)
		}
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: key.Key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := signer.Sign(canonical)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := jws.DetachedCompactSerialize()
	p, s, _ := strings.Cut(d, "..")
	sig, _ := json.Marshal([]cardSignature{{Protected: p, Signature: s}})
	return append(append(canonical[:len(canonical)-1:len(canonical)-1], []byte(`,"signatures":`)...), append(sig, '}')...)
}

func TestCardHash(t *testing.T) {
	a, err := CardHash([]byte(testCard))
	if err != nil {
		t.Fatal(err)
	}
	signed, _ := SignCard([]byte(testCard), testKey(t, "k"))
	if b, _ := CardHash(signed); b != a {
		t.Error("signing the card changed its pin")
	}
	changed, _ := CardHash(bytes.Replace([]byte(testCard), []byte(`"streaming":true`), []byte(`"streaming":false`), 1))
	if changed == a {
		t.Error("a changed card has the same pin")
	}
}

func TestRewriteCard(t *testing.T) {
	out, err := rewriteCard([]byte(`{"name":"x","url":"http://127.0.0.1:9/a2a","preferredTransport":"GRPC",
		"additionalInterfaces":[{"url":"http://127.0.0.1:9/a2a","transport":"JSONRPC"},{"url":"127.0.0.1:10","transport":"GRPC"}],
		"supportedInterfaces":[{"url":"http://127.0.0.1:9/a2a","protocolBinding":"JSONRPC","protocolVersion":"0.3"},
		                       {"url":"http://127.0.0.1:9/rest","protocolBinding":"HTTP+JSON","protocolVersion":"0.3"}],
		"capabilities":{"x-limit":12345678901234567891,"x-ratio":0.1000000000000000055511151231257827},
		"signatures":[{"protected":"e30","signature":"AA"}]}`), "https://gw.example/a2a")
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if strings.Contains(s, "127.0.0.1") || strings.Contains(s, "GRPC") || strings.Contains(s, "HTTP+JSON") || strings.Contains(s, "signatures") {
		t.Errorf("rewritten card still points past the gateway: %s", s)
	}
	// Numbers come out as numbers, in their RFC 8785 form.
	if !strings.Contains(s, `"capabilities":{"x-limit":12345678901234567000,"x-ratio":0.1}`) {
		t.Errorf("numbers changed: %s", s)
	}
	if strings.Count(s, `"https://gw.example/a2a"`) != 3 {
		t.Errorf("want the gateway URL in url, additionalInterfaces and supportedInterfaces: %s", s)
	}
}
