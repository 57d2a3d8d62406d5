package overlay

import (
	"reflect"

	"github.com/atmostonce/toolexec/saga"
)

// changes reports whether an event of kind k changes the record it is
// decided for. Replayed and conflicted are audit facts; a snapshot
// restates the record as it is.
func changes(k saga.EventKind) bool { return !k.AuditOnly() && k != saga.EvSnapshot }

// sameRecord compares two records, ignoring LastEventAt (which every
// event but an audit fact moves) and the difference between empty and
// nil slices.
func sameRecord(a, b *saga.Record) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	x, y := *normal(a), *normal(b)
	x.LastEventAt, y.LastEventAt = 0, 0
	return reflect.DeepEqual(x, y)
}

func normal(r *saga.Record) *saga.Record {
	c := r.Clone()
	if len(c.Waiters) == 0 {
		c.Waiters = nil
	}
	if len(c.Args) == 0 {
		c.Args = nil
	}
	if len(c.Result) == 0 {
		c.Result = nil
	}
	if len(c.ArgsHash) == 0 {
		c.ArgsHash = nil
	}
	if c.Comp != nil && len(c.Comp.Result) == 0 {
		c.Comp.Result = nil
	}
	return c
}
