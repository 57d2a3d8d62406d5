package main

import (
	"encoding/json"
	"testing"
	"time"
)

func msList(v ...float64) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x * float64(time.Millisecond))
	}
	return out
}

func TestOneCallerFloorsSumTheirPartsAndTheJSONCarriesThem(t *testing.T) {
	r := &oneCallerResult{calls: 3, load: "1 1 1", lat: map[string][]time.Duration{
		pathTool: msList(1, 1, 1), pathProduce: msList(2, 2, 2), pathTxn: msList(5, 5, 9),
		pathGatewayNew: msList(14, 15, 40), pathGatewayReplay: msList(8, 8, 8),
		pathClientNew: msList(13, 13, 13), pathClientReplay: msList(7, 7, 7),
	}}
	if f := r.floorNew(0.5); f != 2+2*5+1 {
		t.Fatalf("new key floor p50 %v, want hop + 2 transactions + tool = 13", f)
	}
	if f := r.floorReplay(0.99); f != 2+9 {
		t.Fatalf("replay floor p99 %v, want 11", f)
	}
	var j jsonReport
	rep := &report{oneCaller: r}
	if err := json.Unmarshal([]byte(rep.json()), &j); err != nil {
		t.Fatal(err)
	}
	if j.OneCaller == nil || j.OneCaller.Paths[pathGatewayNew].P99 != 40 || j.OneCaller.FloorNew.P50 != 13 || j.OneCaller.FloorReplay.P50 != 7 {
		t.Fatalf("one_caller %+v", j.OneCaller)
	}
	if got := r.against(pathGatewayNew); got != "p50 floor+2.0 ms, p99 1.90× floor; p50 <= floor+3, p99 <= 2×  ok" {
		t.Fatalf("against %q", got)
	}
	if got := r.against(pathGatewayReplay); got != "p50 floor+1.0 ms; p50 <= floor+2  ok" {
		t.Fatalf("against %q", got)
	}
}

// ev is an event at t ms.
func ev(p, k string, t float64) hopEvent {
	return hopEvent{Point: p, Key: k, At: int64(t * 1e6)}
}

func TestHopsJoinBothMembersByKeyAndDeriveTheCommitsFromTheRequests(t *testing.T) {
	k := "bench/oc-g-20"
	gw := []hopEvent{
		ev("gw.recv", k, 100), ev("intent.acked", k, 101), ev("answer.fetched", k, 120), ev("gw.sent", k, 121),
		// the replay of the same key that follows: left out
		ev("gw.recv", k, 130), ev("intent.acked", k, 131), ev("answer.fetched", k, 135), ev("gw.sent", k, 136),
		ev("gw.recv", "bench/oc-c-20", 140), // another path's key
	}
	ex := []hopEvent{
		ev("intent.fetched", k, 101.5), ev("x.before_started_commit", k, 102),
		ev("req.Produce", "", 103), ev("req.EndTxn", "", 106), ev("req.Fetch", "", 107), ev("req.Fetch", "", 108),
		ev("x.after_started_commit", k, 109), ev("x.during_call", k, 109.5), ev("x.after_call", k, 110.5),
		ev("x.during_outcome_commit", k, 111), ev("req.EndTxn", "", 118),
		ev("intent.fetched", k, 131.5), ev("req.EndTxn", "", 134),
	}
	hb := summariseHops(gw, ex, "oc-g-", 0, newKeyHops)
	if hb.calls != 1 {
		t.Fatalf("calls %d, want 1", hb.calls)
	}
	want := map[string]float64{"gw.recv": 0, "intent.fetched": 1.5, endTxnAfter + "started": 6, confirmFetch: 8,
		endTxnAfter + "outcome": 18, "answer.fetched": 20, "gw.sent": 21}
	for p, w := range want {
		if got := hb.at[p]; got != w {
			t.Errorf("%s at %v ms, want %v", p, got, w)
		}
	}
	if hb.step["x.after_started_commit"] != 1 || hb.step[endTxnAfter+"outcome"] != 7 {
		t.Errorf("steps %v", hb.step)
	}
	if r := hb.requests[endTxnAfter+"started"]; r["Produce"].perCall != 1 || r["EndTxn"].perCall != 1 || len(r) != 2 {
		t.Errorf("requests of the started commit %+v, want a Produce and an EndTxn", r)
	}
	if s := hb.reqSum[endTxnAfter+"outcome"]; s != 0 {
		t.Errorf("outcome's requests sum to %v ms, want 0 (the event's durations are 0)", s)
	}
	rb := summariseHops(gw, ex, "oc-g-", 1, replayHops)
	if rb.calls != 1 || rb.at["intent.fetched"] != 1.5 || rb.at[endTxnAfter+"replay"] != 4 || rb.at["gw.sent"] != 6 {
		t.Errorf("replay %+v", rb.at)
	}
}
