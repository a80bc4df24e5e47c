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
	r.Met = &met
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
