package sim

import (
	"strings"
	"testing"

	"github.com/atmostonce/toolexec/executor"
	"github.com/atmostonce/toolexec/wire"
)

// keyOn is a routing key of partition p among n.
func keyOn(t *testing.T, p, n int32) string {
	t.Helper()
	for i := 0; i < 10000; i++ {
		rk := wire.RoutingKey("t0", "k"+string(rune('a'+i%26))+strings.Repeat("x", i/26))
		if wire.Partition(rk, n) == p {
			return rk
		}
	}
	t.Fatalf("no key on partition %d", p)
	return ""
}

// The order of one member's hooks decides: a call started while the
// tenure it committed in is open is fine; a call started after the
// release of that tenure, even once the partition came back, is not;
// and an abandoned member's late starts reach no tool and are not
// counted.
func TestOwnersJudgeCallsByTheTenureTheyCommittedIn(t *testing.T) {
	const n = 4
	rk := keyOn(t, 2, n)
	cases := []struct {
		name  string
		steps func(h executor.Hooks, o *owners)
		want  string // a violation's kind; "" none
	}{
		{"started while held", func(h executor.Hooks, _ *owners) {
			h.Ownership(true, []int32{2})
			h.At(executor.PointAfterStartedCommit, rk)
			h.At(executor.PointDuringCall, rk)
			h.Ownership(false, []int32{2})
		}, ""},
		{"started after the release", func(h executor.Hooks, _ *owners) {
			h.Ownership(true, []int32{2})
			h.At(executor.PointAfterStartedCommit, rk)
			h.Ownership(false, []int32{2})
			h.At(executor.PointDuringCall, rk)
		}, "call_after_release"},
		{"started once the partition came back", func(h executor.Hooks, _ *owners) {
			h.Ownership(true, []int32{2, 3})
			h.At(executor.PointAfterStartedCommit, rk)
			h.Ownership(false, []int32{2, 3})
			h.Ownership(true, []int32{2})
			h.At(executor.PointDuringCall, rk)
		}, "call_after_release"},
		{"committed after the release", func(h executor.Hooks, _ *owners) {
			h.Ownership(true, []int32{2})
			h.Ownership(false, []int32{2})
			h.At(executor.PointAfterStartedCommit, rk)
			h.At(executor.PointDuringCall, rk)
		}, "call_after_release"},
		{"another partition released", func(h executor.Hooks, _ *owners) {
			h.Ownership(true, []int32{2, 3})
			h.At(executor.PointAfterStartedCommit, rk)
			h.Ownership(false, []int32{3})
			h.At(executor.PointDuringCall, rk)
		}, ""},
		{"no commit reported", func(h executor.Hooks, _ *owners) {
			h.Ownership(true, []int32{2})
			h.At(executor.PointDuringCall, rk)
		}, "call_without_commit"},
		{"abandoned", func(h executor.Hooks, o *owners) {
			h.Ownership(true, []int32{2})
			h.At(executor.PointAfterStartedCommit, rk)
			h.Ownership(false, []int32{2})
			o.abandon("m1")
			h.At(executor.PointDuringCall, rk)
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := newOwners(n)
			c.steps(o.hooks("m1"), o)
			_, vs := o.result()
			switch {
			case c.want == "" && len(vs) > 0:
				t.Fatalf("violations %q, want none", vs)
			case c.want != "" && (len(vs) != 1 || !strings.HasPrefix(vs[0], c.want+":")):
				t.Fatalf("violations %q, want one %s", vs, c.want)
			}
		})
	}
}
