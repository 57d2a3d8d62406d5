package integration

import (
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A gateway killed (SIGKILL) while a request waits leaves nothing lost:
// the client retries with the same key against the other instance and gets
// the answer, and the tool ran once. Two gateway processes, each with its
// own reply topic.
func TestGatewayKilledWhileARequestWaits(t *testing.T) {
	e := newEnv(t, 3)
	l := newLedger(t)
	yaml := gatewayTools(l)
	e.startInproc(registry(t, yaml), nil)
	tenants := tenantsFile(t)
	a := e.startGatewayProc("gw-a", yaml, tenants)
	b := e.startGatewayProc("gw-b", yaml, tenants)

	failed := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, "http://"+a.http+"/v1/tools/t.block/calls", strings.NewReader(`{"service":"api"}`))
		req.Header.Set("Authorization", "Bearer "+gwTokens["acme"])
		req.Header.Set("Idempotency-Key", "deploy-42")
		req.Header.Set("Prefer", "wait=60")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		failed <- err
	}()
	l.waitArrivals(t, 1, 30*time.Second) // the call runs; gateway a holds the request
	a.signal(syscall.SIGKILL)
	select {
	case err := <-failed:
		if err == nil {
			t.Fatal("the request to the killed gateway was answered")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the request to the killed gateway did not end")
	}
	// The client retries against b with the same key and arguments; the
	// duplicate joins the call still running.
	go func() { time.Sleep(time.Second); l.releaseAll() }()
	got := post(t, "http://"+b.http, "acme", "t.block", "deploy-42", `{"service":"api"}`, "Prefer", "wait=60").want(t, 200, "")
	if got.str("status") != "succeeded" || got.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry on the other gateway: %v %s", got.header, got.raw)
	}
	// And again, after the call settled: a replay.
	again := post(t, "http://"+b.http, "acme", "t.block", "deploy-42", `{"service":"api"}`).want(t, 200, "")
	if again.str("original_intent_id") != got.str("original_intent_id") || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %s", again.raw)
	}
	if n := l.total(); n != 1 {
		t.Fatalf("tool requests %d, want 1", n)
	}
}
