package main

// The model checker against SPIN on the same models, in one run (issues 8
// and 20): states per second and bytes per state, native (2 workers,
// GOMAXPROCS 2) and SPIN (pan -O2, BFS, one process). First a generated
// model of exactly 10^7 states, then every built-in model plain and behind
// warden. SPIN's rate is its stored states over pan's own "elapsed time",
// the search alone: compilation and pan's start-up (allocating its hash
// table) are left out. Every target also requires the state counts the
// SPIN agreement test requires (docs/conform.md): SPIN stored = native + 1.

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/ir"
	"github.com/agentwarden/warden/internal/conform/models"
	"github.com/agentwarden/warden/internal/conform/promela"
)

// conformWorkers is the native checker's parallelism for the comparison:
// issue 8's target is stated for 2 cores.
const conformWorkers = 2

// conformRun is one model variant measured both ways.
type conformRun struct {
	model      *ir.Model
	states     int
	native     time.Duration // one exploration, averaged
	allocPer   float64       // heap bytes allocated per state
	spin       *promela.SpinResult
	spinSearch time.Duration // pan's own "elapsed time", the search alone (0.01 s resolution)
	spinFailed error
}

func (r *conformRun) equal() bool { return r.spin != nil && r.spin.Stored == r.states+1 }

func benchConform(ctx context.Context, add func(Result)) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(conformWorkers))
	all, err := models.All()
	if err != nil {
		log.Fatal(err)
	}
	spinOK := promela.SpinAvailable()
	dir, err := os.MkdirTemp("", "warden-bench-spin-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	benchGenerated(ctx, add, dir)

	// Every built-in model, plain and behind warden.
	runs := map[string][2]*conformRun{}
	var largest *conformRun
	for _, m := range all {
		var pair [2]*conformRun
		for i, v := range []*ir.Model{m, m.Guarded()} {
			r := measureNative(ctx, v)
			if spinOK {
				r.spin, r.spinFailed = promela.RunSpin(ctx, dir, v, "", true)
				if r.spin != nil {
					r.spinSearch = panSearch(r.spin.Output)
				}
			}
			if largest == nil || r.states > largest.states {
				largest = r
			}
			pair[i] = r
		}
		runs[m.Name] = pair
	}

	// One row per model: plain and behind warden together.
	var nStates, nSpin int
	var tNative, tSpin time.Duration
	allEqual := spinOK
	for _, m := range all {
		pair := runs[m.Name]
		states, stored := 0, 0
		var tn, ts time.Duration
		equal := spinOK
		for _, r := range pair {
			states += r.states
			tn += r.native
			if r.spin != nil {
				stored += r.spin.Stored
				ts += r.spinSearch
			}
			equal = equal && r.equal()
		}
		nStates, nSpin, tNative, tSpin = nStates+states, nSpin+stored, tNative+tn, tSpin+ts
		allEqual = allEqual && equal
		name := "conform: " + m.Name + " (plain + warden): native / SPIN rate"
		if !spinOK {
			add(Result{Name: name, Note: fmt.Sprintf("SPIN not measured (no spin and gcc: run make deps); native %.0f states/s, %d states", rate(states, tn), states)})
			continue
		}
		add(conformTarget(name, pair[:], states, tn, stored, ts, equal))
	}
	if spinOK {
		add(conformTarget("conform: all models: native / SPIN rate", nil, nStates, tNative, nSpin, tSpin, allEqual))
	}

	// The largest variant in detail, and its peak memory.
	lg := largest
	about := fmt.Sprintf("%s (%d-bit state vector)", lg.model.Name, lg.model.StateBits())
	add(Result{Name: "conform: largest model: states", Value: float64(lg.states), Unit: "states", Note: about})
	add(Result{Name: "conform: largest model: native rate (2 workers)", Value: rate(lg.states, lg.native), Unit: "states/s"})
	add(Result{Name: "conform: largest model: native heap allocated per state", Value: lg.allocPer, Unit: "B",
		Note: "every allocation of one exploration, divided by its states"})
	peak := peakHeap(ctx, lg.model)
	add(Result{Name: "conform: largest model: native peak heap per state", Value: float64(peak) / float64(lg.states), Unit: "B",
		Note: "the peak below, divided by the states"})
	add(Result{Name: "conform: largest model: native peak Go heap", Value: float64(peak) / (1 << 20), Unit: "MiB",
		Note: "Go heap high-water mark (live and not yet swept objects, sampled after every BFS level), above the heap before the check; not RSS"})
	if !spinOK {
		add(Result{Name: "conform: largest model: SPIN rate", Note: "not measured: no spin and gcc (run make deps)"})
		return
	}
	if lg.spinFailed != nil {
		log.Fatal(lg.spinFailed)
	}
	sr := lg.spin
	add(Result{Name: "conform: largest model: SPIN stored states", Value: float64(sr.Stored), Unit: "states",
		Note: "documented and tested relation: SPIN stored = native states + 1 (SPIN's initial control state)"})
	add(Result{Name: "conform: largest model: SPIN process rate (pan -O2, BFS)", Value: rate(sr.Stored, sr.Elapsed), Unit: "states/s",
		Note: "stored states over the pan process's run, compile excluded, start-up included: on models this small, allocating its 128 MiB hash table dominates; the ratios use pan's own search time instead"})
	add(Result{Name: "conform: largest model: SPIN memory per state", Value: sr.StateBytes / float64(sr.Stored), Unit: "B",
		Note: "pan's \"equivalent memory usage for states (stored*(State-vector + overhead))\" / stored; printed to 0.001 MiB"})
	add(Result{Name: "conform: largest model: SPIN total memory", Value: sr.TotalBytes / (1 << 20), Unit: "MiB",
		Note: "pan's \"total actual memory usage\": mostly its fixed hash table (-w24)"})
	add(conformTarget("conform: largest model: native / SPIN rate", []*conformRun{lg}, lg.states, lg.native, sr.Stored, lg.spinSearch, lg.equal()))
}

