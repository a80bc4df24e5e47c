//go:build integration

package secproc

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
)

var external struct {
	once sync.Once
	r    ExternalReport
	err  error
}

// externalReport runs the external corpus once per test binary, skipping
// when scripts/deps.sh has not installed it (unless WARDEN_REQUIRE_DEPS=1).
func externalReport(t *testing.T) ExternalReport {
	t.Helper()
	external.once.Do(func() { external.r, external.err = RunExternalCorpus(DepsDir()) })
	r, err := external.r, external.err
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
	// Recall per held-out source: the misses counted, not shown.
	for _, src := range r.Sources[SplitHeldOut] {
		if n, ok := r.PerSource[src]; ok {
			spent := "unspent"
			if n.Spent != "" {
				spent = "spent: " + n.Spent
			}
			if n.FirstMeasured != "" {
				spent += "; first measured " + n.FirstMeasured
			}
			t.Logf("held-out %s: %d malicious, recall %.3f (%s)", src, n.Malicious, n.Recall(), spent)
		}
	}
	for _, s := range []struct {
		name string
		m    Metrics
	}{{SplitTuning, r.Tuning}, {SplitHeldOut, r.HeldOut}, {"unspent " + SplitHeldOut, r.Unspent},
		{"free-text " + SplitTuning, r.FreeTextTuning},
		{"free-text " + SplitHeldOut, r.FreeTextHeldOut}} {
		t.Logf("%s (%s):\n%s", s.name, strings.Join(r.Sources[s.name], ", "), s.m.Table())
		if os.Getenv("SECPROC_MISSES") == s.name {
			for _, miss := range s.m.Misses {
				c := byID[miss.ID]
				body := c.Event.Arguments
				if len(body) == 0 {
					body = c.Event.Content
				}
				t.Logf("  miss: %s (%s) %s %s [%s] %s %s", miss.ID, c.Where, miss.Label, miss.Category,
					strings.Join(miss.Rules, ", "), c.Event.Tool, body)
			}
		}
	}
}

// Floors of the held-out measurement, per category: a regression guard set
// from the third round's measurement of 2026-11-28 (command injection
// 0.870, injected instructions 0.667, file access 0.888; see
// docs/security-processor.md), not the targets (recall ≥ 0.90 and FP rate
// ≤ 0.02), which no category meets. File access was 0.914 on the sources
// of the first two rounds and its floor 0.90; wfuzz's two dirTraversal
// lists, added unread in the third round (1 718 paths), measured 0.760,
// then 0.882 after the traversal-by-meaning change, and the floor follows
// the larger corpus. So did injected instructions': the fourth round
// added ecc-agentshield's 70 payloads, unread, on which the unchanged
// detectors recall 0.586, and held-out injected instructions fell from
// 0.667 (27 cases) to 0.608 (97); after the directive-by-parts detector,
// 0.657 there and 0.660 held out, and the floor is 0.65. The fifth round
// added 846 traversal paths and 9 injected instructions, unread
// (unchanged detectors: file access 0.884 on 2 700, injected
// instructions 0.613 on 106); after its changes, file access 0.911 and
// injected instructions 0.642, and the floors follow.
// Raise a floor when the detectors get better; never lower one to make a
// change pass. minMalicious and minBenign keep the guard from passing on a
// corpus that lost its cases.
var externalFloors = []struct {
	cat                     Category
	minRecall, maxFPR       float64
	minMalicious, minBenign int
}{
	{FileAccess, 0.90, 0.02, 2700, 900},
	{CommandInjection, 0.85, 0.02, 23, 1500},
	{InjectedInstructions, 0.63, 0.02, 106, 1500},
}

// unspentFloors guard the held-out sources whose misses no one has read
// (8 command-injection, 86 injected-instruction and 2 572 file-access
// cases in the fifth round: one case moves recall by 0.125, 0.012 and
// 0.0004). Injected instructions measured 0.628 there (54 of 86), mostly
// ecc-agentshield's payloads, and file access 0.909.
var unspentFloors = []struct {
	cat                     Category
	minRecall, maxFPR       float64
	minMalicious, minBenign int
}{
	{FileAccess, 0.90, 0.02, 2500, 900},
	{CommandInjection, 0.95, 0.02, 8, 1500},
	{InjectedInstructions, 0.62, 0.02, 86, 1500},
}

// TestExternalCorpusFloors fails when the processor's recall or false
// positive rate on the held-out sources, which the detectors were never
// tuned on, falls past its floor; and when benign free text is flagged
// more than 2% of the time.
func TestExternalCorpusFloors(t *testing.T) {
	r := externalReport(t)
	for _, f := range externalFloors {
		c := r.HeldOut.ByCategory[f.cat]
		if c.TP+c.FN < f.minMalicious || c.TN+c.FP < f.minBenign {
			t.Errorf("%s: held-out has %d malicious and %d benign cases; want ≥ %d and ≥ %d",
				f.cat, c.TP+c.FN, c.TN+c.FP, f.minMalicious, f.minBenign)
			continue
		}
		if c.Recall < f.minRecall {
			t.Errorf("%s: held-out recall %.3f (%d/%d), floor %.2f", f.cat, c.Recall, c.TP, c.TP+c.FN, f.minRecall)
		}
		if c.FPR > f.maxFPR {
			t.Errorf("%s: held-out FP rate %.3f (%d/%d), ceiling %.2f", f.cat, c.FPR, c.FP, c.FP+c.TN, f.maxFPR)
		}
	}
	for _, f := range unspentFloors {
		c := r.Unspent.ByCategory[f.cat]
		if c.TP+c.FN < f.minMalicious || c.TN+c.FP < f.minBenign {
			t.Errorf("%s: unspent held-out has %d malicious and %d benign cases; want ≥ %d and ≥ %d",
				f.cat, c.TP+c.FN, c.TN+c.FP, f.minMalicious, f.minBenign)
			continue
		}
		if c.Recall < f.minRecall {
			t.Errorf("%s: unspent held-out recall %.3f (%d/%d), floor %.2f", f.cat, c.Recall, c.TP, c.TP+c.FN, f.minRecall)
		}
		if c.FPR > f.maxFPR {
			t.Errorf("%s: unspent held-out FP rate %.3f (%d/%d), ceiling %.2f", f.cat, c.FPR, c.FP, c.FP+c.TN, f.maxFPR)
		}
	}
	for name, m := range map[string]Metrics{SplitTuning: r.FreeTextTuning, SplitHeldOut: r.FreeTextHeldOut} {
		c := m.Overall
		if c.TN+c.FP < 1500 {
			t.Errorf("free text, %s: %d benign cases; want ≥ 1500", name, c.TN+c.FP)
		} else if c.FPR > 0.02 {
			t.Errorf("free text, %s: FP rate %.3f (%d/%d), ceiling 0.02", name, c.FPR, c.FP, c.FP+c.TN)
		}
	}
}
