package main

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestParseProcStatCountsFromTheLastParenthesis(t *testing.T) {
	// comm "(a) b)" holds a space and parentheses; utime..cstime are 7 11 13 17.
	line := []byte("4242 ((a) b)) S 77 4242 4242 0 -1 4194304 99 0 0 0 7 11 13 17 20 0 1 0 621327 3133440 382")
	s, err := parseProcStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if s.pid != 4242 || s.ppid != 77 || s.ticks != 7+11+13+17 {
		t.Fatalf("got %+v, want pid 4242 ppid 77 ticks 48", s)
	}
}

func TestParseProcStatRejectsMalformedLines(t *testing.T) {
	for _, line := range []string{
		"",
		"4242 no-parens S 1 2 3",
		"x (cat) S 1 1 1 0 -1 0 0 0 0 0 1 1 1 1",
		"12 (cat) S 1 1 1", // too few fields
		"12 (cat) S 1 1 1 0 -1 0 0 0 0 0 1 x 1 1", // stime not a number
	} {
		if _, err := parseProcStat([]byte(line)); !errors.Is(err, errProcStat) {
			t.Errorf("%q: err %v, want errProcStat", line, err)
		}
	}
}

func TestTreeSecondsSumsRootAndDescendantsOnly(t *testing.T) {
	stats := []procStat{
		{pid: 10, ppid: 1, ticks: 100}, // root
		{pid: 11, ppid: 10, ticks: 50}, // child
		{pid: 12, ppid: 11, ticks: 25}, // grandchild
		{pid: 20, ppid: 1, ticks: 999}, // unrelated
		{pid: 21, ppid: 20, ticks: 999},
	}
	if got := treeSeconds(stats, 10); got != 1.75 {
		t.Fatalf("tree of 10: %v s, want 1.75", got)
	}
	if got := treeSeconds(stats, 11); got != 0.75 {
		t.Fatalf("tree of 11: %v s, want 0.75", got)
	}
	if got := treeSeconds(stats, 99); got != 0 {
		t.Fatalf("tree of a gone process: %v s, want 0", got)
	}
}

func TestCPUOfTreesSeesThisProcessWork(t *testing.T) {
	before := cpuOfTrees([]int{os.Getpid()})[0]
	start := rusageSeconds()
	for x := 0; rusageSeconds()-start < 0.2; x++ {
		_ = x * x
	}
	after := cpuOfTrees([]int{os.Getpid()})[0]
	// 0.2 s of CPU by getrusage; /proc counts in 10 ms ticks.
	if after-before < 0.15 {
		t.Fatalf("/proc saw %.3f s of CPU over 0.2 s of work", after-before)
	}
}

func rusageSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return (time.Duration(ru.Utime.Nano()) + time.Duration(ru.Stime.Nano())).Seconds()
}