// panMinSearch is the shortest pan search a rate is computed from: pan
// prints its time in steps of 0.01 s.
const panMinSearch = time.Second

// panSearch reads pan's own "elapsed time" (the search, without start-up);
// 0 when pan printed none or under its 0.01 s resolution.
func panSearch(out string) time.Duration {
	m := panElapsedRE.FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	secs, _ := strconv.ParseFloat(m[1], 64)
	return time.Duration(secs * float64(time.Second))
}

// conformTarget is a native/SPIN rate row whose target needs ≥ 0.5 and the
// agreement test's state counts on every variant measured.
func conformTarget(name string, runs []*conformRun, states int, tn time.Duration, stored int, ts time.Duration, equal bool) Result {
	for _, r := range runs {
		if r.spinFailed != nil {
			return Result{Name: name, Note: "SPIN failed on " + r.model.Name + ": " + firstLine(r.spinFailed.Error())}
		}
	}
	if ts < panMinSearch {
		return Result{Name: name, Skipped: fmt.Sprintf("pan's search took %v for %d stored states, too short to time with its 0.01 s clock: see the generated model's row", ts, stored)}
	}
	native, spin := rate(states, tn), rate(stored, ts)
	note := fmt.Sprintf("native %.0f states/s, SPIN %.0f states/s; %d states, SPIN stored %d (one more per variant)", native, spin, states, stored)
	if !equal {
		note += " (NOT the documented SPIN = native + 1 per variant)"
	}
	return target(Result{Name: name, Value: native / spin, Unit: "×", Target: "≥ 0.5, SPIN stored = states + 1", Note: note},
		native/spin >= 0.5 && equal)
}

// measureNative explores m completely, repeatedly for at least 200ms, on
// conformWorkers workers.
func measureNative(ctx context.Context, m *ir.Model) *conformRun {
	p, err := check.Compile(m)
	if err != nil {
		log.Fatal(err)
	}
	opts := check.Options{Workers: conformWorkers}
	first, _ := check.Check(ctx, p, "", opts) // warm up; the state count
	if first.Status != check.Holds {
		log.Fatalf("%s: exploration %s (%s)", m.Name, first.Status, first.Reason)
	}
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	n, start := 0, time.Now()
	for n == 0 || time.Since(start) < 200*time.Millisecond {
		if r, _ := check.Check(ctx, p, "", opts); r.States != first.States {
			log.Fatalf("%s: %d states, then %d", m.Name, first.States, r.States)
		}
		n++
	}
	el := time.Since(start)
	runtime.ReadMemStats(&ms1)
	return &conformRun{model: m, states: first.States, native: el / time.Duration(n),
		allocPer: float64(ms1.TotalAlloc-ms0.TotalAlloc) / float64(n) / float64(first.States)}
}

