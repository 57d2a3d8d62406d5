package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExitReasonTellsACrashFromAnExitByDesign: a panic at the end of an
// executor's log is a crash, named by its first lines; an exit by design
// is named by its last error line.
func TestExitReasonTellsACrashFromAnExitByDesign(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	crash := write("crash.log", "time=1 level=INFO msg=started\n"+
		"panic: runtime error: index out of range [3] with length 3\n\ngoroutine 42 [running]:\nmain.f()\n")
	why, crashed := exitReason(crash)
	if !crashed || !strings.HasPrefix(why, "panic: runtime error: index out of range") || !strings.Contains(why, "goroutine 42") {
		t.Fatalf("crash: %q, %v", why, crashed)
	}
	fatal := write("fatal.log", "time=1 level=INFO msg=started\nfatal error: concurrent map writes\n")
	if why, crashed := exitReason(fatal); !crashed || !strings.HasPrefix(why, "fatal error: concurrent map writes") {
		t.Fatalf("fatal error: %q, %v", why, crashed)
	}
	designed := write("designed.log", "time=1 level=INFO msg=started\n"+
		"time=2 level=ERROR msg=\"executor stopped\" err=\"executor: fatal: begin transaction: PRODUCER_FENCED\"\n"+
		"time=3 level=INFO msg=bye\n")
	if why, crashed := exitReason(designed); crashed || !strings.Contains(why, "PRODUCER_FENCED") {
		t.Fatalf("exit by design: %q, %v", why, crashed)
	}
	if why, crashed := exitReason(filepath.Join(dir, "missing.log")); crashed || !strings.Contains(why, "unreadable") {
		t.Fatalf("missing log: %q, %v", why, crashed)
	}
}
