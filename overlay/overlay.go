// Package overlay holds the one type every fold of the event log into the
// stored view goes through: the Overlay. "The view" is, everywhere in this
// repository, the records a member keeps in Pebble, folded from the event
// log (package state stores it); an overlay is one batch of changes to it. The executor's tick, the
// executor's restore (package eventlog) and the reconciler's view each
// fold a batch of committed events over the records they have stored,
// and write the result in one batch together with the log position it
// reflects.
//
// One rule lives here: the view never leads the log. An overlay is
// written only through Write, which puts the records and the checkpoint
// of the log position they reflect into the same batch; callers write
// only positions the log has committed (the tick after its transaction
// committed, a restore or the reconciler after a read-committed read). A
// crash between the log and the view leaves the view behind, and the next
// restore catches up from its checkpoint; saga.Apply is total, so folding
// a tail twice is harmless.
//
// The package is pure: it imports the saga only, and reads and writes
// through the Base and Writer it is given.
package overlay

import (
	"github.com/atmostonce/toolexec/internal/invariants"
	"github.com/atmostonce/toolexec/saga"
)

// Key names one record: the tenant and the idempotency key.
type Key struct{ Tenant, Key string }

// ReadID names one pending read (saga/read.go): a read-only call taken on
// and not yet answered. Intent ids are unique per agent, not across
// tenants, so the key is part of it.
type ReadID struct {
	P                     int32
	Tenant, Key, IntentID string
}

// ReadIDOf names the pending read a read_started or read_answered event
// on partition p is about.
func ReadIDOf(p int32, ev *saga.Event) ReadID {
	return ReadID{P: p, Tenant: ev.Tenant, Key: ev.Key, IntentID: ev.IntentID}
}

// Base is the stored view an overlay reads through (a state.Store).
type Base interface {
	Get(tenant, key string) (*saga.Record, error)
}

// Writer takes an overlay's writes: a batch of the store, which the
// caller commits.
type Writer interface {
	// Put replaces the record prev (as stored, nil if none) of partition
	// p with rec (nil deletes it).
	Put(p int32, prev, rec *saga.Record) error
	// PutRead stores a pending read; DeleteRead removes an answered one.
	PutRead(id ReadID, ev *saga.Event) error
	DeleteRead(id ReadID) error
	// SetCheckpoint records that the view holds topic/p up to next.
	SetCheckpoint(topic string, p int32, next int64) error
}

// Entry is one key's record before the overlay's events (Prev, as
// stored) and after them (Cur). Cur is the caller's to read; change it
// only through Apply, except where a caller's view keeps less than the
// fold (the reconciler drops settled results: Trim).
type Entry struct {
	P    int32
	K    Key
	Prev *saga.Record
	Cur  *saga.Record

	events []saga.Event // applied since Load, kept only when invariants are on
	// dirty: an event that may change the record was applied. An entry
	// only loaded, or given only audit facts (saga.EventKind.AuditOnly),
	// holds the stored record and is not written again.
	dirty bool
}

// Changed reports whether an event that may change the record was
// applied to en: Write puts only such entries, the others' stored record
// is Prev.
func (en *Entry) Changed() bool { return en.dirty }

// Overlay is a fold of events over a base view, not yet written. Not safe
// for concurrent use.
type Overlay struct {
	base    Base
	strict  bool
	entries map[Key]*Entry
	reads   map[ReadID]*saga.Event // nil: answered
}

// Option configures an overlay.
type Option func(*Overlay)

// Strict marks an overlay whose events were just decided for the records
// it holds (the executor's tick): each event must change its record, and
// under the invariants build an event that the fold ignores panics. A
// restore or the reconciler folds whatever the log holds and is not
// strict (saga.Apply is total).
func Strict() Option { return func(o *Overlay) { o.strict = true } }

// New is an empty overlay over base.
func New(base Base, opts ...Option) *Overlay {
	o := &Overlay{base: base, entries: map[Key]*Entry{}, reads: map[ReadID]*saga.Event{}}
	for _, opt := range opts {
		opt(o)
	}
	return o
}

// Lookup returns the entry of (tenant, key) when the overlay holds it.
func (o *Overlay) Lookup(tenant, key string) (*Entry, bool) {
	en, ok := o.entries[Key{tenant, key}]
	return en, ok
}

// Load returns the entry of (tenant, key) on partition p, reading the
// base the first time. The base's record is cloned: the overlay never
// aliases the view.
func (o *Overlay) Load(p int32, tenant, key string) (*Entry, error) {
	k := Key{tenant, key}
	if en, ok := o.entries[k]; ok {
		return en, nil
	}
	rec, err := o.base.Get(tenant, key)
	if err != nil {
		return nil, err
	}
	en := &Entry{P: p, K: k, Prev: rec, Cur: rec.Clone()}
	o.entries[k] = en
	return en, nil
}

