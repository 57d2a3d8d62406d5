//go:build linux

package gateway

import (
	"net/http/httptest"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// A request's CPU is bounded by its size: what a caller sends cannot cost
// the process (which the embedded gateway shares with the executor) more
// than a fixed amount per byte. Measured as the CPU time of the thread
// that reads the arguments (CLOCK_THREAD_CPUTIME_ID), which other
// processes' load does not inflate; the bound is far above what any body
// costs now (a few microseconds for small ones) and far below what a
// number with a huge exponent cost in the schema validator (1e999999, 9
// bytes: about 51 ms).
const (
	cpuBase    = 20 * time.Millisecond
	cpuPerByte = 2 * time.Microsecond
)

// costSchema makes the validator do arithmetic on every number.
const costSchema = `{"type":"object","additionalProperties":{"anyOf":[{"type":"number","multipleOf":0.5,"maximum":1e10},{"type":"array","items":{"type":"number","minimum":-1e300}}]}}`

func argsCPU(t *testing.T, tl *tool, body string) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := httptest.NewRequest("POST", "/v1/tools/s/calls", strings.NewReader(body))
	start := threadCPU(t)
	requestArgs(r, tl)
	return threadCPU(t) - start
}

func threadCPU(t *testing.T) time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		t.Fatal(errno)
	}
	return time.Duration(ts.Nano())
}

func FuzzArgsCPUPerByte(f *testing.F) {
	for _, s := range []string{`{"amount":1e999999}`, `{"a":[1e-999999,-1e999999]}`, `{"a":0.1,"b":120}`,
		`{"a":1` + strings.Repeat("0", 5000) + `}`, `{"a":1.` + strings.Repeat("3", 5000) + `e-300}`} {
		f.Add(s)
	}
	tl := mustTool(costSchema)
	f.Fuzz(func(t *testing.T, body string) {
		if got, limit := argsCPU(t, tl, body), cpuBase+time.Duration(len(body))*cpuPerByte; got > limit {
			t.Fatalf("%d bytes cost %s of CPU, the bound is %s: %.200q", len(body), got, limit, body)
		}
	})
}

// TestHugeNumberCPU reports the CPU of a huge exponent, alone and a
// hundred times over; the bound is the fuzz target's.
func TestHugeNumberCPU(t *testing.T) {
	tl := mustTool(costSchema)
	for _, body := range []string{`{"amount":1e999999}`, `{"amounts":[` + strings.TrimSuffix(strings.Repeat("1e999999,", 100), ",") + `]}`} {
		got := argsCPU(t, tl, body)
		t.Logf("%d bytes: %s of CPU", len(body), got)
		if limit := cpuBase + time.Duration(len(body))*cpuPerByte; got > limit {
			t.Errorf("%d bytes cost %s of CPU, the bound is %s", len(body), got, limit)
		}
	}
}
