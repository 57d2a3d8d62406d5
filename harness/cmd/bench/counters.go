package main

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// counters is a member's cumulative figures at one moment. The parent
// subtracts two snapshots to get a phase's share.
type counters struct {
	HWMKB   int64   `json:"vm_hwm_kb"` // peak RSS of the member's process
	RSSKB   int64   `json:"vm_rss_kb"`
	CPUSec  float64 `json:"cpu_s"`   // user+system CPU time of the member's process
	Intents float64 `json:"intents"` // intents decided (executor) or records answered (baseline)
	Replays float64 `json:"replays"`
	Txns    float64 `json:"txns"` // committed transactions
	Aborts  float64 `json:"aborts"`
	// TxnInputs is the sum of the executor's transaction_inputs histogram:
	// inputs and completions carried by committed transactions.
	TxnInputs     float64 `json:"txn_inputs"`
	Fsyncs        float64 `json:"fsyncs"` // synced Pebble batches
	Calls         float64 `json:"calls"`
	TxnSec        float64 `json:"txn_s"`  // time spent ending transactions
	TickSec       float64 `json:"tick_s"` // time spent in committed ticks, decide to dispatch
	RestoreEvents float64 `json:"restore_events"`
	RestoreSec    float64 `json:"restore_s"`
}

// sub returns c - o, field by field, for the cumulative fields; the
// memory fields keep c's values.
func (c counters) sub(o counters) counters {
	return counters{
		HWMKB: c.HWMKB, RSSKB: c.RSSKB, CPUSec: c.CPUSec - o.CPUSec,
		Intents: c.Intents - o.Intents, Replays: c.Replays - o.Replays,
		Txns: c.Txns - o.Txns, Aborts: c.Aborts - o.Aborts, TxnInputs: c.TxnInputs - o.TxnInputs,
		Fsyncs: c.Fsyncs - o.Fsyncs, Calls: c.Calls - o.Calls, TxnSec: c.TxnSec - o.TxnSec,
		TickSec: c.TickSec - o.TickSec, RestoreEvents: c.RestoreEvents - o.RestoreEvents, RestoreSec: c.RestoreSec - o.RestoreSec,
	}
}

// processFigures fills the memory and CPU fields from /proc/self/status
// (VmHWM is the peak resident set) and getrusage.
// gathered is a member's counters: the process figures, and what add
// takes from each metric family its registry gathers.
func gathered(reg prometheus.Gatherer, add func(*counters, *dto.MetricFamily)) counters {
	var c counters
	c.processFigures()
	fams, err := reg.Gather()
	if err != nil {
		return c
	}
	for _, f := range fams {
		add(&c, f)
	}
	return c
}

func (c *counters) processFigures() {
	c.HWMKB, c.RSSKB = procStatusKB("VmHWM:"), procStatusKB("VmRSS:")
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		c.CPUSec = tvSeconds(ru.Utime) + tvSeconds(ru.Stime)
		if c.HWMKB == 0 {
			c.HWMKB = ru.Maxrss // kB on Linux
		}
	}
}

func tvSeconds(tv syscall.Timeval) float64 {
	return (time.Duration(tv.Sec)*time.Second + time.Duration(tv.Usec)*time.Microsecond).Seconds()
}

// procStatusKB returns the value of one "Name:   123 kB" line of
// /proc/self/status, 0 when it cannot be read.
func procStatusKB(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte(field)) {
			continue
		}
		f := bytes.Fields(line[len(field):])
		if len(f) == 0 {
			return 0
		}
		n, _ := strconv.ParseInt(string(f[0]), 10, 64)
		return n
	}
	return 0
}

// selfCPU is this process's user+system CPU time.
func selfCPU() float64 {
	var c counters
	c.processFigures()
	return c.CPUSec
}
