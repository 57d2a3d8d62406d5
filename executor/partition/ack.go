package partition

import (
	"github.com/atmostonce/toolexec/overlay"
	"github.com/atmostonce/toolexec/saga"
)

// Committed acknowledges that rd's transaction committed. materialised
// says whether rd.Overlay was written to the view; if not, the
// partitions it touched catch up from the log before their next use.
// It returns the partitions whose count of keys in doubt changed
// (KeysInDoubt).
func (c *Core) Committed(rd *Decisions, materialised bool) []int32 {
	c.unrecorded = nil
	for _, cm := range rd.Recorded {
		c.calls.forget(cm.Call)
	}
	if !materialised {
		c.catchUp(rd.partitions())
		return nil
	}
	return c.countDoubt(rd.Overlay)
}

// Aborted acknowledges that rd's transaction did not commit: its calls
// are not dispatched, its completions stay unrecorded for the next tick,
// its snapshot step is void, and the polled records come again (the
// session rewound them). endUnknown says the end's outcome is unknown
// (it may have committed): the partitions it touched catch up from the
// log before their next use.
func (c *Core) Aborted(rd *Decisions, endUnknown bool) {
	for _, call := range rd.Calls {
		c.calls.forget(call)
		c.occ.free(call, 0)
	}
	c.abandonRound(rd)
	c.resumeWalks(rd)
	c.unrecorded = append([]Completion(nil), rd.Recorded...)
	if endUnknown {
		c.catchUp(rd.partitions())
	}
}

// Skipped acknowledges a Decisions value that produced nothing, with nothing polled:
// there was no transaction. Only the completions that still need one stay
// (stale ones were dropped).
func (c *Core) Skipped(rd *Decisions) {
	c.unrecorded = append([]Completion(nil), rd.Recorded...)
}

// partitions lists the partitions rd writes events to or read the view of.
func (rd *Decisions) partitions() map[int32]bool {
	ps := rd.Touched() // reads write events without an overlay entry
	rd.Overlay.Entries(func(en *overlay.Entry) { ps[en.P] = true })
	return ps
}

// countDoubt moves the per-partition count of unsettled keys by what the
// tick changed, and returns the owned partitions it touched.
func (c *Core) countDoubt(ov *overlay.Overlay) []int32 {
	touched := map[int32]bool{}
	ov.Entries(func(en *overlay.Entry) {
		was := inDoubt(en.Prev)
		is := inDoubt(en.Cur)
		if pt, ok := c.parts[en.P]; ok {
			switch {
			case is && !was:
				pt.unsettled++
			case was && !is:
				pt.unsettled--
			}
		}
		touched[en.P] = true
	})
	var out []int32
	for p := range touched {
		if _, ok := c.parts[p]; ok {
			out = append(out, p)
		}
	}
	return out
}

func inDoubt(r *saga.Record) bool { return r != nil && r.Status.InDoubt() }
