package config

import (
	"strings"
	"testing"
	"time"
)

// The listener's bounds in gateway.limits: defaults when unset, strict
// decoding, and every value out of range refused with its path, its
// position and the range.
func TestListenerLimits(t *testing.T) {
	const base = "version: 1\ngateway:\n  upstreams: [{name: a, command: [x]}]\n"
	cfg, err := Parse([]byte(base), "t.yaml")
	if err != nil || cfg.Validate() != nil {
		t.Fatal(err, cfg.Validate())
	}
	l := cfg.Gateway.Limits
	if l.MaxSessions != 4096 || l.MaxSessionsPerPrincipal != 256 || l.MaxChildrenPerUpstream != 64 ||
		l.HeaderTimeout != 10*time.Second || l.BodyTimeout != 30*time.Second {
		t.Fatalf("defaults %+v", l)
	}

	cfg, err = Parse([]byte(base+"  limits:\n    max_sessions: 100\n    max_sessions_per_principal: 10\n"+
		"    max_children_per_upstream: 5\n    header_timeout: 2s\n    body_timeout: 1m\n"), "t.yaml")
	if err != nil || cfg.Validate() != nil {
		t.Fatal(err, cfg.Validate())
	}
	if l := cfg.Gateway.Limits; l.MaxSessions != 100 || l.MaxSessionsPerPrincipal != 10 || l.MaxChildrenPerUpstream != 5 ||
		l.HeaderTimeout != 2*time.Second || l.BodyTimeout != time.Minute {
		t.Fatalf("decoded %+v", l)
	}

	for _, tc := range []struct{ limits, want string }{
		{"max_sessions: 0", "t.yaml:5:19: gateway.limits.max_sessions: must be between 1 and 1000000, got 0"},
		{"max_sessions: 1000001", "gateway.limits.max_sessions: must be between 1 and 1000000, got 1000001"},
		{"max_sessions: many", "gateway.limits.max_sessions"},
		{"max_sessions_per_principal: -1", "gateway.limits.max_sessions_per_principal: must be between 1 and 1000000, got -1"},
		{"{max_sessions: 10, max_sessions_per_principal: 11}",
			"gateway.limits.max_sessions_per_principal: 11 is more than max_sessions (10): no client could reach it"},
		{"max_children_per_upstream: 0", "gateway.limits.max_children_per_upstream: must be between 1 and 10000, got 0"},
		{"max_children_per_upstream: 10001", "gateway.limits.max_children_per_upstream: must be between 1 and 10000, got 10001"},
		{"header_timeout: 500ms", "gateway.limits.header_timeout: must be between 1s and 5m0s, got 500ms"},
		{"header_timeout: 6m", "gateway.limits.header_timeout: must be between 1s and 5m0s, got 6m0s"},
		{"header_timeout: 10", "gateway.limits.header_timeout"},
		{"body_timeout: 0s", "gateway.limits.body_timeout: must be between 1s and 1h0m0s, got 0s"},
		{"body_timeout: 2h", "gateway.limits.body_timeout: must be between 1s and 1h0m0s, got 2h0m0s"},
		{"max_session: 5", `gateway.limits: unknown field "max_session" (did you mean "max_sessions"?)`},
	} {
		limits := "  limits:\n    " + tc.limits + "\n"
		if strings.HasPrefix(tc.limits, "{") {
			limits = "  limits: " + tc.limits + "\n"
		}
		cfg, err := Parse([]byte(base+limits), "t.yaml")
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.limits, err, tc.want)
		}
	}
}
