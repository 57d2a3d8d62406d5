package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
)

// The hop-by-hop trace of scenario 8: the gateway's calls, each from the
// request's arrival to its answer written, through the moments both
// members recorded (trace.go). The points, in the order a call passes
// them; the commits are the executor's EndTxn answers that follow the
// points before them (a request belongs to no one key, but with one caller
// the next EndTxn is this call's).
type hopPoint struct{ point, what string }

// newKeyHops are a new key's points.
var newKeyHops = []hopPoint{
	{"gw.recv", "gateway: request received"},
	{"intent.acked", "gateway: intent produced (acknowledged)"},
	{"intent.fetched", "executor: intent arrives in a fetch"},
	{"x." + "before_started_commit", "executor: decided, started event produced, transaction ending"},
	{endTxnAfter + "started", "executor: started transaction committed (EndTxn answered)"},
	{confirmFetch, "executor: commit marker seen (the confirmation's last fetch answered)"},
	{"x." + "after_started_commit", "executor: started confirmed on the events partition, call about to be dispatched"},
	{"x." + "during_call", "executor: tool called"},
	{"x." + "after_call", "executor: tool answered"},
	{"x." + "during_outcome_commit", "executor: outcome and answer produced, transaction ending"},
	{endTxnAfter + "outcome", "executor: outcome transaction committed (EndTxn answered)"},
	{"answer.fetched", "gateway: answer arrives in a fetch"},
	{"gw.sent", "gateway: response written"},
}

