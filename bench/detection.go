package main

// Detection measured on data the detectors never saw (issue 17): the
// security processor on the external corpus's held-out sources, public
// payload lists and text from pinned registry packages that scripts/deps.sh
// unpacks into the dependency cache.

import (
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/agentwarden/warden/internal/secproc"
)

func benchDetection(add func(Result)) {
	r, err := secproc.RunExternalCorpus(secproc.DepsDir())
	if errors.Is(err, secproc.ErrNoExternalCorpus) {
		log.Printf("detection: skipped: %v", err)
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	held := strings.Join(r.Sources[secproc.SplitHeldOut], ", ")
	for _, cat := range secproc.Categories {
		c, ok := r.HeldOut.ByCategory[cat]
		if !ok {
			continue
		}
		counts := fmt.Sprintf("%d of %d malicious held-out cases", c.TP, c.TP+c.FN)
		note := counts + "; held-out sources: " + held
		met := c.Recall >= 0.90
		if !met {
			note = "target not met: " + note
		}
		add(target(Result{Name: "detection recall, held-out, " + string(cat), Value: c.Recall, Unit: "",
			Target: "≥ 0.90", Note: note}, met))
		note = fmt.Sprintf("%d of %d benign held-out cases flagged", c.FP, c.FP+c.TN)
		met = c.FPR <= 0.02
		if !met {
			note = "target not met: " + note
		}
		add(target(Result{Name: "detection false-positive rate, held-out, " + string(cat), Value: c.FPR, Unit: "",
			Target: "≤ 0.02", Note: note}, met))
	}
	// The held-out sources whose misses no one has read: the estimate on
	// unseen data (the others were read in an earlier round and are spent).
	var unspent []string
	for _, src := range r.Sources[secproc.SplitHeldOut] {
		if sr, ok := r.PerSource[src]; !ok || sr.Spent == "" {
			unspent = append(unspent, src)
		}
	}
	for _, cat := range secproc.Categories {
		c, ok := r.Unspent.ByCategory[cat]
		if !ok || c.TP+c.FN == 0 {
			continue
		}
		met := c.Recall >= 0.90
		note := fmt.Sprintf("%d of %d malicious cases of held-out sources never read; %d of %d benign flagged; sources: %s",
			c.TP, c.TP+c.FN, c.FP, c.FP+c.TN, strings.Join(unspent, ", "))
		if !met {
			note = "target not met: " + note
		}
		add(target(Result{Name: "detection recall, held-out unspent, " + string(cat), Value: c.Recall, Unit: "",
			Target: "≥ 0.90", Note: note}, met))
		met = c.FPR <= 0.02
		note = fmt.Sprintf("%d of %d benign cases of held-out sources never read flagged", c.FP, c.FP+c.TN)
		if !met {
			note = "target not met: " + note
		}
		add(target(Result{Name: "detection false-positive rate, held-out unspent, " + string(cat), Value: c.FPR, Unit: "",
			Target: "≤ 0.02", Note: note}, met))
	}
	for _, src := range r.Sources[secproc.SplitHeldOut] {
		sr, ok := r.PerSource[src]
		if !ok {
			continue
		}
		note := fmt.Sprintf("%d of %d malicious cases", sr.Detected, sr.Malicious)
		if sr.FirstMeasured != "" {
			note += "; the detectors of the day it was added: " + sr.FirstMeasured
		}
		if sr.Spent != "" {
			note += "; spent (" + sr.Spent + "): not an estimate on unseen data"
		}
		add(Result{Name: "detection recall, held-out source " + src, Value: sr.Recall(), Unit: "", Note: note})
	}
	c := r.FreeTextHeldOut.Overall
	add(target(Result{Name: "detection false-positive rate, held-out, benign free text", Value: c.FPR, Unit: "",
		Target: "≤ 0.02", Note: fmt.Sprintf("%d of %d prose and code arguments (message, body, search, content, …) flagged", c.FP, c.FP+c.TN)},
		c.FPR <= 0.02))
	t := r.Tuning.Overall
	add(Result{Name: "detection recall, tuning sources", Value: t.Recall, Unit: "",
		Note: fmt.Sprintf("%d of %d; FP rate %.3f on %d benign; sources: %s (read while changing the detectors: not a measurement)",
			t.TP, t.TP+t.FN, t.FPR, t.FP+t.TN, strings.Join(r.Sources[secproc.SplitTuning], ", "))})
}
