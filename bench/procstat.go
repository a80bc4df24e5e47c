package main

// CPU accounting of the floors section. A process's CPU time is read in
// nanoseconds from its process CPU clock (clock_gettime(2) on the clock id
// of pid: the scheduler's run time of all its threads, live and exited),
// where /proc/PID/stat counts 10 ms ticks; /proc/PID/task/*/schedstat gives
// the same run time per live thread and, beside it, the time each waited on
// a run queue. Where the clock cannot be read, procCPU falls back to the
// ticks and cpuAccounting says so.
//
// Host noise is read around every measured window: steal and iowait from
// /proc/stat, the CPU time that processes outside this process's tree
// used (the machine's busy time minus ours), CPU pressure from
// /proc/pressure/cpu and the load average.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// clockTick is the unit of utime and stime in /proc/PID/stat: USER_HZ,
// which Linux fixes at 100 for user space whatever the kernel's own HZ.
const clockTick = 10 * time.Millisecond

// procClockCPU reads the CPU clock of process pid (0: this process): the
// run time of all its threads, in nanoseconds. Linux names a process's
// clock (~pid << 3) | CPUCLOCK_SCHED.
func procClockCPU(pid int) (time.Duration, error) {
	const cpuclockSched = 2
	id := int32(cpuclockSched)
	if pid != 0 {
		// A clockid_t is 32 bits: a pid beyond Linux's limit (2^22)
		// would wrap around to another process's clock, or this one's.
		if pid < 0 || pid > 1<<22 {
			return 0, fmt.Errorf("pid %d: out of range", pid)
		}
		id = (^int32(pid) << 3) | cpuclockSched
	}
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, uintptr(id), uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0, fmt.Errorf("clock_gettime(cpu clock of pid %d): %w", pid, e)
	}
	return time.Duration(ts.Nano()), nil
}

// clockWorks says whether procCPU reads nanoseconds (the process CPU clock)
// rather than /proc/PID/stat's 10 ms ticks.
var clockWorks = sync.OnceValue(func() bool {
	_, err := procClockCPU(os.Getpid())
	return err == nil
})

// cpuAccounting names the source of procCPU's values, for the report.
func cpuAccounting() string {
	if clockWorks() {
		return "each process's CPU clock (clock_gettime(2): user + system run time of all its threads, in nanoseconds)"
	}
	return "utime + stime from /proc/PID/stat, in 10 ms ticks (this kernel does not let the bench read another process's CPU clock)"
}

// procCPU is the CPU time, user and system, that process pid has used so
// far, all its threads included and its children not (pid 0 means this
// process): from its CPU clock when the kernel allows, else in ticks from
// /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
	if clockWorks() {
		return procClockCPU(pid)
	}
	return procStatCPU(pid)
}

// procStatCPU is procCPU read from /proc/PID/stat, in 10 ms ticks.
func procStatCPU(pid int) (time.Duration, error) {
	path := "/proc/self/stat"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/stat", pid)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return parseStatCPU(path, data)
}

// statFields are the fields of a /proc/PID/stat after the command name:
// f[0] is field 3 (the state).
func statFields(path string, data []byte, want int) ([][]byte, error) {
	// The command name, field 2, is in parentheses and may hold spaces or
	// parentheses itself; the fields after the last ')' start at field 3.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return nil, fmt.Errorf("%s: no ')' in %q", path, data)
	}
	f := bytes.Fields(data[i+1:])
	if len(f) <= want-3 {
		return nil, fmt.Errorf("%s: %d fields after the command name, want more than %d", path, len(f), want-3)
	}
	return f, nil
}

// parseStatCPU reads utime + stime from the contents of a /proc/PID/stat.
func parseStatCPU(path string, data []byte) (time.Duration, error) {
	return statTicks(path, data, 14, 15)
}