// replayHops are a replay's points: no call, one transaction.
var replayHops = []hopPoint{
	{"gw.recv", "gateway: request received"},
	{"intent.acked", "gateway: intent produced (acknowledged)"},
	{"intent.fetched", "executor: intent arrives in a fetch"},
	{endTxnAfter + "replay", "executor: replay's transaction committed (EndTxn answered)"},
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

// hopBreakdown is the trace's summary over the traced calls of one kind.
type hopBreakdown struct {
	points []hopPoint
	calls  int
	// at is each point's median offset from gw.recv, step the median of
	// its difference to the point before (both ms; a point no call had is
	// left out).
	at, step map[string]float64
	// requests are, for each commit point, the executor's Kafka requests
	// answered since the point before it, per call: count and median
	// round trip in ms by request name; reqSum the median of their sum.
	requests map[string]map[string]reqFigure
	reqSum   map[string]float64
}

type reqFigure struct {
	perCall float64
	medMs   float64
}

// breakdown reads both members' events and summarises the gateway's new
// keys and their replays.
func (s *oneCallerSetup) breakdown() (newKey, replay *hopBreakdown, err error) {
	var gw, ex []hopEvent
	if err := s.peer.gw.do("trace", &gw); err != nil {
		return nil, nil, err
	}
	if err := s.peer.ex.child.do("trace", &ex); err != nil {
		return nil, nil, err
	}
	if err := s.dumpTrace(gw, ex); err != nil {
		return nil, nil, err
	}
	prefix := oneCallerName + "-g-"
	return summariseHops(gw, ex, prefix, 0, newKeyHops), summariseHops(gw, ex, prefix, 1, replayHops), nil
}

// dumpTrace writes both members' events, as read, to --trace-dump (when
// set): one JSON object {"gateway": [...], "executor": [...]}.
func (s *oneCallerSetup) dumpTrace(gw, ex []hopEvent) error {
	if s.dump == "" {
		return nil
	}
	b, err := json.Marshal(map[string][]hopEvent{"gateway": gw, "executor": ex})
	if err != nil {
		return err
	}
	return os.WriteFile(s.dump, b, 0o644)
}

// summariseHops joins the events of the gateway (gw) and the executor (ex)
// by routing key, for the keys whose key part starts with keyPrefix, and
// summarises the nth request of each key (0: the new key, 1: its replay)
// over points.
func summariseHops(gw, ex []hopEvent, keyPrefix string, nth int, points []hopPoint) *hopBreakdown {
	byKey := map[string][]hopEvent{}
	for _, e := range slices.Concat(gw, ex) {
		if e.Key != "" && strings.Contains(e.Key, "/"+keyPrefix) {
			byKey[e.Key] = append(byKey[e.Key], e)
		}
	}
	var reqs []hopEvent
	for _, e := range ex {
		if e.Key == "" {
			reqs = append(reqs, e)
		}
	}
	slices.SortFunc(reqs, func(a, b hopEvent) int { return cmp.Compare(a.At, b.At) })
	at, step := map[string][]float64{}, map[string][]float64{}
	reqDur, reqSum := map[string]map[string][]float64{}, map[string][]float64{}
	calls := 0
	for _, evs := range byKey {
		pts, ok := callPoints(evs, reqs, nth, points)
		if !ok {
			continue
		}
		calls++
		recv := pts["gw.recv"]
		prev := recv
		for _, hp := range points {
			t, ok := pts[hp.point]
			if !ok {
				continue
			}
			at[hp.point] = append(at[hp.point], float64(t-recv)/1e6)
			step[hp.point] = append(step[hp.point], float64(t-prev)/1e6)
			if strings.HasPrefix(hp.point, endTxnAfter) {
				addRequests(reqDur, reqSum, hp.point, requestsBetween(reqs, prev, t))
			}
			prev = t
		}
	}
	hb := &hopBreakdown{points: points, calls: calls, at: medians(at), step: medians(step),
		requests: map[string]map[string]reqFigure{}, reqSum: medians(reqSum)}
	for point, byName := range reqDur {
		hb.requests[point] = map[string]reqFigure{}
		for name, d := range byName {
			hb.requests[point][strings.TrimPrefix(name, "req.")] = reqFigure{perCall: float64(len(d)) / float64(max(calls, 1)), medMs: median(d)}
		}
	}
	return hb
}

// addRequests notes one call's requests of the step that ends at point.
func addRequests(byPoint map[string]map[string][]float64, sums map[string][]float64, point string, rs []hopEvent) {
	if byPoint[point] == nil {
		byPoint[point] = map[string][]float64{}
	}
	sum := 0.0
	for _, r := range rs {
		d := float64(r.DurNs) / 1e6
		byPoint[point][r.Point] = append(byPoint[point][r.Point], d)
		sum += d
	}
	sums[point] = append(sums[point], sum)
}

// callPoints finds, for one key's events, the first of each point inside
// its nth request (gw.recv to the gw.sent that follows), and derives the
// commits and the confirmation from the executor's requests.
func callPoints(evs []hopEvent, reqs []hopEvent, nth int, points []hopPoint) (map[string]int64, bool) {
	slices.SortFunc(evs, func(a, b hopEvent) int { return cmp.Compare(a.At, b.At) })
	evs, ok := nthRequest(evs, nth)
	if !ok {
		return nil, false
	}
	pts := map[string]int64{}
	for _, e := range evs {
		if _, seen := pts[e.Point]; !seen {
			pts[e.Point] = e.At
		}
	}
	var prev int64
	for _, hp := range points {
		if name, ok := strings.CutPrefix(hp.point, endTxnAfter); ok && prev != 0 {
			if e, ok := firstAfter(reqs, "req.EndTxn", prev); ok {
				pts[endTxnAfter+name] = e
			}
		}
		if hp.point == confirmFetch {
			if e, ok := lastBetween(reqs, "req.Fetch", pts[endTxnAfter+"started"], pts["x.after_started_commit"]); ok {
				pts[confirmFetch] = e
			}
			continue
		}
		if t, ok := pts[hp.point]; ok {
			prev = t
		}
	}
	return pts, true
}

// nthRequest cuts a key's sorted events to those of its nth request:
// from its nth gw.recv to the gw.sent that follows.
func nthRequest(evs []hopEvent, nth int) ([]hopEvent, bool) {
	seen := -1
	for i, e := range evs {
		if e.Point != "gw.recv" {
			continue
		}
		if seen++; seen < nth {
			continue
		}
		for j := i; j < len(evs); j++ {
			if evs[j].Point == "gw.sent" {
				return evs[i : j+1], true
			}
		}
		return nil, false
	}
	return nil, false
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

// rows prints the breakdown: each point's median offset and step, and
// under each commit the requests its step waited on.
func (hb *hopBreakdown) rows() []string {
	var out []string
	for _, hp := range hb.points {
		at, ok := hb.at[hp.point]
		if !ok {
			continue
		}
		out = append(out, fmt.Sprintf("%7.2f ms  +%6.2f  %s", at, hb.step[hp.point], hp.what))
		if rs := hb.requests[hp.point]; len(rs) > 0 {
			out = append(out, fmt.Sprintf("%19s requests (count per call × median round trip): %s; their sum %.2f ms", "", requestList(rs), hb.reqSum[hp.point]))
		}
	}
	return out
}

func requestList(rs map[string]reqFigure) string {
	names := make([]string, 0, len(rs))
	for n := range rs {
		names = append(names, n)
	}
	slices.Sort(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %.1f× %.2f", n, rs[n].perCall, rs[n].medMs))
	}
	return strings.Join(parts, ", ")
}