// Apply folds one record event into en (saga.Apply).
func (o *Overlay) Apply(en *Entry, ev saga.Event) {
	invariants.Check(!ev.Kind.IsRead() && ev.Kind != saga.EvRound, "overlay: %s is not about a record", ev.Kind)
	en.dirty = en.dirty || !ev.Kind.AuditOnly()
	if !invariants.Enabled {
		en.Cur = saga.Apply(en.Cur, ev)
		return
	}
	before := en.Cur.Clone()
	en.Cur = saga.Apply(en.Cur, ev)
	en.events = append(en.events, ev)
	if o.strict && changes(ev.Kind) {
		invariants.Check(!sameRecord(before, en.Cur), "overlay: %s of %s/%s (call %q) changed nothing: the saga decided an event its own fold ignores",
			ev.Kind, ev.Tenant, ev.Key, ev.CallID)
	}
}

// Trim replaces en's current record by a reduced form of it (the
// reconciler's view drops settled results). The re-fold check then
// compares against the reduced form. Trim alone does not make the entry
// written: the stored record was reduced when it was written.
func (o *Overlay) Trim(en *Entry, f func(*saga.Record) *saga.Record) { en.Cur = f(en.Cur) }

// Fold folds one event of partition p: a record event into its key's
// entry, a read event into the pending reads. A round event is about the
// partition and changes nothing here.
func (o *Overlay) Fold(p int32, ev *saga.Event) error {
	switch {
	case ev.Kind == saga.EvRound:
		return nil
	case ev.Kind.IsRead():
		o.NoteRead(p, ev)
		return nil
	}
	en, err := o.Load(p, ev.Tenant, ev.Key)
	if err != nil {
		return err
	}
	o.Apply(en, *ev)
	return nil
}

// NoteRead records a read event: read_started makes the read pending,
// read_answered ends it.
func (o *Overlay) NoteRead(p int32, ev *saga.Event) {
	if ev.Kind == saga.EvReadStarted {
		o.reads[ReadIDOf(p, ev)] = ev
		return
	}
	o.reads[ReadIDOf(p, ev)] = nil
}

// Read reports what the overlay knows of a pending read: its started
// event (nil once answered), and whether the overlay knows it at all
// (false: ask the base).
func (o *Overlay) Read(id ReadID) (ev *saga.Event, known bool) {
	ev, known = o.reads[id]
	return ev, known
}

// Entries calls fn for every entry, in no order.
func (o *Overlay) Entries(fn func(*Entry)) {
	for _, en := range o.entries {
		fn(en)
	}
}

// Changed reports whether Write would put anything but checkpoints: a
// record an event may have changed, or a pending read taken on or
// answered. A write of checkpoints alone needs no sync: lost, the view
// lags the log, and a restore folds the tail again to the same records.
func (o *Overlay) Changed() bool {
	if len(o.reads) > 0 {
		return true
	}
	for _, en := range o.entries {
		if en.dirty {
			return true
		}
	}
	return false
}

// Len is the number of keys the overlay holds.
func (o *Overlay) Len() int { return len(o.entries) }

// Write puts every changed entry (Changed), every pending read and the
// checkpoints of the log positions they reflect into w (topic -> next
// offset per partition), in one batch the caller then commits. An entry
// that no event changed is not put again (a replay rewrote its
// record for its time alone). each, when not nil, runs after each entry,
// put or not, for writes of the caller's own that must commit with it.
// Call it only for positions the log has committed: that is how the view
// never leads the log.
func (o *Overlay) Write(w Writer, topic string, checkpoints map[int32]int64, each func(*Entry) error) error {
	for _, en := range o.entries {
		o.checkRefold(en)
		if !en.dirty {
			o.checkUnchanged(en)
		} else if err := w.Put(en.P, en.Prev, en.Cur); err != nil {
			return err
		}
		if each != nil {
			if err := each(en); err != nil {
				return err
			}
		}
	}
	for id, ev := range o.reads {
		var err error
		if ev == nil {
			err = w.DeleteRead(id)
		} else {
			err = w.PutRead(id, ev)
		}
		if err != nil {
			return err
		}
	}
	for p, next := range checkpoints {
		if err := w.SetCheckpoint(topic, p, next); err != nil {
			return err
		}
	}
	return nil
}

// Reset empties the overlay for the next batch (a restore writes in
// batches).
func (o *Overlay) Reset() {
	clear(o.entries)
	clear(o.reads)
}

// checkUnchanged (invariants only): an entry no event changed holds the
// stored record. The comparison clones both records, so it runs only
// under the invariants build, like every check that costs.
func (o *Overlay) checkUnchanged(en *Entry) {
	if !invariants.Enabled {
		return
	}
	invariants.Check(sameRecord(en.Prev, en.Cur), "overlay: %s/%s changed with no event that changes it", en.K.Tenant, en.K.Key)
}

// checkRefold (invariants only): a strict entry's current record is the
// fold of its events over the stored one. A difference means the overlay
// was changed outside Apply, or a record is shared between entries.
func (o *Overlay) checkRefold(en *Entry) {
	if !invariants.Enabled || !o.strict {
		return
	}
	r := en.Prev.Clone()
	for _, ev := range en.events {
		r = saga.Apply(r, ev)
	}
	invariants.Check(sameRecord(r, en.Cur), "overlay: the re-fold of %d events differs from the record the tick kept", len(en.events))
}
