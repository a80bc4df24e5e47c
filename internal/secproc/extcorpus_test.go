//go:build integration

package secproc

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// externalReport runs the external corpus, skipping when scripts/deps.sh
// has not installed it (unless WARDEN_REQUIRE_DEPS=1).
func externalReport(t *testing.T) ExternalReport {
	t.Helper()
	r, err := RunExternalCorpus(DepsDir())
	if errors.Is(err, ErrNoExternalCorpus) && os.Getenv("WARDEN_REQUIRE_DEPS") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestExternalCorpusReport logs the tables and the misses (go test -v).
func TestExternalCorpusReport(t *testing.T) {
	r := externalReport(t)
	cases, err := LoadExternalCorpus(DepsDir())
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]ExternalCase{}
	for _, c := range cases {
		byID[c.ID] = c
	}
	for _, s := range []struct {
		name string
		m    Metrics
	}{{SplitTuning, r.Tuning}, {SplitHeldOut, r.HeldOut}} {
		t.Logf("%s (%s):\n%s", s.name, strings.Join(r.Sources[s.name], ", "), s.m.Table())
		if os.Getenv("SECPROC_MISSES") == s.name {
			for _, miss := range s.m.Misses {
				c := byID[miss.ID]
				t.Logf("  miss: %s (%s) %s %s [%s] %s %s", miss.ID, c.Where, miss.Label, miss.Category,
					strings.Join(miss.Rules, ", "), c.Event.Tool, c.Event.Arguments)
			}
		}
	}
}