// statTicks sums the tick fields (numbered as in proc(5)) of a stat file.
func statTicks(path string, data []byte, fields ...int) (time.Duration, error) {
	f, err := statFields(path, data, slices.Max(fields))
	if err != nil {
		return 0, err
	}
	var ticks int64
	for _, k := range fields {
		n, err := strconv.ParseInt(string(f[k-3]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: field %d: %v", path, k, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// procSched sums /proc/PID/task/*/schedstat: the run time of pid's live
// threads and the time they waited on a run queue, both in nanoseconds.
func procSched(pid int) (run, wait time.Duration, err error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil {
		return 0, 0, err
	}
	if len(tasks) == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/task/*/schedstat: no such file", pid)
	}
	for _, path := range tasks {
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread exited since the glob
		}
		if err != nil {
			return 0, 0, err
		}
		r, w, err := parseSchedstat(path, data)
		if err != nil {
			return 0, 0, err
		}
		run, wait = run+r, wait+w
	}
	return run, wait, nil
}

// parseSchedstat reads a /proc/PID/task/TID/schedstat: run time (ns), time
// waiting on a run queue (ns), and time slices run.
func parseSchedstat(path string, data []byte) (run, wait time.Duration, err error) {
	f := strings.Fields(string(data))
	if len(f) != 3 {
		return 0, 0, fmt.Errorf("%s: %d fields, want 3 (run ns, wait ns, slices): %q", path, len(f), data)
	}
	var v [2]int64
	for i := range v {
		if v[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("%s: field %d: %v", path, i+1, err)
		}
	}
	return time.Duration(v[0]), time.Duration(v[1]), nil
}

// procsCPU is the sum of procCPU over pids.
func procsCPU(pids []int) (time.Duration, error) {
	var total time.Duration
	for _, pid := range pids {
		d, err := procCPU(pid)
		if err != nil {
			return 0, err
		}
		total += d
	}
	return total, nil
}

// spread makes r the median of vals, showing their min–max: the rounds'
// spread, so a reader sees how far one round's value can be trusted.
func spread(r Result, vals []float64) Result {
	lo, hi := slices.Min(vals), slices.Max(vals)
	r.Value, r.Min, r.Max = median(vals), &lo, &hi
	return r
}

// judge sets whether r met its target and, when it did not, says so at the
// head of its note, with why: which measured rows account for the gap.
func judge(r Result, met bool, why string) Result {
	r.Met, r.plainNote = &met, r.Note
	if !met {
		note := "target not met"
		if why != "" {
			note += ": " + why
		}
		if r.Note != "" {
			note += "; " + r.Note
		}
		r.Note = note
	}
	return r
}

// Host noise. The floors section shares its 2 cores with whatever else the
// machine runs; a row measured while others used the CPU, or while the
// hypervisor stole it, cannot tell the code's cost from theirs, and its
// target gets no verdict (noisyThresholds).

// hostSample is the machine's CPU accounting at one instant.
type hostSample struct {
	total, busy, steal, iowait time.Duration // /proc/stat's "cpu" line, all CPUs
	pressure                   time.Duration // /proc/pressure/cpu "some" total; -1 when there is none
	ours                       time.Duration // CPU of this process and its descendants, reaped ones included
	load1                      float64
}

// HostNoise is the host's activity over a row's measured windows, in
// results.json. Percentages are of the machine's CPU time (every CPU) over
// those windows, except CPUPressurePct, which is of wall time.
type HostNoise struct {
	// StealPct is the time the hypervisor ran something else on our
	// virtual CPUs (0 where the hypervisor does not report it).
	StealPct  float64 `json:"steal_pct"`
	IowaitPct float64 `json:"iowait_pct"`
	// OthersCPUPct is the CPU time that processes outside the bench's own
	// tree (the bench, its relays, upstreams and peers) used.
	OthersCPUPct float64 `json:"others_cpu_pct"`
	// CPUPressurePct is the share of wall time in which some runnable
	// task, ours or not, waited for a CPU (/proc/pressure/cpu "some").
	CPUPressurePct *float64 `json:"cpu_pressure_pct,omitempty"`
	Load1Max       float64  `json:"load1_max"`
	Seconds        float64  `json:"seconds"` // the measured windows' wall time
}

// The thresholds above which a row's target gets no verdict.
const (
	noisyOthersPct = 10.0 // others' CPU: a fifth of a core on 2 cores
	noisyStealPct  = 2.0
)

// noisyThresholds states the thresholds, for the report.
var noisyThresholds = fmt.Sprintf("processes outside the bench used more than %.0f%% of the machine's CPU time during the row's measured windows, or steal exceeded %.0f%%", noisyOthersPct, noisyStealPct)

// noisy says why h is too noisy to back a verdict, or "" when it is not.
func (h HostNoise) noisy() string {
	var why []string
	if h.OthersCPUPct > noisyOthersPct {
		why = append(why, fmt.Sprintf("other processes used %.0f%% of the CPU (threshold %.0f%%)", h.OthersCPUPct, noisyOthersPct))
	}
	if h.StealPct > noisyStealPct {
		why = append(why, fmt.Sprintf("steal %.1f%% (threshold %.0f%%)", h.StealPct, noisyStealPct))
	}
	return strings.Join(why, ", ")
}

func (h HostNoise) String() string {
	s := fmt.Sprintf("other processes %.1f%% of the CPU, steal %.1f%%, iowait %.1f%%", h.OthersCPUPct, h.StealPct, h.IowaitPct)
	if h.CPUPressurePct != nil {
		s += fmt.Sprintf(", CPU pressure %.0f%%", *h.CPUPressurePct)
	}
	return s + fmt.Sprintf(", load ≤ %.1f, over %.0f s measured", h.Load1Max, h.Seconds)
}

// hostNoise adds up the host's activity over measured windows.
type hostNoise struct {
	total, busy, steal, iowait, pressure, ours, wall time.Duration
	noPressure                                       bool
	load1                                            float64
}

// add counts the window from s0 to s1, wall long.
func (a *hostNoise) add(s0, s1 hostSample, wall time.Duration) {
	a.total += s1.total - s0.total
	a.busy += s1.busy - s0.busy
	a.steal += s1.steal - s0.steal
	a.iowait += s1.iowait - s0.iowait
	a.ours += s1.ours - s0.ours
	a.wall += wall
	if s0.pressure < 0 || s1.pressure < 0 {
		a.noPressure = true
	}
	a.pressure += s1.pressure - s0.pressure
	a.load1 = max(a.load1, s0.load1, s1.load1)
}

// merge adds b's windows to a's.
func (a *hostNoise) merge(b hostNoise) {
	a.total, a.busy, a.steal, a.iowait = a.total+b.total, a.busy+b.busy, a.steal+b.steal, a.iowait+b.iowait
	a.ours, a.wall, a.pressure = a.ours+b.ours, a.wall+b.wall, a.pressure+b.pressure
	a.noPressure = a.noPressure || b.noPressure
	a.load1 = max(a.load1, b.load1)
}

// noise is the windows' activity as shares. /proc/stat counts in ticks and
// ours in nanoseconds, so others' share is clamped at 0.
func (a hostNoise) noise() HostNoise {
	pct := func(d time.Duration) float64 {
		if a.total <= 0 {
			return 0
		}
		return 100 * float64(d) / float64(a.total)
	}
	h := HostNoise{StealPct: pct(a.steal), IowaitPct: pct(a.iowait), OthersCPUPct: max(0, pct(a.busy-a.ours)),
		Load1Max: a.load1, Seconds: a.wall.Seconds()}
	if !a.noPressure && a.wall > 0 {
		p := 100 * float64(a.pressure) / float64(a.wall)
		h.CPUPressurePct = &p
	}
	return h
}

// readHost samples the machine's CPU accounting and that of this process's
// tree.
func readHost() (hostSample, error) {
	var s hostSample
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s, err
	}
	if s.total, s.busy, s.steal, s.iowait, err = parseProcStat(data); err != nil {
		return s, err
	}
	s.pressure = -1
	if data, err := os.ReadFile("/proc/pressure/cpu"); err == nil {
		if p, err := parsePressure(data); err == nil {
			s.pressure = p
		}
	}
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(data)); len(f) > 0 {
			s.load1, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	s.ours, err = treeCPU(os.Getpid())
	return s, err
}

// parseProcStat reads the "cpu" line of /proc/stat: all CPUs' time, busy
// (user, nice, system, irq, softirq; guest time is within user), steal and
// iowait.
func parseProcStat(data []byte) (total, busy, steal, iowait time.Duration, err error) {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, 0, 0, fmt.Errorf("/proc/stat: first line %q, want \"cpu\" and at least 8 counters", line)
	}
	var v [8]time.Duration // user nice system idle iowait irq softirq steal
	for i := range v {
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil {
			return 0, 0, 0, 0, fmt.Errorf("/proc/stat: cpu field %d: %v", i+1, err)
		}
		v[i] = time.Duration(n) * clockTick
		total += v[i]
	}
	return total, v[0] + v[1] + v[2] + v[5] + v[6], v[7], v[4], nil
}

// parsePressure reads the "some" line's total (µs) of /proc/pressure/cpu.
func parsePressure(data []byte) (time.Duration, error) {
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "some" {
			continue
		}
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "total="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return 0, fmt.Errorf("/proc/pressure/cpu: %q: %v", kv, err)
				}
				return time.Duration(n) * time.Microsecond, nil
			}
		}
	}
	return 0, fmt.Errorf("/proc/pressure/cpu: no \"some ... total=\" in %q", data)
}

// treeCPU is the CPU time of process root and all its descendants, each
// with the CPU of its children that ended and were waited for (so a child
// that exits between two samples stays counted, in its parent).
func treeCPU(root int) (time.Duration, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // it exited
		}
		f, err := statFields("stat", data, 4)
		if err != nil {
			continue
		}
		if ppid, err := strconv.Atoi(string(f[1])); err == nil {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var total time.Duration
	for queue := []int{root}; len(queue) > 0; queue = queue[1:] {
		pid := queue[0]
		queue = append(queue, children[pid]...)
		cpu, err := procCPU(pid)
		if err != nil {
			continue // it exited; its parent's reaped children count it
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		reaped, err := statTicks("stat", data, 16, 17) // cutime, cstime
		if err != nil {
			return 0, err
		}
		total += cpu + reaped
	}
	return total, nil
}

// withHost returns an add that records h on every row and, when h is
// noisy, gives no verdict on a row with a target (met or not: an oracle
// that cannot tell the code from the host backs neither) and says why. The
// first row's note also describes h.
func withHost(add func(Result), h HostNoise) func(Result) {
	first := true
	return func(r Result) {
		r.Host = &h
		if why := h.noisy(); why != "" && r.Met != nil {
			r.Met, r.Verdict = nil, "noisy host"
			r.Note = strings.TrimSuffix("no verdict, noisy host: "+why+"; "+r.plainNote, "; ")
		}
		if first {
			r.Note = strings.TrimPrefix(r.Note+"; host during these rows: "+h.String(), "; ")
			first = false
		}
		add(r)
	}
}