// peakHeap explores m once and returns the high-water mark of the Go heap's
// object bytes above their level before the check, sampled after every BFS
// level and at the end (the store only grows, so its end is its peak).
func peakHeap(ctx context.Context, m *ir.Model) uint64 {
	p, err := check.Compile(m)
	if err != nil {
		log.Fatal(err)
	}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	base := read()
	peak := base
	check.Check(ctx, p, "", check.Options{Workers: conformWorkers, ProgressEvery: time.Nanosecond,
		Progress: func(check.Progress) { peak = max(peak, read()) }})
	return peak - base
}

func rate(states int, d time.Duration) float64 { return float64(states) / max(d.Seconds(), 1e-9) }

func firstLine(s string) string { line, _, _ := strings.Cut(s, "\n"); return line }

// The generated model of the 10⁷-state rows (issue 20): CountersModel(7,
// 10) has exactly 10^7 states, so SPIN must store 10^7 + 1.
const (
	genCounters, genBound = 7, 10
	genRounds             = 2 // of the checker; SPIN runs once
	// genHashBits sizes pan's hash table for the model (-w25: 2^25 slots
	// for 10^7 states, a load of 0.3) rather than its default -w24, which
	// at 10^7 states chains most of them and slows SPIN several times.
	genHashBits = 25
)

// genStates is the generated model's state count, genBound^genCounters.
func genStates() int {
	n := 1
	for range genCounters {
		n *= genBound
	}
	return n
}

// panRun is one run of pan on the generated model.
type panRun struct {
	stored     int
	search     time.Duration // pan's own "elapsed time": the search, without start-up
	wall       time.Duration // the pan process, start to exit
	totalBytes float64       // "total actual memory usage"
}

var (
	panElapsedRE = regexp.MustCompile(`pan: elapsed time ([\d.e+]+) seconds`)
	panStoredRE  = regexp.MustCompile(`(\d+) states, stored`)
	panTotalRE   = regexp.MustCompile(`(?m)^\s*([\d.]+)\s+total actual memory usage`)
)

