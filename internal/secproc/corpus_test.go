package secproc

import (
	"os"
	"strings"
	"testing"
)

// TestCorpusQuality measures the processor on the labelled corpus and
// requires recall ≥ 0.95 and a false-positive rate ≤ 2%, overall and on the
// held-out split alone. SECPROC_SPLIT=dev limits the test to the dev split
// while tuning, so that the held-out split stays unread.
func TestCorpusQuality(t *testing.T) {
	r, err := RunCorpus()
	if err != nil {
		t.Fatal(err)
	}
	splits := []struct {
		name string
		m    Metrics
	}{{"dev", r.Dev}, {"held-out", r.HeldOut}, {"all", r.All}}
	only := os.Getenv("SECPROC_SPLIT")
	for _, s := range splits {
		if only == "dev" && s.name != "dev" {
			continue
		}
		t.Logf("%s split:\n%s", s.name, s.m.Table())
		for _, miss := range s.m.Misses {
			t.Logf("  %s miss: %s %s %s [%s]", s.name, miss.ID, miss.Label, miss.Category, strings.Join(miss.Rules, ", "))
		}
		if s.name == "dev" {
			continue // the targets are measured where the detectors were not tuned
		}
		if s.m.Overall.Recall < 0.95 {
			t.Errorf("%s recall = %.3f, want ≥ 0.95", s.name, s.m.Overall.Recall)
		}
		if s.m.Overall.FPR > 0.02 {
			t.Errorf("%s false-positive rate = %.3f, want ≤ 0.02", s.name, s.m.Overall.FPR)
		}
	}
	if r.Dev.Overall.Recall < 0.95 || r.Dev.Overall.FPR > 0.02 {
		t.Errorf("dev: recall %.3f, FP rate %.3f; want ≥ 0.95 and ≤ 0.02", r.Dev.Overall.Recall, r.Dev.Overall.FPR)
	}
}

// TestCorpusSize holds the corpus to its promise: at least 200 benign and
// 200 malicious events, every category and every kind present, in both
// splits.
func TestCorpusSize(t *testing.T) {
	corpus, err := LoadCorpus()
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, l := range corpus {
		count[l.Label]++
		count[l.Split+"/"+l.Label+"/"+string(l.Category)]++
		count["kind/"+string(l.Event.Kind)]++
	}
	if count["benign"] < 200 || count["malicious"] < 200 {
		t.Errorf("corpus has %d benign and %d malicious events; want ≥ 200 each", count["benign"], count["malicious"])
	}
	for _, split := range []string{"dev", "heldout"} {
		for _, label := range []string{"benign", "malicious"} {
			for _, c := range Categories {
				if count[split+"/"+label+"/"+string(c)] < 10 {
					t.Errorf("%s split has %d %s %s events; want ≥ 10", split, count[split+"/"+label+"/"+string(c)], label, c)
				}
			}
		}
	}
	for _, k := range []Kind{KindToolCall, KindToolResult, KindToolDescription, KindResource, KindPrompt} {
		if count["kind/"+string(k)] == 0 {
			t.Errorf("no %s event in the corpus", k)
		}
	}
}
