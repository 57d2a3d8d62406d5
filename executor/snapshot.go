package executor

import (
	"fmt"
	"time"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/saga"
)

// Snapshot rounds: every record outlives the retention of the events it
// was folded from (issue 12; eventlog/gap.go has the restore side).
//
// The event log is deleted by time. A key in doubt for longer than the
// log's retention, or escalated and waiting for an operator, keeps only
// its started event, and that is deleted too; a member restoring from an
// empty data dir would then not know the key and would run a duplicate.
// So every SnapshotInterval the member walks its whole view, a bounded
// step per tick, and restates each record of a partition it owns as a
// snapshot event (saga.Snapshot), then each pending read, then writes a
// round event per partition naming the offset the round began at. A fold
// of the log from that offset alone gives the whole view: every record
// that existed when the round began is restated after it, and every key
// created since has all its events after it (saga.Apply builds a record
// only from a started event or a snapshot, so the older events of a key
// folded before its snapshot change nothing).
//
// Designs rejected: a compacted event log (compaction keeps a key's last
// event, which alone does not hold its record); a second, compacted topic
// of records as Kafka Streams keeps (a second write of every record on
// every tick, where a round restates each record once per interval).

const (
	// snapshotStep bounds the records one tick restates, so that a round
	// over a million keys never holds up a tick: it spreads over about
	// 4,000 ticks (minutes), well inside any interval.
	snapshotStep = 256
	// maxSnapshotInterval: rounds come at least daily, whatever the
	// retention, so that a DeleteRecords or a retention lowered by an
	// operator leaves at most a day to a complete round.
	maxSnapshotInterval = 24 * time.Hour
	// snapshotRetentionShare: with an interval of a quarter of the
	// retention, a complete round stays in the log even when one round is
	// slow or a member restarted in the middle of one.
	snapshotRetentionShare = 4
	// snapshotReadsLimit bounds the pending reads restated per partition
	// and round; reads live from their start to their answer, so there
	// are few.
	snapshotReadsLimit = resumeReadsLimit
)

// abandonRound drops the round a tick that did not commit took a step of:
// the records it restated are not in the log, so the round could not
// vouch for them. The next tick starts a new round.
func (e *Executor) abandonRound(t *tick) {
	if t.rounded && e.round != nil {
		e.cfg.Logger.Info("snapshot round abandoned (its tick did not commit); a new one starts")
	}
	if t.rounded {
		e.round = nil
		e.lastRound = time.Time{}
	}
}

// round is one snapshot round over the view.
type round struct {
	from           map[int32]int64  // partition -> its checkpoint when the round began
	epoch          map[int32]uint64 // partition -> its ownership epoch then
	afterT, afterK string           // the walk's cursor: the last record restated
	incomplete     map[int32]bool   // partitions a record of which could not be restated
}

// snapshotInterval is how often rounds start.
func (e *Executor) snapshotInterval() time.Duration {
	if e.cfg.SnapshotInterval > 0 {
		return e.cfg.SnapshotInterval
	}
	if r := e.layout.EventRetention; r > 0 {
		return min(maxSnapshotInterval, r/snapshotRetentionShare)
	}
	return maxSnapshotInterval
}

// snapshotStep advances the round by one bounded step, starting one when
// it is due. It runs at the end of a tick's build, so what it restates
// includes everything the tick decided before it.
func (t *tick) snapshotStep() error {
	e := t.e
	if e.round == nil {
		if time.Since(e.lastRound) < e.snapshotInterval() || !e.startRound() {
			return nil
		}
	}
	t.rounded = true
	recs, err := e.nextRecords()
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if err := t.restate(rec); err != nil {
			return err
		}
	}
	if len(recs) < snapshotStep {
		return t.endRound()
	}
	return nil
}

