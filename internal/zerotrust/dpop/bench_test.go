package dpop

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net/http"
	"net/url"
	"testing"
	"time"
)

func BenchmarkVerifyProof(b *testing.B) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	u, _ := url.Parse("http://127.0.0.1:8787/mcp")
	proof, _ := NewProof(key, Request{Method: "POST", URL: u, AccessToken: "tok"}, "jti", time.Now())
	hdr := http.Header{"Dpop": {proof}}
	for b.Loop() {
		if _, err := Verify(hdr, Request{Method: "POST", URL: u, AccessToken: "tok"}, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
