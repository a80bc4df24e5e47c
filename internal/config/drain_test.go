package config

import (
	"strings"
	"testing"
	"time"
)

// gateway.limits.drain_timeout: 10s unless set, 0 allowed (answer the
// calls in flight at once), negative or over 10m refused with its path.
func TestDrainTimeout(t *testing.T) {
	const base = "version: 1\ngateway:\n  upstreams: [{name: a, command: [x]}]\n"
	cfg, err := Parse([]byte(base), "t.yaml")
	if err != nil || cfg.Validate() != nil {
		t.Fatal(err, cfg.Validate())
	}
	if got := cfg.Gateway.Limits.DrainTimeout; got != 10*time.Second {
		t.Fatalf("default drain_timeout = %s, want 10s", got)
	}
	for value, want := range map[string]string{
		"0s":  "",
		"45s": "",
		"-1s": "gateway.limits.drain_timeout: must be between 0 and 10m0s, got -1s",
		"11m": "gateway.limits.drain_timeout: must be between 0 and 10m0s, got 11m0s",
	} {
		cfg, err := Parse([]byte(base+"  limits: {drain_timeout: "+value+"}\n"), "t.yaml")
		if err == nil {
			err = cfg.Validate()
		}
		switch {
		case want == "" && err != nil:
			t.Errorf("drain_timeout %s: %v", value, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("drain_timeout %s: got %v, want %q", value, err, want)
		}
	}
}