// benchGenerated pairs the checker and SPIN on the generated model, the
// checker over genRounds rounds around one SPIN run: states per second
// (the checker's whole Check on conformWorkers workers against pan's own
// search time, which leaves out its compilation and start-up) and memory
// per stored state (the checker process's peak RSS against pan's total
// actual memory, its hash table included).
func benchGenerated(ctx context.Context, add func(Result), dir string) {
	const rateName = "conform: generated model ≥ 10⁷ states: warden ÷ SPIN BFS states/s"
	const memName = "conform: generated model ≥ 10⁷ states: bytes per stored state, warden ÷ SPIN"
	m, ds := ir.Load([]byte(check.CountersModel(genCounters, genBound)), "counters.yaml", ir.LintOptions{})
	if ds.HasErrors() {
		log.Fatal(ds)
	}
	p, err := check.Compile(m)
	if err != nil {
		log.Fatal(err)
	}
	want := genStates()
	about := fmt.Sprintf("%s: %d counters 0..%d, Inc and Move transitions, exactly %d states (%d-bit state vector)",
		m.Name, genCounters, genBound-1, want, m.StateBits())
	if !promela.SpinAvailable() {
		for _, name := range []string{rateName, memName, bitstateRateName, bitstateMemName, hcRateName, hcMemName} {
			add(Result{Name: name, Skipped: "no spin and gcc (run make deps)"})
		}
		return
	}
	pan, err := buildPan(ctx, dir, m, "pan")
	if err != nil {
		log.Fatal(err)
	}
	var rates, mems, wRate, wMem, wRSS, wFull []float64
	var s *panRun
	equal := true
	states := 0
	for round := range genRounds {
		w, peak, rss := runGenerated(ctx, p, check.Options{})
		if round == 0 {
			// One SPIN run between the checker's rounds: it takes about
			// 80 s of CPU, and a second would put this section over 3
			// minutes. pan's search is the same work every run.
			if s, err = runPan(ctx, pan, fmt.Sprintf("-w%d", genHashBits)); err != nil {
				log.Fatal(err)
			}
		}
		states = w.States
		equal = equal && w.States == want && s.stored == want+1
		wr, sr := rate(w.States, w.Elapsed), rate(s.stored, s.search)
		wb, sb := float64(peak)/float64(w.States), s.totalBytes/float64(s.stored)
		// The memory compared is the process's (RSS), as pan's is, when
		// Linux reports it; else the Go heap's.
		wm := float64(rss) / float64(w.States)
		if rss == 0 {
			wm = wb
		}
		rates, mems = append(rates, wr/sr), append(mems, wm/sb)
		wRate, wMem, wRSS, wFull = append(wRate, wr), append(wMem, wb), append(wRSS, wm), append(wFull, wm)
		log.Printf("conform generated: warden %d states in %v (%.0f/s, heap %.1f B/state, RSS %.1f B/state); pan %d stored, search %v, process %v (%.0f/s, %.1f B/state)",
			w.States, w.Elapsed.Round(time.Millisecond), wr, wb, float64(rss)/float64(w.States), s.stored, s.search, s.wall.Round(time.Millisecond), sr, sb)
	}
	counts := fmt.Sprintf("warden %d states, SPIN stored %d; min–max over %d checker rounds against one SPIN run", states, s.stored, genRounds)
	if !equal {
		counts += fmt.Sprintf(" (NOT %d and %d + 1)", want, want)
	}
	add(Result{Name: "conform: generated model: states", Value: float64(states), Unit: "states", Note: about})
	add(spread(Result{Name: "conform: generated model: warden rate (2 workers)", Unit: "states/s",
		Note: "one whole Check, compile excluded"}, wRate))
	add(Result{Name: "conform: generated model: SPIN rate (pan -O2, BFS)", Value: rate(s.stored, s.search), Unit: "states/s",
		Note: fmt.Sprintf("stored states over pan's own \"elapsed time\" (%v, the search; compilation and start-up excluded; the process ran %v); -w%d",
			s.search, s.wall.Round(10*time.Millisecond), genHashBits)})
	add(spread(Result{Name: "conform: generated model: warden peak heap per state", Unit: "B",
		Note: "Go heap high-water mark (live and not yet swept objects, sampled after every level) above the heap before the check, over the states"}, wMem))
	add(spread(Result{Name: "conform: generated model: warden peak memory per state", Unit: "B",
		Note: "the process's peak RSS (VmHWM, reset before the check) above its RSS before, over the states: what the ratio below compares (the Go heap's when /proc cannot say)"}, wRSS))
	add(Result{Name: "conform: generated model: SPIN memory per stored state", Value: s.totalBytes / float64(s.stored), Unit: "B",
		Note: fmt.Sprintf("pan's \"total actual memory usage\" (states, queue and its -w%d hash table) over stored states", genHashBits)})
	r := spread(Result{Name: rateName, Unit: "×", Target: "≥ 1.0, equal state counts", Note: counts}, rates)
	add(target(r, *r.Min >= 1.0 && equal))
	r = spread(Result{Name: memName, Unit: "×", Target: "≤ 1.0, equal state counts", Note: counts}, mems)
	add(target(r, *r.Max <= 1.0 && equal))
	hc, bs := benchPartial(ctx, add, p, want, median(wRate), median(wFull))
	benchSpinPartial(ctx, add, dir, m, want, hc, bs)
}

// partialRun is one run of the checker with a partial store.
type partialRun struct {
	states int
	rate   float64 // states per second, the whole Check
	mem    float64 // bytes of peak memory per stored state (RSS, else Go heap)
}

