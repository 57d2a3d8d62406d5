package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/executor"
	"github.com/atmostonce/toolexec/reconciler"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/wire"
)

// approvalTools are the ledger's tools plus a.pay (native_key) and a.wire
// (irreversible, a 3 s approval_ttl), which need a person's approval.
func approvalTools(l *ledger) string {
	u := l.srv.URL
	return gatewayTools(l) +
		toolEntry("a.pay", "native_key", u+"/ok", "5s", "    approval: required\n    approvers: [alice, \"group:payments\"]\n") +
		toolEntry("a.wire", "irreversible", u+"/ok", "5s", "    approval: required\n    approval_ttl: 3s\n")
}

// TestApprovalEndToEnd: a call of a tool that needs approval is answered
// at once, through HTTP and the Go client, and runs nothing; the same key
// with the same arguments waits with it, with others is a conflict; the
// operator's `reconciler approve` (which shows the arguments and binds the
// approval to them) runs the call once, every waiter gets its outcome and
// `history` names the approver and the reason.
func TestApprovalEndToEnd(t *testing.T) {
	e := newEnv(t, 2)
	l := newLedger(t)
	yaml := approvalTools(l)
	e.startInproc(registry(t, yaml), nil)
	gw := e.startGateway(yaml)
	key := "pay-" + randHex(3)
	body := `{"amount": 250, "to": "acct-42"}`

	r := post(t, gw, "acme", "a.pay", key, body).want(t, http.StatusAccepted, "")
	errInfo, _ := r.body["error"].(map[string]any)
	if r.str("status") != codes.StatusPending || errInfo["code"] != codes.ErrAwaitingApproval ||
		!strings.Contains(fmt.Sprint(errInfo["message"]), "asked: alice, group:payments") || r.body["approval_until"] == nil ||
		r.header.Get("Location") != "/v1/tools/a.pay/calls/"+key || r.header.Get("Retry-After") != "30" {
		t.Fatalf("the first call: %d %v %s", r.status, r.header, r.raw)
	}
	first := r.str("intent_id")
	if g := get(t, gw, "acme", r.header.Get("Location")).want(t, http.StatusAccepted, ""); !strings.Contains(g.raw, codes.ErrAwaitingApproval) {
		t.Fatalf("GET of the key: %s", g.raw)
	}
	dup := post(t, gw, "acme", "a.pay", key, `{"to": "acct-42", "amount": 250.0}`).want(t, http.StatusAccepted, "")
	if !strings.Contains(dup.raw, codes.ErrAwaitingApproval) || dup.body["was_replay"] != true {
		t.Fatalf("a duplicate: %s", dup.raw)
	}
	post(t, gw, "acme", "a.pay", key, `{"amount": 251, "to": "acct-42"}`).want(t, http.StatusUnprocessableEntity, "args_mismatch")

	c := e.client()
	in := wire.Intent{Tenant: "acme", Tool: "a.pay", Key: key, Args: map[string]any{"amount": 250, "to": "acct-42"}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	res, err := c.Call(ctx, in)
	cancel()
	if !errors.Is(err, client.ErrApprovalPending) || !res.AwaitingApproval() {
		t.Fatalf("the Go client: %+v, %v", res, err)
	}
	if n := l.total(); n != 0 {
		t.Fatalf("%d tool requests before any approval", n)
	}

	out := runReconcilerCLI(t, "approve", "--brokers", seedList(), "--topic-prefix", e.prefix, "--tenant", "acme", "--key", key,
		"--by", "alice", "--reason", "invoice 42 checked")
	var ack wire.Result
	if err := json.Unmarshal(out, &ack); err != nil || ack.Status != codes.StatusApproved || ack.OriginalIntentID != first {
		t.Fatalf("reconciler approve printed %s (%v)", out, err)
	}
	done := e.call(c, in, 30*time.Second)
	if done.Status != codes.StatusSucceeded || done.OriginalIntentID != first || !done.WasReplay {
		t.Fatalf("after the approval: %+v", done)
	}
	if g := get(t, gw, "acme", "/v1/tools/a.pay/calls/"+key).want(t, http.StatusOK, ""); g.str("status") != codes.StatusSucceeded {
		t.Fatalf("GET after the approval: %s", g.raw)
	}
	if n := l.total(); n != 1 {
		t.Fatalf("%d tool requests, want 1", n)
	}
	var approved *saga.Event
	for _, ev := range history(t, e, "acme", key) {
		if ev.Kind == saga.EvApproved {
			approved = ev
		}
	}
	if approved == nil || approved.By != "alice" || approved.Reason != "invoice 42 checked" || approved.CallID != first {
		t.Fatalf("the approved event %+v", approved)
	}
	// The same command once more (its id is new): the request was decided.
	if _, stderr, err := runReconcilerCLIStatus(t, "approve", "--brokers", seedList(), "--topic-prefix", e.prefix, "--tenant", "acme",
		"--key", key, "--reason", "again"); err == nil || !strings.Contains(stderr, "awaits no approval (it is succeeded)") {
		t.Fatalf("a second approve: %v\n%s", err, stderr)
	}
}

// TestApprovalDeniedAndLapsed: a deny ends the key failed for every
// waiter (approval_denied, the operator's reason) and an approve after it
// is refused; a request no one decides lapses at its approval_ttl: its
// waiters get not_executed (approval_lapsed), nothing ran, and the key
// asks again.
func TestApprovalDeniedAndLapsed(t *testing.T) {
	e := newEnv(t, 2)
	l := newLedger(t)
	yaml := approvalTools(l)
	e.startInproc(registry(t, yaml), func(cfg *executor.Config) { cfg.SweepInterval = 300 * time.Millisecond })
	res := e.collect(e.names.Results)

	denied := "deny-" + randHex(3)
	a := e.send(wire.Intent{Tool: "a.pay", Key: denied, Args: map[string]any{"amount": 1}})
	b := e.send(wire.Intent{Tool: "a.pay", Key: denied, Args: map[string]any{"amount": 1}})
	for _, id := range []string{a, b} {
		if got := waitFirst(t, res, id, 30*time.Second); !got.AwaitingApproval() {
			t.Fatalf("%s: %+v", id, got)
		}
	}
	ans, err := e.decide(wire.TypeDeny, denied, a, "bob", "wrong account")
	if err != nil || ans.Status != codes.StatusDenied {
		t.Fatalf("deny: %+v %v", ans, err)
	}
	for _, id := range []string{a, b} {
		got := res.waitResult(t, id, 30*time.Second)
		if got.Status != codes.StatusFailed || got.Error == nil || got.Error.Code != codes.ErrApprovalDenied || !strings.Contains(got.Error.Message, "wrong account") {
			t.Fatalf("%s after the deny: %+v", id, got)
		}
	}
	if ans, err := e.decide(wire.TypeApprove, denied, a, "alice", "changed my mind"); !errors.Is(err, reconciler.ErrRejected) ||
		!strings.Contains(ans.Error.Message, "already denied") {
		t.Fatalf("an approve after the deny: %+v %v", ans, err)
	}

	lapsing := "lapse-" + randHex(3)
	w := e.send(wire.Intent{Tool: "a.wire", Key: lapsing, Args: map[string]any{"to": "x"}})
	if got := waitFirst(t, res, w, 30*time.Second); !got.AwaitingApproval() || got.ApprovalUntil-time.Now().UnixMilli() > 3_000 {
		t.Fatalf("the request: %+v", got)
	}
	got := res.waitResult(t, w, 30*time.Second)
	if got.Status != codes.StatusNotExecuted || got.Error == nil || got.Error.Code != codes.ErrApprovalLapsed {
		t.Fatalf("after the approval_ttl: %+v", got)
	}
	again := e.send(wire.Intent{Tool: "a.wire", Key: lapsing, Args: map[string]any{"to": "x"}})
	if got := waitFirst(t, res, again, 30*time.Second); !got.AwaitingApproval() || got.Attempt != 2 || got.PreviousStatus != codes.StatusNotExecuted {
		t.Fatalf("the key after the lapse: %+v", got)
	}
	if n := l.total(); n != 0 {
		t.Fatalf("%d tool requests; nothing was approved", n)
	}
}

// TestApprovalCrashes: the member is killed after the approval's
// transaction committed and before the call, or after the call and before
// its outcome; and the approve is delivered twice. Each ends with one
// effect and every waiter answered: the next owner never calls again, the
// reconciler retries the native_key call under its downstream key.
func TestApprovalCrashes(t *testing.T) {
	for _, point := range []string{"after_started_commit", "after_call", "approve_twice"} {
		t.Run(point, func(t *testing.T) {
			e := newEnv(t, 2)
			fx := newEffects(t)
			fx.lose.Store(false)
			yaml := fx.toolsYAML() + fmt.Sprintf("  - name: a.native\n    class: native_key\n    url: %q\n    timeout: 1s\n    pending_ttl: 3s\n    retention: 1h\n    retries: 0\n    approval: required\n",
				fx.srv.URL+"/native")
			res := e.collect(e.names.Results)
			key := "crash-" + randHex(3)
			var a *proc
			if point == "approve_twice" {
				e.startProc(yaml, "")
			} else {
				a = e.startProc(yaml, "", "TOOLEXEC_FAULT="+point+":exit:"+key)
			}
			in := wire.Intent{Tool: "a.native", Key: key, Args: map[string]any{"amount": 7}}
			first := e.send(in)
			if got := waitFirst(t, res, first, 60*time.Second); !got.AwaitingApproval() {
				t.Fatalf("the request: %+v", got)
			}
			dup := e.send(in)
			if got := waitFirst(t, res, dup, 30*time.Second); !got.AwaitingApproval() {
				t.Fatalf("the duplicate: %+v", got)
			}
			cmd := "op-" + randHex(4)
			if a != nil {
				acked := make(chan error, 1)
				go func() { _, err := e.decideAs(cmd, wire.TypeApprove, key, first, "alice", "ok"); acked <- err }()
				a.exited(t, 60*time.Second)
				if err := <-acked; err != nil {
					t.Fatalf("the approve's answer (committed with the approval): %v", err)
				}
				if want := map[string]int{"after_started_commit": 0, "after_call": 1}[point]; fx.effectsOf("/native", "default", key) != want {
					t.Fatalf("effects before the crash %d, want %d", fx.effectsOf("/native", "default", key), want)
				}
				e.startProc(yaml, "")
				e.startReconciler(registry(t, yaml), "", nil)
			} else {
				for i := 0; i < 2; i++ {
					ans, err := e.decideAs(cmd, wire.TypeApprove, key, first, "alice", "ok")
					if err != nil || ans.Status != codes.StatusApproved || ans.WasReplay != (i == 1) {
						t.Fatalf("approve #%d: %+v %v", i+1, ans, err)
					}
				}
			}
			for _, id := range []string{first, dup} {
				if got := res.waitResult(t, id, 60*time.Second); got.Status != codes.StatusSucceeded {
					t.Fatalf("%s: %+v", id, got)
				}
			}
			if n := fx.effectsOf("/native", "default", key); n != 1 {
				t.Fatalf("effects %d, want 1", n)
			}
			kinds := map[saga.EventKind]int{}
			for _, ev := range history(t, e, "default", key) {
				kinds[ev.Kind]++
			}
			if kinds[saga.EvApproved] != 1 || kinds[saga.EvStarted] != 1 {
				t.Fatalf("events %v: want one approved and one started", kinds)
			}
		})
	}
}

// decide sends an operator's approve or deny of key's request by intent
// callID, bound to the digest of the arguments the test's intents carry
// (nothing: the request's own).
func (e *env) decide(typ, key, callID, by, reason string) (*wire.Result, error) {
	return e.decideAs("op-"+randHex(4), typ, key, callID, by, reason)
}

func (e *env) decideAs(id, typ, key, callID, by, reason string) (*wire.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return reconciler.Resolve(ctx, reconciler.ResolveRequest{Brokers: brokers, Names: e.names, Type: typ, ID: id, Key: key,
		CallID: callID, By: by, Reason: reason})
}

// waitFirst waits for intentID's first answer, terminal or not.
func waitFirst(t *testing.T, c *collector, intentID string, within time.Duration) *wire.Result {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if rs := c.results(intentID); len(rs) > 0 {
			return rs[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no answer to %s within %s", intentID, within)
	return nil
}

// TestApprovalTrace: the wait for a person is a span of the asking
// intent's trace (toolexec.await_approval, with who decided), and the
// approved call's spans follow in that trace.
func TestApprovalTrace(t *testing.T) {
	e := newEnv(t, 2)
	recv := newOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.srv.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	l := newLedger(t)
	yaml := approvalTools(l)
	e.startProc(yaml, "")
	gwp := e.startGatewayProc("gw-"+randHex(3), yaml, tenantsFile(t), "--caller-trace=continue") // the caller's trace goes on
	const trace, span = "5bf92f3577b34da6a3ce929d0e0e4737", "10f067aa0ba902b7"
	key := "traced-" + randHex(3)
	r := post(t, "http://"+gwp.http, "acme", "a.pay", key, `{"amount": 3}`, "traceparent", "00-"+trace+"-"+span+"-01").want(t, http.StatusAccepted, "")
	if d := recv.one(t, trace, "toolexec.decide", nil); d.attrs["toolexec.decision"] != "await_approval" {
		t.Fatalf("the request's decision %v", d.attrs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := reconciler.Resolve(ctx, reconciler.ResolveRequest{Brokers: brokers, Names: e.names, Type: wire.TypeApprove, Tenant: "acme",
		Key: key, CallID: r.str("intent_id"), By: "alice", Reason: "ok"}); err != nil {
		t.Fatal(err)
	}
	wait := recv.one(t, trace, "toolexec.await_approval", map[string]string{"toolexec.decision": "approved", "toolexec.approver": "alice", "toolexec.tool": "a.pay"})
	if wait.service != "toolexec-executor" {
		t.Fatalf("the wait's span %+v", wait)
	}
	recv.one(t, trace, "execute_tool a.pay", map[string]string{"gen_ai.tool.call.id": r.str("intent_id")})
}
