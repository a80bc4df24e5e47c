package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"
)

// clockTick is the unit of utime and stime in /proc/PID/stat: USER_HZ,
// which Linux fixes at 100 for user space whatever the kernel's own HZ.
const clockTick = 10 * time.Millisecond

// procCPU is the CPU time, user and system, that process pid has used so
// far, all its threads included and its children not, read from
// /proc/PID/stat (pid 0 means this process).
func procCPU(pid int) (time.Duration, error) {
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

// parseStatCPU reads utime + stime from the contents of a /proc/PID/stat.
func parseStatCPU(path string, data []byte) (time.Duration, error) {
	// The command name, field 2, is in parentheses and may hold spaces or
	// parentheses itself; the fields after the last ')' start at field 3.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("%s: no ')' in %q", path, data)
	}
	f := bytes.Fields(data[i+1:])
	const utime, stime = 14 - 3, 15 - 3
	if len(f) <= stime {
		return 0, fmt.Errorf("%s: %d fields after the command name, want more than %d", path, len(f), stime)
	}
	var ticks int64
	for _, k := range []int{utime, stime} {
		n, err := strconv.ParseInt(string(f[k]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: field %d: %v", path, k+3, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
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