// benchPartial runs the generated model once with hash compaction and once
// with bitstate (SPIN's default -w27 -k3), beside the exact rounds:
// states, states per second and memory per state, measured as
// runGenerated measures the exact search. benchSpinPartial pairs them with
// pan's -DHC4 and -DBITSTATE builds.
func benchPartial(ctx context.Context, add func(Result), p *check.Program, want int, exactRate, exactMem float64) (hcRun, bsRun partialRun) {
	hc, heap, rss := runGenerated(ctx, p, check.Options{Store: check.StoreHashCompact})
	mem := float64(rss) / float64(hc.States)
	if rss == 0 {
		mem = float64(heap) / float64(hc.States)
	}
	hr := rate(hc.States, hc.Elapsed)
	log.Printf("conform generated, hash compaction: %d states in %v (%.0f/s, heap %.1f B/state, RSS %.1f B/state); %s",
		hc.States, hc.Elapsed.Round(time.Millisecond), hr, float64(heap)/float64(hc.States), float64(rss)/float64(hc.States), hc.Label())
	add(Result{Name: "conform: generated model: hash compaction states", Value: float64(hc.States), Unit: "states",
		Note: hc.Coverage.String()})
	add(Result{Name: "conform: generated model: hash compaction rate (2 workers)", Value: hr, Unit: "states/s",
		Note: fmt.Sprintf("one Check with --store hashcompact; exact mode's median %.0f states/s (%.2f×)", exactRate, hr/exactRate)})
	add(Result{Name: "conform: generated model: hash compaction peak memory per state", Value: mem, Unit: "B",
		Note: fmt.Sprintf("peak RSS above the RSS before, as for exact mode; Go heap high-water mark %.1f B/state", float64(heap)/float64(hc.States))})
	add(target(Result{Name: "conform: generated model: bytes per state, hash compaction ÷ exact", Value: mem / exactMem, Unit: "×",
		Target: "< 1.0, equal state counts", Note: fmt.Sprintf("%.1f B against exact mode's median %.1f B; %d states", mem, exactMem, hc.States)},
		mem < exactMem && hc.States == want))

	bs, bheap, brss := runGenerated(ctx, p, check.Options{Store: check.StoreBitstate})
	bmem := float64(brss) / float64(bs.States)
	if brss == 0 {
		bmem = float64(bheap) / float64(bs.States)
	}
	log.Printf("conform generated, bitstate: %d states in %v (%.0f/s, heap %.1f B/state, RSS %.1f B/state); %s",
		bs.States, bs.Elapsed.Round(time.Millisecond), rate(bs.States, bs.Elapsed), float64(bheap)/float64(bs.States), bmem, bs.Label())
	add(Result{Name: "conform: generated model: bitstate states stored", Value: float64(bs.States), Unit: "states",
		Note: fmt.Sprintf("of %d; %s", want, bs.Coverage.String())})
	add(Result{Name: "conform: generated model: bitstate rate (2 workers)", Value: rate(bs.States, bs.Elapsed), Unit: "states/s",
		Note: "one Check with --store bitstate (2^27 bits, 3 hashes, as pan's -w27 -k3)"})
	add(Result{Name: "conform: generated model: bitstate peak memory per state", Value: bmem, Unit: "B",
		Note: "peak RSS above the RSS before: the fixed 16 MiB array, the links and two levels' words"})
	return partialRun{states: hc.States, rate: hr, mem: mem}, partialRun{states: bs.States, rate: rate(bs.States, bs.Elapsed), mem: bmem}
}

// The rows pairing the checker's partial stores with pan's on the
// generated model.
const (
	bitstateRateName = "conform: generated model, bitstate (partial coverage): warden ÷ SPIN states/s"
	bitstateMemName  = "conform: generated model, bitstate (partial coverage): bytes per stored state, warden ÷ SPIN"
	hcRateName       = "conform: generated model, hash compaction (partial coverage): warden ÷ SPIN -DHC4 states/s"
	hcMemName        = "conform: generated model, hash compaction (partial coverage): bytes per stored state, warden ÷ SPIN -DHC4"
	// pairedCoverage is the share of the model's states each side must
	// store for a partial pairing to be a like-for-like comparison.
	pairedCoverage = 0.99
)

