package main

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"
)

// memSystem answers every call at once and records the keys it saw.
type memSystem struct {
	mu    sync.Mutex
	calls map[string]int
	fail  error
}

func (m *memSystem) name() string { return "mem" }
func (m *memSystem) call(_ context.Context, _ *http.Client, key string, _ int) (callAnswer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return callAnswer{}, m.fail
	}
	m.calls[key]++
	time.Sleep(time.Millisecond)
	return callAnswer{status: "succeeded"}, nil
}

func TestHTTPClosedLoopAnswersEveryCallSent(t *testing.T) {
	m := &memSystem{calls: map[string]int{}}
	ph := newPhase("u", 0, 200*time.Millisecond)
	httpClosedLoop(context.Background(), ph, m, http.DefaultClient, 4, uniqueHTTPKeys("u"))
	r := ph.result()
	if r.Sent == 0 || r.Answers != r.Sent || r.Lost != 0 || r.Err != nil {
		t.Fatalf("sent %d answered %d lost %d err %v", r.Sent, r.Answers, r.Lost, r.Err)
	}
	for k, n := range m.calls {
		if n != 1 {
			t.Fatalf("key %s called %d times in a unique-keys phase", k, n)
		}
	}
}

func TestHTTPClosedLoopSendsEachKeyOncePerClientOfAGroup(t *testing.T) {
	m := &memSystem{calls: map[string]int{}}
	ph := newPhase("d", 0, 200*time.Millisecond)
	httpClosedLoop(context.Background(), ph, m, http.DefaultClient, 4, workload{group: 2, key: uniqueHTTPKeys("d").key})
	r := ph.result()
	if r.Answers != r.Sent || r.Sent != 2*len(m.calls) {
		t.Fatalf("sent %d answered %d for %d keys, want two calls per key", r.Sent, r.Answers, len(m.calls))
	}
	for k, n := range m.calls {
		if n != 2 {
			t.Fatalf("key %s called %d times, want 2 (a pair of duplicates)", k, n)
		}
	}
}

func TestHTTPClosedLoopKeepsTheFirstCallError(t *testing.T) {
	boom := errors.New("boom")
	m := &memSystem{calls: map[string]int{}, fail: boom}
	ph := newPhase("e", 0, time.Second)
	httpClosedLoop(context.Background(), ph, m, http.DefaultClient, 2, uniqueHTTPKeys("e"))
	if r := ph.result(); !errors.Is(r.Err, boom) {
		t.Fatalf("phase error %v, want boom", r.Err)
	}
}

func TestGatewayAnswerReadsStatusAndReplay(t *testing.T) {
	for _, tc := range []struct {
		code   int
		body   string
		want   callAnswer
		wantOK bool
	}{
		{200, `{"status":"succeeded","was_replay":true}`, callAnswer{"succeeded", true}, true},
		{202, `{"status":"pending"}`, callAnswer{"pending", false}, true},
		{200, `{}`, callAnswer{}, false},
		{500, `{"status":"succeeded"}`, callAnswer{}, false},
		{200, `<html>`, callAnswer{}, false},
	} {
		got, err := gatewayAnswer(tc.code, []byte(tc.body))
		if (err == nil) != tc.wantOK || got != tc.want {
			t.Errorf("%d %s: %+v, %v", tc.code, tc.body, got, err)
		}
	}
}
