package chaos

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// A leader that changes (or a leader epoch that grows) is an election; an
// ISR that gets smaller is a shrink; growing back is neither.
func TestReplicaWatchCounts(t *testing.T) {
	look := func(leader, epoch int32, isr ...int32) kadm.TopicDetails {
		return kadm.TopicDetails{"t": {Topic: "t", Partitions: kadm.PartitionDetails{0: {Partition: 0, Leader: leader, LeaderEpoch: epoch, Replicas: []int32{1, 2, 3}, ISR: isr}}}}
	}
	w := newReplicaWatch(nil, "t")
	for _, td := range []kadm.TopicDetails{
		look(1, 0, 1, 2, 3),
		look(1, 0, 1, 2, 3), // nothing
		look(2, 1, 2, 3),    // node 1 died: an election and a shrink
		look(2, 1, 2, 3, 1), // it caught up
		look(2, 2, 2, 3, 1), // an election back to the same leader
		look(2, 2, 2),       // two replicas out at once: one shrink seen
	} {
		w.observe(td)
	}
	if e, s := w.Counts(); e != 2 || s != 2 {
		t.Fatalf("elections %d, shrinks %d; want 2 and 2", e, s)
	}
}
