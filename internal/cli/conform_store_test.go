package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A check with a partial store never prints a plain "holds" for an
// invariant: each hold carries its mode and odds, the run ends with a
// "partial coverage" line and exits 6, not 0. A leads-to property is
// checked exactly, and says so.
func TestConformCheckPartialStoreIsLabelled(t *testing.T) {
	plainHolds := regexp.MustCompile(`(?m)^\S+\s+\S+\s+\S+\s+\S+\s+holds\s+PASS\s+\d+ states$`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--store", "hashcompact"}, "holds (partial coverage: hash compaction, 64-bit fingerprints; probability of a missed state ≤ "},
		{[]string{"--store", "bitstate", "--bitstate-bits", "20", "--bitstate-hashes", "2"},
			"no violation found (partial coverage: bitstate, 2^20 bits, 2 hashes, "},
	} {
		args := append([]string{"check", "--model", "mcp", "--warden", "--max-states", "100000"}, tc.args...)
		code, out, errs := runConformTest(t, args...)
		if code != ExitPartial {
			t.Fatalf("%v: exit %d, want %d\n%s%s", tc.args, code, ExitPartial, out, errs)
		}
		if !strings.Contains(out, tc.want) || plainHolds.MatchString(out) {
			t.Errorf("%v: output lacks %q or has a plain holds:\n%s", tc.args, tc.want, out)
		}
		if !strings.Contains(out, "P5_hold_decided              P5  AASM-HARDENING    holds      PASS           1200 states (leads-to: checked with the exact store)") {
			t.Errorf("%v: the leads-to property does not say it was checked exactly:\n%s", tc.args, out)
		}
		if !strings.Contains(out, "0 violated, 0 incomplete") ||
			!strings.Contains(out, "search saw, which may miss states; that is not a proof (rerun with --store exact for one)") {
			t.Errorf("%v: output:\n%s", tc.args, out)
		}
	}
	// The same run in exact mode holds plainly and exits 0.
	code, out, _ := runConformTest(t, "check", "--model", "mcp", "--warden", "--max-states", "100000", "--store", "exact")
	if code != ExitOK || !plainHolds.MatchString(out) || strings.Contains(out, "partial") {
		t.Errorf("exact: exit %d\n%s", code, out)
	}
}

// A violation found with a partial store is reported as one (exit 1), and
// its trace is exact mode's.
func TestConformCheckPartialStoreViolation(t *testing.T) {
	traces := map[string]string{}
	for _, store := range []string{"exact", "hashcompact", "bitstate"} {
		dir := t.TempDir()
		code, out, errs := runConformTest(t, "check", "--model", "cs3-consent-bypass", "--out", dir, "--store", store)
		if code != ExitFindings || !strings.Contains(out, "violated") {
			t.Fatalf("%s: exit %d, want %d\n%s%s", store, code, ExitFindings, out, errs)
		}
		data, err := os.ReadFile(filepath.Join(dir, "traces", "cs3-consent-bypass", "CS_ConsentPreserved.itf.json"))
		if err != nil {
			t.Fatal(err)
		}
		var itf struct {
			States []map[string]any `json:"states"`
		}
		if err := json.Unmarshal(data, &itf); err != nil {
			t.Fatal(err)
		}
		states, _ := json.Marshal(itf.States)
		traces[store] = string(states)
	}
	for _, store := range []string{"hashcompact", "bitstate"} {
		if traces[store] != traces["exact"] {
			t.Errorf("%s trace %s\nexact %s", store, traces[store], traces["exact"])
		}
	}
}

func TestConformStoreFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "--model", "mcp", "--store", "bits"}, `--store: unknown store "bits" (want exact, hashcompact or bitstate)`},
		{[]string{"check", "--model", "mcp", "--store", "bitstate", "--bitstate-bits", "9"}, "--bitstate-bits 9: want 10 to 40 (an array of 2^10 to 2^40 bits)"},
		{[]string{"check", "--model", "mcp", "--store", "bitstate", "--bitstate-hashes", "0"}, "--bitstate-hashes 0: want 1 to 16"},
		{[]string{"check", "--model", "mcp", "--bitstate-bits", "20"}, "--bitstate-bits applies only to --store bitstate, not exact"},
		{[]string{"matrix", "--store", "hashcompact", "--bitstate-hashes", "2"}, "--bitstate-hashes applies only to --store bitstate, not hashcompact"},
		{[]string{"matrix", "--store", "HC4"}, `--store: unknown store "HC4" (want exact, hashcompact or bitstate)`},
	} {
		code, out, errs := runConformTest(t, tc.args...)
		if code != ExitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, want %d with %q\n%s%s", tc.args, code, ExitUsage, tc.want, out, errs)
		}
	}
}

// matrix with a partial store: the JSON says coverage "partial", stderr
// says why, and the exit code is 6.
func TestConformMatrixPartialStore(t *testing.T) {
	code, out, errs := runConformTest(t, "matrix", "--model", "mcp", "--store", "hashcompact", "--format", "json")
	if code != ExitPartial {
		t.Fatalf("exit %d, want %d\n%s", code, ExitPartial, errs)
	}
	var doc struct {
		Coverage string `json:"coverage"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Coverage != "partial" || !strings.Contains(out, `"coverage_note": "partial coverage: hash compaction, 64-bit fingerprints;`) ||
		!strings.Contains(errs, "partial coverage: ") {
		t.Errorf("coverage %q\nstderr %s", doc.Coverage, errs)
	}
}
