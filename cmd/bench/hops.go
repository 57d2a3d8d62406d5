package main

import (
	"fmt"
	"slices"
	"strings"
)

// The hop-by-hop trace of scenario 8: the gateway's new keys, each from
// the request's arrival to its answer written, through the moments both
// members recorded (trace.go). The points, in the order a call passes
// them; the two commits are the executor's EndTxn answers that follow the
// points before them (a request belongs to no one key, but with one caller
// the next EndTxn is this call's).
var hopPoints = []struct{ point, what string }{
	{"gw.recv", "gateway: request received"},
	{"intent.acked", "gateway: intent produced (acknowledged)"},
	{"intent.fetched", "executor: intent arrives in a fetch"},
	{"x." + "before_started_commit", "executor: decided, started event produced, transaction ending"},
	{endTxnAfter + "started", "executor: started transaction committed (EndTxn answered)"},
	{confirmFetch, "executor: commit marker seen (the confirmation's last fetch answered)"},
	{"x." + "after_started_commit", "executor: started confirmed on the events partition, view written"},
	{"x." + "during_call", "executor: tool called"},
	{"x." + "after_call", "executor: tool answered"},
	{"x." + "during_outcome_commit", "executor: outcome and answer produced, transaction ending"},
	{endTxnAfter + "outcome", "executor: outcome transaction committed (EndTxn answered)"},
	{"answer.fetched", "gateway: answer arrives in a fetch"},
	{"gw.sent", "gateway: response written"},
}

// endTxnAfter marks a derived point: the executor's first EndTxn answer
// after the point before it.
const endTxnAfter = "EndTxn:"

// confirmFetch is derived too: the executor's last Fetch answered between
// the started commit and the confirmation (the marker client's read; the
// group's own fetch waits for new intents, of which one caller sends none
// meanwhile).
const confirmFetch = "Fetch:confirm"

// hopBreakdown is the trace's summary over the traced calls.
type hopBreakdown struct {
	calls int
	// at is each point's median offset from gw.recv, step the median of
	// its difference to the point before (both ms; NaN-free: a point no
	// call had is left out).
	at, step map[string]float64
	// requests are the executor's Kafka requests answered between the
	// intent's arrival and the outcome's commit, per call: count and
	// median round trip in ms, by request name.
	requests map[string]reqFigure
}

type reqFigure struct {
	perCall float64
	medMs   float64
}

// breakdown reads both members' events and summarises the gateway's new
// keys of the measured iterations.
func (s *oneCallerSetup) breakdown() (*hopBreakdown, error) {
	var gw, ex []hopEvent
	if err := s.peer.gw.do("trace", &gw); err != nil {
		return nil, err
	}
	if err := s.peer.ex.child.do("trace", &ex); err != nil {
		return nil, err
	}
	return summariseHops(gw, ex, oneCallerName+"-g-"), nil
}

// summariseHops joins the events of the gateway (gw) and the executor (ex)
// by routing key, for the keys whose key part starts with keyPrefix.
func summariseHops(gw, ex []hopEvent, keyPrefix string) *hopBreakdown {
	byKey := map[string][]hopEvent{}
	var reqs []hopEvent
	for _, e := range slices.Concat(gw, ex) {
		if e.Key != "" {
			byKey[e.Key] = append(byKey[e.Key], e)
		}
	}
	for _, e := range ex {
		if e.Key == "" {
			reqs = append(reqs, e)
		}
	}
	slices.SortFunc(reqs, func(a, b hopEvent) int { return int(a.At - b.At) })
	at := map[string][]float64{}
	step := map[string][]float64{}
	reqDur := map[string][]float64{}
	calls := 0
	for k, evs := range byKey {
		if !strings.Contains(k, "/"+keyPrefix) {
			continue
		}
		pts, ok := callPoints(evs, reqs)
		if !ok {
			continue
		}
		calls++
		recv := pts["gw.recv"]
		prev := recv
		for _, hp := range hopPoints {
			t, ok := pts[hp.point]
			if !ok {
				continue
			}
			at[hp.point] = append(at[hp.point], float64(t-recv)/1e6)
			step[hp.point] = append(step[hp.point], float64(t-prev)/1e6)
			prev = t
		}
		for _, r := range requestsBetween(reqs, pts["intent.fetched"], pts[endTxnAfter+"outcome"]) {
			reqDur[r.Point] = append(reqDur[r.Point], float64(r.DurNs)/1e6)
		}
	}
	hb := &hopBreakdown{calls: calls, at: medians(at), step: medians(step), requests: map[string]reqFigure{}}
	for name, d := range reqDur {
		hb.requests[strings.TrimPrefix(name, "req.")] = reqFigure{perCall: float64(len(d)) / float64(max(calls, 1)), medMs: median(d)}
	}
	return hb
}

