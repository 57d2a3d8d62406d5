package partition

import (
	"time"

	"github.com/atmostonce/toolexec/saga"
)

// Snapshot rounds: every record outlives the retention of the events it
// was folded from (eventlog/gap.go has the restore side).
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

// round is one snapshot round over the view.
type round struct {
	from           map[int32]int64  // partition -> its checkpoint when the round began
	epoch          map[int32]uint64 // partition -> its ownership epoch then
	afterT, afterK string           // the walk's cursor: the last record restated
	incomplete     map[int32]bool   // partitions a record of which could not be restated
}

// snapshotStep advances the round by one bounded step, starting one when
// it is due. It runs at the end of the tick, so what it restates includes
// everything the tick decided before it.
func (s *stepper) snapshotStep() error {
	c := s.c
	if c.round == nil {
		if s.now.Sub(c.lastRound) < c.cfg.SnapshotInterval || !c.startRound() {
			return nil
		}
	}
	s.rd.rounded = true
	recs, err := c.nextRecords()
	if err != nil {
		return s.fatal(err)
	}
	for _, rec := range recs {
		if err := s.restate(rec); err != nil {
			return err
		}
	}
	if len(recs) < c.cfg.SnapshotStep {
		return s.endRound()
	}
	return nil
}

// startRound begins a round over the owned, restored partitions; false
// when there is none.
func (c *Core) startRound() bool {
	r := &round{from: map[int32]int64{}, epoch: map[int32]uint64{}, incomplete: map[int32]bool{}}
	for p, pt := range c.parts {
		if !pt.restored {
			continue
		}
		cp, err := c.view.Checkpoint(p)
		if err != nil {
			continue
		}
		r.from[p], r.epoch[p] = cp, pt.epoch
	}
	if len(r.from) == 0 {
		return false
	}
	c.round = r
	return true
}

// nextRecords reads the next step of the walk and moves the cursor.
func (c *Core) nextRecords() ([]*saga.Record, error) {
	var recs []*saga.Record
	_, err := c.view.ScanRecords(c.round.afterT, c.round.afterK, c.cfg.SnapshotStep, func(rec *saga.Record) error {
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n := len(recs); n > 0 {
		c.round.afterT, c.round.afterK = recs[n-1].Tenant, recs[n-1].Key
	}
	return recs, nil
}

// inRound reports whether p is still held as it was when the round began.
func (c *Core) inRound(p int32) bool {
	pt, ok := c.parts[p]
	_, in := c.round.from[p]
	return in && ok && pt.epoch == c.round.epoch[p] && pt.restored
}

// restate writes a snapshot of rec's current value (this tick's overlay
// first) into its partition's log. A snapshot too large to produce is not
// written, and its partition gets no round event this time; nor does a
// partition whose record the walk passes while its view is behind the log
// (a view write failed, or an end of unknown outcome, and its catch-up
// has not run): the record is not restated, and a round event would
// vouch for it.
func (s *stepper) restate(stored *saga.Record) error {
	p := s.c.partitionOf(stored.Tenant, stored.Key)
	if !s.c.inRound(p) {
		if _, in := s.c.round.from[p]; in && !s.c.round.incomplete[p] {
			s.c.round.incomplete[p] = true
			s.c.cfg.Logger.Info("a record was walked past while its partition was not caught up; its partition's round stays incomplete",
				"partition", p)
		}
		return nil
	}
	en, err := s.load(p, stored.Tenant, stored.Key)
	if err != nil || en.Cur == nil {
		return err
	}
	ev := saga.Snapshot(en.Cur, s.nowMs)
	if s.c.cfg.CheckSnapshot != nil {
		if err := s.c.cfg.CheckSnapshot(&ev); err != nil {
			s.c.round.incomplete[p] = true
			s.c.cfg.Logger.Error("a record cannot be restated; its partition's round stays incomplete", "key", stored.Tenant+"/"+stored.Key, "err", err)
			return nil
		}
	}
	s.rd.Events = append(s.rd.Events, Event{P: p, Ev: ev, Origin: s.origin})
	s.rd.Overlay.Apply(en, ev)
	s.rd.Snapshots++
	return nil
}

// endRound restates each partition's pending reads and ends its round.
func (s *stepper) endRound() error {
	c := s.c
	for p, from := range c.round.from {
		if !c.inRound(p) || c.round.incomplete[p] {
			continue
		}
		if err := s.restateReads(p); err != nil {
			return err
		}
		s.rd.Events = append(s.rd.Events, Event{P: p, Ev: saga.Event{Kind: saga.EvRound, At: s.nowMs, RoundFrom: from}, Origin: s.origin})
	}
	c.round, c.lastRound = nil, s.now
	s.rd.Rounds++
	return nil
}

// restateReads writes p's pending reads again, except those this tick
// starts or answers itself (their own events are in the round already).
func (s *stepper) restateReads(p int32) error {
	evs, err := s.c.view.PendingReads(p, SnapshotReadsLimit)
	if err != nil {
		return s.fatal(err)
	}
	for _, ev := range evs {
		if _, inTick := s.rd.Overlay.Read(readIDOf(p, ev)); inTick {
			continue
		}
		s.rd.Events = append(s.rd.Events, Event{P: p, Ev: *ev, Origin: s.origin})
	}
	return nil
}

// abandonRound drops the round a tick that did not commit took a step
// of: the records it restated are not in the log, so the round could not
// vouch for them. The next tick starts a new round.
func (c *Core) abandonRound(rd *Decisions) {
	if !rd.rounded {
		return
	}
	if c.round != nil {
		c.cfg.Logger.Info("snapshot round abandoned (its tick did not commit); a new one starts")
	}
	c.round, c.lastRound = nil, time.Time{}
}
