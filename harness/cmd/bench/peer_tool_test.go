package main

import (
	"context"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"
)

func postTool(t *testing.T, tool *effectTool, body string) int {
	t.Helper()
	resp, err := http.Post(tool.url(), "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestEffectToolCountsEveryCallPerKey(t *testing.T) {
	tool, err := startEffectTool("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tool.close()
	for _, k := range []string{"a", "b", "a"} {
		if code := postTool(t, tool, `{"key":"`+k+`","n":1}`); code != http.StatusOK {
			t.Fatalf("key %s: %d", k, code)
		}
	}
	if got := tool.effectsOf([]string{"a", "b", "c"}); got[0] != 2 || got[1] != 1 || got[2] != 0 {
		t.Fatalf("effects %v, want [2 1 0]: the tool must never deduplicate", got)
	}
}

func TestEffectToolRefusesABodyWithoutKey(t *testing.T) {
	tool, err := startEffectTool("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tool.close()
	for _, body := range []string{`{"n":1}`, `not json`} {
		if code := postTool(t, tool, body); code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", body, code)
		}
	}
}

func TestArmedEffectToolHoldsCallsUntilReleased(t *testing.T) {
	tool, err := startEffectTool("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tool.close()
	tool.arm()
	done := make(chan int, 3)
	for _, k := range []string{"x", "y", "z"} {
		go func() { done <- postTool(t, tool, `{"key":"`+k+`"}`) }()
	}
	if err := waitBlocked(context.Background(), tool, 3); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		t.Fatal("a call answered while the tool was armed")
	case <-time.After(100 * time.Millisecond):
	}
	tool.release()
	for range 3 {
		if code := <-done; code != http.StatusOK {
			t.Fatalf("released call: %d", code)
		}
	}
	if n := tool.blocked(); n != 0 {
		t.Fatalf("%d calls still counted as blocked", n)
	}
	if code := postTool(t, tool, `{"key":"w"}`); code != http.StatusOK {
		t.Fatalf("after release: %d", code)
	}
}

func TestEffectHistogramAndExtraEffects(t *testing.T) {
	effects := []int{1, 1, 2, 0, 3}
	if h := effectHistogram(effects); !maps.Equal(h, map[string]int{"0": 1, "1": 2, "2": 1, "3": 1}) {
		t.Fatalf("histogram %v", h)
	}
	if x := extraEffects(effects); x != 3 {
		t.Fatalf("extra effects %d, want 3 (one of the 2, two of the 3)", x)
	}
	if x := extraEffects([]int{1, 1, 0}); x != 0 {
		t.Fatalf("extra effects %d, want 0 when no key ran twice", x)
	}
}
