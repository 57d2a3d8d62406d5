package main

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"sync"
	"testing"
)

// fakePeer calls the real effectTool over HTTP. rerun: like a durable
// step that is re-run after a crash (a call whose process was killed is
// executed again once it is back). Otherwise it records a key as started
// before calling, and answers a started key "pending" ever after.
type fakePeer struct {
	tool  *effectTool
	rerun bool

	mu      sync.Mutex
	gen     context.Context
	cancel  context.CancelFunc
	up      chan struct{} // closed while up
	started map[string]bool
	done    map[string]bool
}

func newFakePeer(tool *effectTool, rerun bool) *fakePeer {
	f := &fakePeer{tool: tool, rerun: rerun, started: map[string]bool{}, done: map[string]bool{}}
	f.gen, f.cancel = context.WithCancel(context.Background())
	f.up = make(chan struct{})
	close(f.up)
	return f
}

func (f *fakePeer) name() string       { return "fake" }
func (f *fakePeer) procs() []proc      { return nil }
func (f *fakePeer) killTarget() string { return "service" }
func (f *fakePeer) stop()              {}

func (f *fakePeer) kill() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancel()
	f.up = make(chan struct{})
}

func (f *fakePeer) restart(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen, f.cancel = context.WithCancel(context.Background())
	close(f.up)
	return nil
}

func (f *fakePeer) state() (context.Context, chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gen, f.up
}

func (f *fakePeer) call(ctx context.Context, hc *http.Client, key string, n int) (callAnswer, error) {
	for {
		gen, up := f.state()
		if f.rerun {
			<-up // the server holds the request while the service is down
		} else if !f.claim(key) {
			return callAnswer{status: "pending"}, nil
		}
		rep, err := postJSON(gen, hc, f.tool.url(), callBody(key, n), nil)
		// A killed process acts on no answer, even one net/http hands over
		// in a race with the cancellation.
		if err == nil && rep.code == http.StatusOK && gen.Err() == nil {
			return callAnswer{status: "succeeded"}, nil
		}
		if !f.rerun {
			return callAnswer{}, errors.New("killed")
		}
	}
}

// claim marks key started; false when it was started already.
func (f *fakePeer) claim(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started[key] {
		return false
	}
	f.started[key] = true
	return true
}

func crashFake(t *testing.T, rerun bool) crashResult {
	t.Helper()
	tool, err := startEffectTool("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tool.close()
	b := &bench{cfg: config{peer: peerConfig{crashCalls: 5}}}
	cr, err := b.crashTest(context.Background(), newFakePeer(tool, rerun), tool)
	if err != nil {
		t.Fatal(err)
	}
	if cr.blocked != 5 || cr.calls != 5 {
		t.Fatalf("%d of %d calls inside the tool at the kill, want 5 of 5", cr.blocked, cr.calls)
	}
	return cr
}

func TestCrashTestCountsASecondEffectWhenTheStepRunsAgain(t *testing.T) {
	cr := crashFake(t, true)
	if !maps.Equal(cr.effects, map[string]int{"2": 5}) || !maps.Equal(cr.answers, map[string]int{"succeeded": 5}) {
		t.Fatalf("effects %v answers %v, want every key twice and answered", cr.effects, cr.answers)
	}
}

func TestCrashTestCountsOneEffectWhenTheStartedKeyIsParked(t *testing.T) {
	cr := crashFake(t, false)
	if !maps.Equal(cr.effects, map[string]int{"1": 5}) || !maps.Equal(cr.answers, map[string]int{"pending": 5}) {
		t.Fatalf("effects %v answers %v, want every key once and parked pending", cr.effects, cr.answers)
	}
}