// benchSpinPartial runs pan's bitstate build (-DBITSTATE -w27 -k3:
// Holzmann's supertrace with the checker's default array and hashes) and
// its hash compaction build (-DHC4, -w25) on the generated model, in BFS
// mode as the exact pairing runs it, and pairs each with the checker's run
// of the same kind of store: states stored, states per second (pan's own
// search time against the checker's whole Check) and memory per stored
// state (pan's total actual memory against the checker's peak RSS). Both
// sides are partial coverage and may miss states, so a ratio is a target
// only when each side stored at least pairedCoverage of the states (they
// did the same work); otherwise the row is skipped and says what each
// stored. SPIN 6.5.2's -DHC4 is such a case on this model: with a table
// of at most 2^32 slots pan hashes a state with d_sfh, a 32-bit hash, and
// compacts it to that hash (K2, the rest of the fingerprint, is set only
// by its 64-bit hash), and it takes most of this model's states for
// visited ones.
func benchSpinPartial(ctx context.Context, add func(Result), dir string, m *ir.Model, want int, hc, bs partialRun) {
	for _, c := range []struct {
		store, bin        string
		w                 partialRun
		flags, args       []string
		rateName, memName string
		about             string
	}{
		{"bitstate", "pan-bitstate", bs, []string{"-DBITSTATE"}, []string{"-w27", "-k3"}, bitstateRateName, bitstateMemName,
			"pan -O2, BFS, -DBITSTATE -w27 -k3 (2^27 bits, 3 hashes: warden's defaults)"},
		{"hash compaction", "pan-hc4", hc, []string{"-DHC4"}, []string{fmt.Sprintf("-w%d", genHashBits)}, hcRateName, hcMemName,
			fmt.Sprintf("pan -O2, BFS, -DHC4 -w%d", genHashBits)},
	} {
		pan, err := buildPan(ctx, dir, m, c.bin, c.flags...)
		var s *panRun
		if err == nil {
			s, err = runPan(ctx, pan, c.args...)
		}
		if err != nil {
			for _, name := range []string{c.rateName, c.memName} {
				add(Result{Name: name, Skipped: "SPIN failed: " + firstLine(err.Error())})
			}
			continue
		}
		sr, sb := rate(s.stored, s.search), s.totalBytes/float64(s.stored)
		log.Printf("conform generated, SPIN %s: %d stored in %v (process %v; %.0f/s, %.1f B/state)",
			c.store, s.stored, s.search, s.wall.Round(time.Millisecond), sr, sb)
		add(Result{Name: "conform: generated model: SPIN " + c.store + " states stored", Value: float64(s.stored), Unit: "states",
			Note: fmt.Sprintf("%s; of %d + 1; partial coverage: what pan did not store it did not check", c.about, want)})
		add(Result{Name: "conform: generated model: SPIN " + c.store + " rate", Value: sr, Unit: "states/s",
			Note: fmt.Sprintf("stored states over pan's own \"elapsed time\" (%v; the process ran %v)", s.search, s.wall.Round(10*time.Millisecond))})
		add(Result{Name: "conform: generated model: SPIN " + c.store + " memory per stored state", Value: sb, Unit: "B",
			Note: "pan's \"total actual memory usage\" (its bit array or table, and its BFS queue of whole states) over stored states"})
		counts := fmt.Sprintf("warden stored %d, SPIN %d, of %d states; partial coverage on both sides", c.w.states, s.stored, want)
		if float64(c.w.states) < pairedCoverage*float64(want) || float64(s.stored) < pairedCoverage*float64(want) {
			why := fmt.Sprintf("not paired: %s, and a side that stored under %.0f%% of them did less work", counts, 100*pairedCoverage)
			if c.store == "hash compaction" {
				why += "; SPIN 6.5.2's -DHC4 below -w33 compacts a state to its 32-bit d_sfh hash, which takes most of this model's states for visited ones"
			}
			for _, name := range []string{c.rateName, c.memName} {
				add(Result{Name: name, Skipped: why})
			}
			continue
		}
		add(target(Result{Name: c.rateName, Value: c.w.rate / sr, Unit: "×", Target: "≥ 1.0, both store ≥ 99% of the states",
			Note: fmt.Sprintf("warden %.0f states/s (2 workers, one Check), SPIN %.0f; %s", c.w.rate, sr, counts)}, c.w.rate >= sr))
		add(target(Result{Name: c.memName, Value: c.w.mem / sb, Unit: "×", Target: "≤ 1.0, both store ≥ 99% of the states",
			Note: fmt.Sprintf("warden %.1f B (peak RSS), SPIN %.1f B (total actual memory); %s", c.w.mem, sb, counts)}, c.w.mem <= sb))
	}
}

