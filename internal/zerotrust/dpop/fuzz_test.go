package dpop

import (
	"os"
	"strings"
	"testing"
)

// FuzzVerifyProof feeds arbitrary proofs to VerifyProof: it must never
// panic, must return exactly one of a proof and an error, must name a known
// rule, and may accept only a proof that names its key and jti.
func FuzzVerifyProof(f *testing.F) {
	req := apiRequest(f)
	good := mustProof(f, ecKey(f), req)
	f.Add(good)
	f.Add(mustProof(f, edKey(f), req))
	if rfc, err := os.ReadFile("testdata/rfc9449-4.1-proof.txt"); err == nil {
		f.Add(strings.TrimSpace(string(rfc)))
	}
	f.Add("")
	f.Add("..")
	f.Add("e30.e30.")
	f.Add(good[:len(good)/2])

	rules := map[string]bool{}
	for _, r := range []string{RuleHeaderCount, RuleMalformed, RuleTyp, RuleAlg, RuleJWK, RuleSignature,
		RuleHTM, RuleHTU, RuleIAT, RuleNonce, RuleATH, RuleJTI} {
		rules[r] = true
	}
	opts := testOpts()
	f.Fuzz(func(t *testing.T, proof string) {
		p, err := VerifyProof(proof, req, opts)
		if (p == nil) == (err == nil) {
			t.Fatalf("proof %v and error %v", p, err)
		}
		if err != nil {
			if !rules[err.Rule] || err.Reason == "" {
				t.Fatalf("error %+v", err)
			}
			return
		}
		if p.JTI == "" || p.JKT == "" || p.Key == nil || !p.Key.IsPublic() {
			t.Fatalf("accepted proof %+v", p)
		}
	})
}
