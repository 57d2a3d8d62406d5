package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat:
// 100 on every Linux architecture Go supports (the kernel's ABI, not
// CONFIG_HZ; `getconf CLK_TCK` prints it). Pure Go has no sysconf.
const clockTicks = 100

// procStat is what the bench reads of one /proc/<pid>/stat line.
type procStat struct {
	pid, ppid int
	// ticks is utime + stime + cutime + cstime: the process's own CPU time
	// and that of its children it has reaped (a PostgreSQL backend that
	// exited is counted in the postmaster's cutime once waited for).
	ticks int64
}

// errProcStat marks a /proc/<pid>/stat line that cannot be read.
var errProcStat = errors.New("bench: malformed /proc stat line")

// parseProcStat reads "pid (comm) state ppid ... utime stime cutime
// cstime ...". comm may hold spaces and parentheses, so the fields are
// counted from the last ')'.
func parseProcStat(line []byte) (procStat, error) {
	open, end := bytes.IndexByte(line, '('), bytes.LastIndexByte(line, ')')
	if open < 1 || end < open {
		return procStat{}, fmt.Errorf("%w: %.80q", errProcStat, line)
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(line[:open])))
	if err != nil {
		return procStat{}, fmt.Errorf("%w: pid: %w", errProcStat, err)
	}
	// After ')': state(3) ppid(4) pgrp session tty_nr tpgid flags minflt
	// cminflt majflt cmajflt utime(14) stime(15) cutime(16) cstime(17).
	f := bytes.Fields(line[end+1:])
	const ppid, utime, cstime = 1, 11, 14
	if len(f) <= cstime {
		return procStat{}, fmt.Errorf("%w: %d fields after comm", errProcStat, len(f))
	}
	s := procStat{pid: pid}
	if s.ppid, err = strconv.Atoi(string(f[ppid])); err != nil {
		return procStat{}, fmt.Errorf("%w: ppid: %w", errProcStat, err)
	}
	for i := utime; i <= cstime; i++ {
		n, err := strconv.ParseInt(string(f[i]), 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("%w: field %d: %w", errProcStat, i+3, err)
		}
		s.ticks += n
	}
	return s, nil
}

// readProcStats reads every process's stat line. Processes that exit
// while it reads are skipped.
func readProcStats() []procStat {
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	out := make([]procStat, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if s, err := parseProcStat(b); err == nil {
			out = append(out, s)
		}
	}
	return out
}

// treeSeconds is the CPU time of root and of all its descendants in
// stats, in seconds; 0 when root is not among them (it exited).
func treeSeconds(stats []procStat, root int) float64 {
	children := map[int][]int{}
	ticks := map[int]int64{}
	for _, s := range stats {
		children[s.ppid] = append(children[s.ppid], s.pid)
		ticks[s.pid] = s.ticks
	}
	if _, ok := ticks[root]; !ok {
		return 0
	}
	var total int64
	seen := map[int]bool{}
	stack := []int{root}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[p] {
			continue
		}
		seen[p] = true
		total += ticks[p]
		stack = append(stack, children[p]...)
	}
	return float64(total) / clockTicks
}

// cpuOfTrees reads /proc once and returns the CPU seconds of each root's
// process tree.
func cpuOfTrees(roots []int) []float64 {
	stats := readProcStats()
	out := make([]float64, len(roots))
	for i, r := range roots {
		out[i] = treeSeconds(stats, r)
	}
	return out
}
