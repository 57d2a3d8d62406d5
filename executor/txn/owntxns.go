package txn

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/state"
)

// abortedTxns are the transactions this member treated as aborted: it
// asked End for an abort, or End did not confirm a commit and the group's
// committed offsets showed that the transaction's offsets had not moved, so the
// member polled its records again and redid the work. A hanging remnant of
// one of them must be closed with an abort marker: revealing it would
// answer its intents twice and log their started events twice. How other
// remnants are closed, hanging.go decides.
//
// Why in the store and not only in memory: every executor process gets a
// new transactional id, so after a kill -9 no live producer owns the old
// producer id, and the restarted process on the same data dir is the only
// one that can know. Without the record, another member could commit the
// remnant of a transaction whose writer had redone it and then been
// killed, and its intents would be answered twice. Kept for abortedTxnsTTL, far beyond the
// age at which a remnant is judged hanging. Only aborts are written,
// which are rare (rebalances, broker faults); a committed tick writes
// nothing more.
type abortedTxns struct {
	store *state.Store
	at    map[txnKey]time.Time
}

var abortedTxnPrefix = []byte(state.AuxAbortedTxns)

func abortedTxnKey(k txnKey) []byte {
	b := binary.BigEndian.AppendUint64(append([]byte(nil), abortedTxnPrefix...), uint64(k.pid))
	return binary.BigEndian.AppendUint16(b, uint16(k.epoch))
}

// loadAbortedTxns reads the recorded aborts, dropping those past the TTL.
func loadAbortedTxns(st *state.Store, now time.Time) (*abortedTxns, error) {
	a := &abortedTxns{store: st, at: map[txnKey]time.Time{}}
	var expired [][]byte
	err := st.ScanAux(abortedTxnPrefix, math.MaxInt, func(k, v []byte) error {
		if len(k) != len(abortedTxnPrefix)+10 || len(v) != 8 {
			return fmt.Errorf("executor: aborted transaction entry %q: bad size", k)
		}
		key := txnKey{pid: int64(binary.BigEndian.Uint64(k[len(abortedTxnPrefix):])), epoch: int16(binary.BigEndian.Uint16(k[len(abortedTxnPrefix)+8:]))}
		at := time.Unix(int64(binary.BigEndian.Uint64(v)), 0)
		if now.Sub(at) > abortedTxnsTTL {
			expired = append(expired, k)
			return nil
		}
		a.at[key] = at
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(expired) > 0 {
		b := st.NewBatch()
		for _, k := range expired {
			if err := b.DeleteAux(k); err != nil {
				b.Discard()
				return nil, err
			}
		}
		if err := b.Commit(state.Sync); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// add records k as aborted, synced: the decision it protects comes at
// least a hanging age later, possibly from the next process.
func (a *abortedTxns) add(k txnKey, now time.Time) error {
	b := a.store.NewBatch()
	if err := b.PutAux(abortedTxnKey(k), binary.BigEndian.AppendUint64(nil, uint64(now.Unix()))); err != nil {
		b.Discard()
		return err
	}
	if err := b.Commit(state.Sync); err != nil {
		return err
	}
	a.at[k] = now
	return nil
}

// aborted reports whether this member treated the transaction as aborted.
func (a *abortedTxns) aborted(pid int64, epoch int16) bool {
	_, ok := a.at[txnKey{pid, epoch}]
	return ok
}

// actedCommitted reports whether the offsets a transaction tried to
// commit are all covered by the group's committed offsets, for the
// partitions this member still owns: then the member went on as if it had
// committed, otherwise it polled those records again. Partitions it no
// longer owns are its new owner's (whose stable offset fetch waits for
// the remnant to be closed, either way).
func actedCommitted(tried, committed map[string]map[int32]kgo.EpochOffset, owned func(int32) bool) bool {
	for topic, ps := range tried {
		for p, eo := range ps {
			if !owned(p) {
				continue
			}
			c, ok := committed[topic][p]
			if !ok || c.Offset < eo.Offset {
				return false
			}
		}
	}
	return true
}

// txnKey names one transaction of one producer.
type txnKey struct {
	pid   int64
	epoch int16
}