// startRound begins a round over the owned, restored partitions; false
// when there is none.
func (e *Executor) startRound() bool {
	r := &round{from: map[int32]int64{}, epoch: map[int32]uint64{}, incomplete: map[int32]bool{}}
	for p, o := range e.owned {
		if !o.restored {
			continue
		}
		cp, err := e.store.Checkpoint(e.cfg.Names.Events, p)
		if err != nil {
			continue
		}
		r.from[p], r.epoch[p] = cp, o.epoch
	}
	if len(r.from) == 0 {
		return false
	}
	e.round = r
	return true
}

// nextRecords reads the next step of the walk and moves the cursor.
func (e *Executor) nextRecords() ([]*saga.Record, error) {
	var recs []*saga.Record
	_, err := e.store.ScanRecords(e.round.afterT, e.round.afterK, snapshotStep, func(rec *saga.Record) error {
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: snapshot walk: %w", ErrFatal, err)
	}
	if n := len(recs); n > 0 {
		e.round.afterT, e.round.afterK = recs[n-1].Tenant, recs[n-1].Key
	}
	return recs, nil
}

// inRound reports whether p is still held as it was when the round began.
func (e *Executor) inRound(p int32) bool {
	o, ok := e.owned[p]
	_, in := e.round.from[p]
	return in && ok && o.epoch == e.round.epoch[p] && o.restored
}

// restate writes a snapshot of rec's current value (this tick's overlay
// first) into its partition's log. A snapshot too large to produce is not
// written, and its partition gets no round event this time.
func (t *tick) restate(stored *saga.Record) error {
	p := t.e.partitionOf(stored.Tenant, stored.Key)
	if !t.e.inRound(p) {
		return nil
	}
	en, err := t.load(p, stored.Tenant, stored.Key)
	if err != nil || en.cur == nil {
		return err
	}
	ev := saga.Snapshot(en.cur, t.now)
	b, err := eventlog.Encode(&ev)
	if err != nil || len(b) > maxRecordBytes {
		t.e.round.incomplete[p] = true
		t.e.cfg.Logger.Error("a record cannot be restated; its partition's round stays incomplete", "key", stored.Tenant+"/"+stored.Key, "bytes", len(b), "err", err)
		return nil
	}
	t.produce(eventlog.EncodeRecord(t.e.cfg.Names, p, b, ev.Tenant, ev.Key, ""))
	t.touched[p] = true
	en.cur = saga.Apply(en.cur, ev)
	t.e.m.SnapshotEvents.Inc()
	return nil
}

// endRound restates each partition's pending reads and ends its round.
func (t *tick) endRound() error {
	e := t.e
	for p, from := range e.round.from {
		if !e.inRound(p) || e.round.incomplete[p] {
			continue
		}
		if err := t.restateReads(p); err != nil {
			return err
		}
		ev := saga.Event{Kind: saga.EvRound, At: t.now, RoundFrom: from}
		b, err := eventlog.Encode(&ev)
		if err != nil {
			return fmt.Errorf("%w: round event: %w", ErrFatal, err)
		}
		t.produce(eventlog.EncodeRecord(e.cfg.Names, p, b, "", "", ""))
		t.touched[p] = true
	}
	e.round, e.lastRound = nil, time.Now()
	e.m.SnapshotRounds.Inc()
	return nil
}

// restateReads writes p's pending reads again, except those this tick
// starts or answers itself (their own events are in the round already).
func (t *tick) restateReads(p int32) error {
	evs, err := eventlog.PendingReads(t.e.store, p, snapshotReadsLimit)
	if err != nil {
		return fmt.Errorf("%w: pending reads of %d: %w", ErrFatal, p, err)
	}
	for _, ev := range evs {
		if _, inTick := t.reads[string(eventlog.ReadKeyOf(p, ev))]; inTick {
			continue
		}
		b, err := eventlog.Encode(ev)
		if err != nil {
			return fmt.Errorf("%w: pending read: %w", ErrFatal, err)
		}
		t.produce(eventlog.EncodeRecord(t.e.cfg.Names, p, b, ev.Tenant, ev.Key, ""))
		t.touched[p] = true
	}
	return nil
}
