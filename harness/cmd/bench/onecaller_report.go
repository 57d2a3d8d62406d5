package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// floorOf is the floor of a path made of hops produce round trips, txns
// transaction round trips and tools calls of the tool: the sum of their
// quantiles (q is 0.5, 0.9 or 0.99). Summing p99s overstates the p99 of
// the sum; it is the generous bound the target is stated against.
func (r *oneCallerResult) floorOf(q float64, hops, txns, tools int) float64 {
	at := func(p string) float64 { return ms(quantile(r.lat[p], q)) }
	return float64(hops)*at(pathProduce) + float64(txns)*at(pathTxn) + float64(tools)*at(pathTool)
}

// The floors: a new key is a hop, two transactions and the tool; a replay
// a hop and one transaction.
func (r *oneCallerResult) floorNew(q float64) float64    { return r.floorOf(q, 1, 2, 1) }
func (r *oneCallerResult) floorReplay(q float64) float64 { return r.floorOf(q, 1, 1, 0) }

// The targets, against the floors of the same run.
const (
	newP50Slack    = 3.0 // ms over the new key's floor, p50
	newP99Factor   = 2.0 // × the new key's floor, p99
	replayP50Slack = 2.0 // ms over the replay's floor, p50
)

var pathWhat = map[string]string{
	pathTool:          "the tool called directly (HTTP)",
	pathProduce:       "Kafka: produce (acks=all) -> read_committed consume",
	pathTxn:           "Kafka: transaction (begin, produce, commit) -> read_committed consume",
	pathGatewayNew:    "gateway, new key",
	pathGatewayReplay: "gateway, replay",
	pathClientNew:     "client.Call (Kafka), new key",
	pathClientReplay:  "client.Call (Kafka), replay",
}

func (r *oneCallerResult) print(w io.Writer) {
	fmt.Fprintf(w, "8 one caller: %d calls per path, interleaved; load average at the start %s\n", r.calls, r.load)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "path\tp50 ms\tp90 ms\tp99 ms\tagainst the floor\t")
	for _, p := range oneCallerPaths {
		p50, p90, p99 := r.quantiles(p)
		row(tw, pathWhat[p], fmt.Sprintf("%.1f", p50), fmt.Sprintf("%.1f", p90), fmt.Sprintf("%.1f", p99), r.against(p))
	}
	row(tw, "floor, new key: hop + 2 transactions + tool", fmt.Sprintf("%.1f", r.floorNew(0.5)), fmt.Sprintf("%.1f", r.floorNew(0.9)), fmt.Sprintf("%.1f", r.floorNew(0.99)), "")
	row(tw, "floor, replay: hop + 1 transaction", fmt.Sprintf("%.1f", r.floorReplay(0.5)), fmt.Sprintf("%.1f", r.floorReplay(0.9)), fmt.Sprintf("%.1f", r.floorReplay(0.99)), "")
	tw.Flush()
	for _, h := range []struct {
		what string
		hb   *hopBreakdown
	}{{"gateway new key", r.hops}, {"gateway replay", r.rhops}} {
		if h.hb == nil || h.hb.calls == 0 {
			continue
		}
		fmt.Fprintf(w, "hop by hop, %s (medians of %d calls; offset from the request, step from the point before):\n", h.what, h.hb.calls)
		for _, l := range h.hb.rows() {
			fmt.Fprintln(w, "  "+l)
		}
	}
	fmt.Fprintln(w)
}

// against says how path p stands against its floor and target.
func (r *oneCallerResult) against(p string) string {
	p50, _, p99 := r.quantiles(p)
	switch p {
	case pathGatewayNew, pathClientNew:
		f50, f99 := r.floorNew(0.5), r.floorNew(0.99)
		s := fmt.Sprintf("p50 floor%+.1f ms, p99 %.2f× floor", p50-f50, perOr0(p99, f99))
		if p == pathGatewayNew {
			s += "; " + verdict(p50 <= f50+newP50Slack && p99 <= newP99Factor*f99, fmt.Sprintf("p50 <= floor+%.0f, p99 <= %.0f×", newP50Slack, newP99Factor))
		}
		return s
	case pathGatewayReplay, pathClientReplay:
		f50 := r.floorReplay(0.5)
		s := fmt.Sprintf("p50 floor%+.1f ms", p50-f50)
		if p == pathGatewayReplay {
			s += "; " + verdict(p50 <= f50+replayP50Slack, fmt.Sprintf("p50 <= floor+%.0f", replayP50Slack))
		}
		return s
	}
	return ""
}

// jsonOneCaller is "one_caller" in the JSON line.
type jsonOneCaller struct {
	Calls       int                      `json:"calls"`
	Paths       map[string]jsonQuantiles `json:"paths"`
	FloorNew    jsonQuantiles            `json:"floor_new"`
	FloorReplay jsonQuantiles            `json:"floor_replay"`
	// Hops: each traced point's median offset from the gateway's receipt
	// of the request, ms.
	Hops       map[string]float64 `json:"hops_ms,omitempty"`
	ReplayHops map[string]float64 `json:"replay_hops_ms,omitempty"`
	LoadAvg    string             `json:"load_avg"`
}

type jsonQuantiles struct {
	P50 float64 `json:"p50_ms"`
	P90 float64 `json:"p90_ms"`
	P99 float64 `json:"p99_ms"`
}

func (r *oneCallerResult) json() *jsonOneCaller {
	j := &jsonOneCaller{Calls: r.calls, Paths: map[string]jsonQuantiles{}, LoadAvg: r.load}
	for _, p := range oneCallerPaths {
		p50, p90, p99 := r.quantiles(p)
		j.Paths[p] = jsonQuantiles{round3(p50), round3(p90), round3(p99)}
	}
	j.FloorNew = jsonQuantiles{round3(r.floorNew(0.5)), round3(r.floorNew(0.9)), round3(r.floorNew(0.99))}
	j.FloorReplay = jsonQuantiles{round3(r.floorReplay(0.5)), round3(r.floorReplay(0.9)), round3(r.floorReplay(0.99))}
	j.Hops, j.ReplayHops = r.hops.json(), r.rhops.json()
	return j
}

// json is each point's median offset, ms; nil without calls.
func (hb *hopBreakdown) json() map[string]float64 {
	if hb == nil || hb.calls == 0 {
		return nil
	}
	out := map[string]float64{}
	for p, v := range hb.at {
		out[p] = round3(v)
	}
	return out
}
