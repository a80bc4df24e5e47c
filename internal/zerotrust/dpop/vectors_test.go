package dpop

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Vectors from RFC 9449 and RFC 7638 (zerotrust.md §5).

func TestATHVector(t *testing.T) {
	// RFC 9449 §7.1.
	const token = "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"
	if got, want := ATH(token), "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"; got != want {
		t.Errorf("ATH = %s, want %s", got, want)
	}
}

func TestThumbprintVectors(t *testing.T) {
	rsa, err := os.ReadFile("testdata/rfc7638-rsa.jwk.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, jwk, want string }{
		// RFC 9449 §6.1: the cnf.jkt of the §4.1 example key.
		{"RFC 9449 EC", `{"crv":"P-256","kty":"EC","x":"l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs","y":"9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA"}`, "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"},
		// The same key with optional members: they do not count.
		{"RFC 9449 EC with kid", `{"kid":"k1","use":"sig","alg":"ES256","crv":"P-256","kty":"EC","x":"l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs","y":"9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA"}`, "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"},
		// RFC 7638 §3.1 (with its kid and alg).
		{"RFC 7638 RSA", string(rsa), "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var k jose.JSONWebKey
			if err := json.Unmarshal([]byte(tc.jwk), &k); err != nil {
				t.Fatal(err)
			}
			got, err := Thumbprint(&k)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Thumbprint = %s, want %s", got, tc.want)
			}
		})
	}
	if _, err := Thumbprint(nil); err == nil {
		t.Error("Thumbprint(nil) succeeded")
	}
}

// TestRFC9449ExampleProof verifies the RFC 9449 §4.1 proof (Figure 3's
// token request) at the time it was made.
func TestRFC9449ExampleProof(t *testing.T) {
	data, err := os.ReadFile("testdata/rfc9449-4.1-proof.txt")
	if err != nil {
		t.Fatal(err)
	}
	proof := strings.TrimSpace(string(data))
	req := Request{Method: "POST", URL: mustURL(t, "https://server.example.com/token")}
	iat := time.Unix(1562262616, 0)
	opts := Options{Now: func() time.Time { return iat.Add(3 * time.Second) }}

	p, verr := VerifyProof(proof, req, opts)
	if verr != nil {
		t.Fatalf("RFC 9449 example refused: %v", verr)
	}
	if p.JTI != "-BwC3ESc6acc2lTc" || !p.IAT.Equal(iat) || p.JKT != "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I" {
		t.Errorf("proof = {JTI %q, IAT %v, JKT %q}", p.JTI, p.IAT, p.JKT)
	}

	// Today it is stale, and it names no access token.
	if _, verr := VerifyProof(proof, req, Options{}); verr == nil || verr.Rule != RuleIAT {
		t.Errorf("example proof at the current time: got %v, want rule iat", verr)
	}
	withToken := req
	withToken.AccessToken = "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"
	if _, verr := VerifyProof(proof, withToken, opts); verr == nil || verr.Rule != RuleATH {
		t.Errorf("example proof with a token: got %v, want rule ath", verr)
	}
}
