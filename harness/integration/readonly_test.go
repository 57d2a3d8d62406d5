package integration

import (
	"testing"
	"time"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// TestReadOnlyAnsweredAfterCrash: the owner dies (kill -9) while a
// read-only call runs. The intent's offset is already committed, so no
// redelivery will ever bring it back; its read_started event does. The
// next owner, a new process with an empty data dir, calls the read again
// and answers the intent, exactly once: without the event such an intent
// would get no answer at all.
func TestReadOnlyAnsweredAfterCrash(t *testing.T) {
	e := newEnv(t, 1)
	l := newLedger(t)
	yaml := l.toolsYAML("")
	results := e.collect(e.names.Results)
	a := e.startProc(yaml, "", "TOOLEXEC_FAULT=during_call:exit:ro-crash")
	in := wire.Intent{ID: client.NewID(), Tool: "t.roslow", Key: "ro-crash", Args: map[string]any{"q": 1}}
	c := e.client()
	go func() { _, _ = c.Call(t.Context(), in) }()
	a.exited(t, 30*time.Second)
	if n := len(results.results(in.ID)); n != 0 {
		t.Fatalf("%d answers before the crash", n)
	}
	e.startProc(yaml, "")
	res := results.waitResult(t, in.ID, 45*time.Second)
	if res.Status != codes.StatusSucceeded || res.WasReplay {
		t.Fatalf("answer after the crash: %+v", res)
	}
	time.Sleep(3 * time.Second) // room for a second answer, which must not come
	if n := len(results.results(in.ID)); n != 1 {
		t.Fatalf("%d answers to the read, want 1", n)
	}
	if got := l.total(); got != 1 {
		t.Fatalf("the read reached the tool %d times, want 1 (the crash hit before the tool ran)", got)
	}
}
