package chaos

import (
	"maps"
	"slices"
)

// checkApprovals: no call of ToolApproval ran without a committed
// approval of its request and its digest. In the log, every started event
// of such a key follows an approved event naming the same intent, with the
// digest the request recorded (foldEvent marks the generation Approved);
// at the tool, an effect under such a call's downstream key is checked by
// checkEffect against the same mark.
func checkApprovals(in checkInput, r *Report) {
	r.Approvals = map[string]int{}
	for _, rk := range slices.Sorted(maps.Keys(in.hist)) {
		h := in.hist[rk]
		for what, n := range h.Approvals {
			r.Approvals[what] += n
		}
		if h.Tool != ToolApproval {
			continue
		}
		for _, g := range h.Calls {
			if !g.Approved {
				r.CallsWithoutApproval++
				r.violate("call_without_approval: %s: call %s started under %s without an approved event of its request and digest", rk, g.ID, g.DK)
			}
		}
	}
}
