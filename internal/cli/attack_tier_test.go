package cli

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// tiered is matchingIndicator (it matches the news agent's answer) with a
// tier, and missingIndicator (it never matches) with a higher one.
func tiered(matched, missed string) string {
	return "  indicators:\n" + strings.Replace(matchingIndicator, "    - protocol:", "    - tier: "+matched+"\n      protocol:", 1) +
		strings.Replace(missingIndicator, "    - protocol:", "    - tier: "+missed+"\n      protocol:", 1)
}

// TestAttackRunTierExitCodes: with --tier-exit-codes an exploited verdict
// exits by the highest tier among the matched indicators (1 ingested, 8
// local_action, 9 boundary_breach; an unmatched higher tier does not
// count); without it, exploited is 1 whatever the tier. A library exits with
// its highest tier.
func TestAttackRunTierExitCodes(t *testing.T) {
	srv := httptest.NewServer(&newsAgent{})
	defer srv.Close()
	url := srv.URL + "/"
	dir := t.TempDir()
	ingested := writeFile(t, dir, "ingested.yaml", a2aIndicators("TEST-070", tiered("ingested", "boundary_breach")))
	local := writeFile(t, dir, "local.yaml", a2aIndicators("TEST-071", tiered("local_action", "boundary_breach")))
	breach := writeFile(t, t.TempDir(), "breach.yaml", a2aIndicators("TEST-072", tiered("boundary_breach", "ingested")))
	for _, tc := range []struct {
		doc  string
		want int
	}{{ingested, ExitFindings}, {local, ExitLocalAction}, {breach, ExitBoundaryBreach}} {
		code, stdout, stderr := runAttackCmd(t, "run", "--library-compat", "--tier-exit-codes", "--a2a-url", url, tc.doc)
		if code != tc.want {
			t.Errorf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", tc.doc, code, tc.want, stdout, stderr)
		}
		if code, _, _ := runAttackCmd(t, "run", "--library-compat", "--a2a-url", url, tc.doc); code != ExitFindings {
			t.Errorf("%s without --tier-exit-codes: exit %d, want %d", tc.doc, code, ExitFindings)
		}
	}
	if code, _, _ := runAttackCmd(t, "run", "--tier-exit-codes", "--a2a-url", url, "--library", dir); code != ExitLocalAction {
		t.Errorf("library of ingested and local_action: exit %d, want %d", code, ExitLocalAction)
	}
	if h := commandHelp["attack"]; !strings.Contains(h, "8 local_action, 9\n      boundary_breach") {
		t.Errorf("warden help attack does not document the tier exit codes:\n%s", h)
	}
}
