package config

import (
	"testing"
	"time"
)

func TestSessionCredentialDefaults(t *testing.T) {
	cfg, err := Parse([]byte(`version: 1
gateway:
  zero_trust: {subject: svc}
  upstreams:
    - name: docs
      url: https://docs.example.com/mcp
      session_credential: {}
    - name: wiki
      url: https://wiki.example.com/mcp
      session_credential: {header: X-Warden-Session, ttl: 2m}
    - name: files
      url: https://files.example.com/mcp
`), "sc.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	ups := cfg.Gateway.Upstreams
	if sc := ups[0].SessionCredential; sc == nil || sc.Header != "Authorization" || sc.TTL != 10*time.Minute {
		t.Errorf("defaults: %+v", sc)
	}
	if sc := ups[1].SessionCredential; sc == nil || sc.Header != "X-Warden-Session" || sc.TTL != 2*time.Minute {
		t.Errorf("set: %+v", sc)
	}
	if ups[2].SessionCredential != nil || !cfg.Gateway.SessionCredentials() || cfg.Gateway.RequiresTokens() {
		t.Error("session_credential is on where it was not set, or counts as requiring tokens")
	}
}