// runGenerated explores p once on conformWorkers workers with the store
// opts names and returns the result, the Go heap's high-water mark above
// its level before (sampled after every level), and the process's peak
// RSS above its RSS before (0 when Linux's /proc cannot reset and report
// it).
func runGenerated(ctx context.Context, p *check.Program, opts check.Options) (r *check.Result, heap, rss uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	debug.FreeOSMemory()
	rss0, rssOK := procStatus("VmRSS")
	// Writing 5 to clear_refs resets the peak RSS (VmHWM) to the current RSS.
	rssOK = rssOK && os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	base := read()
	peak := base
	opts.Workers, opts.MaxStates, opts.ProgressEvery = conformWorkers, 2*genStates(), time.Nanosecond
	opts.Progress = func(check.Progress) { peak = max(peak, read()) }
	r, err := check.Check(ctx, p, "", opts)
	if err != nil || r.Status != check.Holds {
		log.Fatalf("generated model: %s (%s) after %d states, %v", r.Status, r.Reason, r.States, err)
	}
	if hwm, ok := procStatus("VmHWM"); rssOK && ok && hwm > rss0 {
		rss = hwm - rss0
	}
	return r, peak - base, rss
}

// procStatus reads a size in kB from /proc/self/status, in bytes.
func procStatus(field string) (uint64, bool) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// buildPan emits m as Promela into dir and compiles its verifier as
// promela.RunSpin does (spin -o2, gcc -O2 -DBFS -DSAFETY -DNOREDUCE), plus
// flags (-DBITSTATE, -DHC4), into the binary name; it returns the
// verifier's path.
func buildPan(ctx context.Context, dir string, m *ir.Model, name string, flags ...string) (string, error) {
	dir = filepath.Join(dir, "generated")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var src bytes.Buffer
	if err := promela.Emit(&src, m); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "model.pml"), src.Bytes(), 0o644); err != nil {
		return "", err
	}
	gcc := append(append([]string{"gcc", "-O2", "-DBFS", "-DSAFETY", "-DNOREDUCE"}, flags...), "-w", "-o", name, "pan.c")
	for _, c := range [][]string{{"spin", "-o2", "-a", "model.pml"}, gcc} {
		cmd := exec.CommandContext(ctx, c[0], c[1:]...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("%s: %v\n%s", strings.Join(c, " "), err, out)
		}
	}
	return filepath.Join(dir, name), nil
}

// runPan runs the verifier at pan with args (its table size) and reads
// its stored states, its own search time and its total memory.
func runPan(ctx context.Context, pan string, args ...string) (*panRun, error) {
	cmd := exec.CommandContext(ctx, pan, append([]string{"-m1000000"}, args...)...)
	cmd.Dir = filepath.Dir(pan)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	r := &panRun{wall: time.Since(start)}
	if err != nil {
		return nil, fmt.Errorf("pan: %v\n%s", err, out)
	}
	sm, em, tm := panStoredRE.FindSubmatch(out), panElapsedRE.FindSubmatch(out), panTotalRE.FindSubmatch(out)
	if sm == nil || em == nil || tm == nil {
		return nil, fmt.Errorf("pan: unexpected output\n%s", out)
	}
	r.stored, _ = strconv.Atoi(string(sm[1]))
	secs, _ := strconv.ParseFloat(string(em[1]), 64)
	r.search = time.Duration(secs * float64(time.Second))
	mib, _ := strconv.ParseFloat(string(tm[1]), 64)
	r.totalBytes = mib * (1 << 20)
	return r, nil
}
