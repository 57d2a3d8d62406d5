package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/atmostonce/toolexec/topicadmin"
)

// replicaWatch polls the metadata of the run's topics and of the
// transaction and offsets logs every watchEvery, and counts the leader
// elections (a partition's leader or leader epoch changed) and the ISR
// shrinks (a partition's in-sync replicas fewer than at the last look) it
// sees. A change undone between two looks is missed: the counts are a
// floor. Safe for concurrent use.
type replicaWatch struct {
	adm    *kadm.Client
	topics []string

	mu        sync.Mutex
	last      map[string]partitionSeen
	elections int
	shrinks   int
}

type partitionSeen struct {
	leader, epoch int32
	isr           int
}

const watchEvery = time.Second

func newReplicaWatch(adm *kadm.Client, topics ...string) *replicaWatch {
	return &replicaWatch{adm: adm, topics: append(topics, topicadmin.TransactionLog, topicadmin.OffsetsLog), last: map[string]partitionSeen{}}
}

// run polls until ctx ends.
func (w *replicaWatch) run(ctx context.Context) {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		td, err := w.adm.ListTopicsWithInternal(lctx, w.topics...)
		cancel()
		if err == nil {
			w.observe(td)
		}
	}
}

func (w *replicaWatch) observe(td kadm.TopicDetails) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range td {
		for _, p := range t.Partitions {
			if p.Err != nil {
				continue
			}
			k := fmt.Sprintf("%s/%d", t.Topic, p.Partition)
			now := partitionSeen{leader: p.Leader, epoch: p.LeaderEpoch, isr: len(p.ISR)}
			if was, ok := w.last[k]; ok {
				if now.leader != was.leader || now.epoch > was.epoch {
					w.elections++
				}
				if now.isr < was.isr {
					w.shrinks++
				}
			}
			w.last[k] = now
		}
	}
}

// Counts returns the leader elections and ISR shrinks seen so far.
func (w *replicaWatch) Counts() (elections, shrinks int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.elections, w.shrinks
}

// waitInSync waits (up to within) until no partition of the cluster has
// a replica out of sync, and reports whether it saw that. A node fault
// waits for it first, as an operator would before taking the next node
// down: with replication factor 3 and min ISR 2 the cluster tolerates one
// node lost at a time.
func waitInSync(ctx context.Context, adm *kadm.Client, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		td, err := adm.ListTopicsWithInternal(lctx)
		cancel()
		if err == nil && allInSync(td) {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func allInSync(td kadm.TopicDetails) bool {
	for _, t := range td {
		for _, p := range t.Partitions {
			if p.Err != nil || p.Leader < 0 || len(p.ISR) < len(p.Replicas) {
				return false
			}
		}
	}
	return true
}
