package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// printFlood prints the flood scenario's table: B's latency quiet and
// flooded with the targets of the scenario (p50 within 2x, p99 within 3x
// of quiet), what became of A's calls, and the processes' CPU.
func printFlood(w io.Writer, cfg config, runs []floodRun) {
	fc := cfg.flood
	fmt.Fprintf(w, "flood: tenant A %g calls/s of %s (%s, max_in_flight %d) from %d senders for %s, without waiting; tenant B %s every %s (each waits up to %s), %s alone first\n",
		fc.rate, toolSlow, fc.slow, fc.slowInFlight, fc.senders, fc.duration, toolNoop, fc.every, fc.bWait, fc.quiet)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row(tw, "mode", "B p50 ms quiet → flooded", "B p99 ms quiet → flooded", "B unanswered in the wait (quiet, flooded)", "A's calls", "gateway CPU µs per request", "executor CPU s", "target")
	for _, r := range runs {
		f := r.figures()
		gw := "-"
		if r.GatewayRequests > 0 {
			gw = fmt.Sprintf("%.0f (%d requests)", r.GatewayCPU/float64(r.GatewayRequests)*1e6, r.GatewayRequests)
		}
		row(tw, r.Mode,
			fmt.Sprintf("%.1f → %.1f (%.1f×)", f.QuietP50, f.FloodP50, f.P50Ratio),
			fmt.Sprintf("%.1f → %.1f (%.1f×)", f.QuietP99, f.FloodP99, f.P99Ratio),
			fmt.Sprintf("%d of %d, %d of %d", r.QuietLate, f.QuietN, r.FloodedLate, f.FloodN),
			outcomes(r.A), gw, fmt.Sprintf("%.1f", r.ExecutorCPU),
			verdict(f.P50Ratio <= 2 && f.P99Ratio <= 3 && r.FloodedLate == 0, "B p50 ≤ 2×, p99 ≤ 3× quiet"))
	}
	tw.Flush()
	fmt.Fprintln(w)
}

// outcomes lists A's calls by outcome, the most frequent first.
func outcomes(m map[string]int) string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int { return m[b] - m[a] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// jsonFlood is one mode of the flood in the report's JSON.
type jsonFlood struct {
	Mode               string         `json:"mode"`
	QuietP50Ms         float64        `json:"b_quiet_p50_ms"`
	QuietP99Ms         float64        `json:"b_quiet_p99_ms"`
	FloodP50Ms         float64        `json:"b_flooded_p50_ms"`
	FloodP99Ms         float64        `json:"b_flooded_p99_ms"`
	QuietLate          int            `json:"b_quiet_unanswered"`
	FloodedLate        int            `json:"b_flooded_unanswered"`
	A                  map[string]int `json:"a"`
	GatewayCPUUsPerReq float64        `json:"gateway_cpu_us_per_request,omitempty"`
	GatewayRequests    int            `json:"gateway_requests,omitempty"`
	ExecutorCPUSeconds float64        `json:"executor_cpu_s"`
}

func floodJSON(runs []floodRun) []jsonFlood {
	var out []jsonFlood
	for _, r := range runs {
		f := r.figures()
		j := jsonFlood{Mode: r.Mode, QuietP50Ms: round3(f.QuietP50), QuietP99Ms: round3(f.QuietP99), FloodP50Ms: round3(f.FloodP50), FloodP99Ms: round3(f.FloodP99),
			QuietLate: r.QuietLate, FloodedLate: r.FloodedLate, A: r.A, GatewayRequests: r.GatewayRequests, ExecutorCPUSeconds: round3(r.ExecutorCPU)}
		if r.GatewayRequests > 0 {
			j.GatewayCPUUsPerReq = round0(r.GatewayCPU / float64(r.GatewayRequests) * 1e6)
		}
		out = append(out, j)
	}
	return out
}