// callPoints finds, for one key's events, the first of each point inside
// its first request (gw.recv to gw.sent: the replay that follows repeats
// some), and derives the two commits from the executor's requests.
func callPoints(evs []hopEvent, reqs []hopEvent) (map[string]int64, bool) {
	slices.SortFunc(evs, func(a, b hopEvent) int { return int(a.At - b.At) })
	pts := map[string]int64{}
	for _, e := range evs {
		if _, seen := pts[e.Point]; !seen {
			pts[e.Point] = e.At
		}
		if e.Point == "gw.sent" {
			break
		}
	}
	if _, ok := pts["gw.recv"]; !ok {
		return nil, false
	}
	if _, ok := pts["gw.sent"]; !ok {
		return nil, false
	}
	if t, ok := pts["x.before_started_commit"]; ok {
		if e, ok := firstAfter(reqs, "req.EndTxn", t); ok {
			pts[endTxnAfter+"started"] = e
		}
	}
	if e, ok := lastBetween(reqs, "req.Fetch", pts[endTxnAfter+"started"], pts["x.after_started_commit"]); ok {
		pts[confirmFetch] = e
	}
	if t, ok := pts["x.during_outcome_commit"]; ok {
		if e, ok := firstAfter(reqs, "req.EndTxn", t); ok {
			pts[endTxnAfter+"outcome"] = e
		}
	}
	return pts, true
}

func firstAfter(reqs []hopEvent, point string, t int64) (int64, bool) {
	for _, r := range reqs {
		if r.At > t && r.Point == point {
			return r.At, true
		}
	}
	return 0, false
}

// lastBetween is the last request named point answered in (from, to];
// none when either end is missing.
func lastBetween(reqs []hopEvent, point string, from, to int64) (int64, bool) {
	var at int64
	for _, r := range requestsBetween(reqs, from, to) {
		if r.Point == point {
			at = r.At
		}
	}
	return at, at != 0
}

// requestsBetween are the requests answered in (from, to]; none when
// either end is missing.
func requestsBetween(reqs []hopEvent, from, to int64) []hopEvent {
	if from == 0 || to == 0 {
		return nil
	}
	var out []hopEvent
	for _, r := range reqs {
		if r.At > from && r.At <= to {
			out = append(out, r)
		}
	}
	return out
}

func medians(m map[string][]float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = median(v)
	}
	return out
}

func median(v []float64) float64 { return stat(v).med() }

// rows prints the breakdown: each point's median offset and step.
func (hb *hopBreakdown) rows() []string {
	var out []string
	for _, hp := range hopPoints {
		at, ok := hb.at[hp.point]
		if !ok {
			continue
		}
		out = append(out, fmt.Sprintf("%7.2f ms  +%6.2f  %s", at, hb.step[hp.point], hp.what))
	}
	names := make([]string, 0, len(hb.requests))
	for n := range hb.requests {
		names = append(names, n)
	}
	slices.Sort(names)
	var reqs []string
	for _, n := range names {
		f := hb.requests[n]
		reqs = append(reqs, fmt.Sprintf("%s %.1f× %.2f ms", n, f.perCall, f.medMs))
	}
	if len(reqs) > 0 {
		out = append(out, "executor requests per call (count × median round trip): "+strings.Join(reqs, ", "))
	}
	return out
}
