package txn

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The fence adds an entry only for partitions the request lacks, at the
// committed offset, under the member id like franz-go's own entries.
func TestFenceAddsMissingPartitions(t *testing.T) {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.MemberID = "m-1"
	addPartition(req, "tool.intents", 0, kgo.EpochOffset{Epoch: 3, Offset: 40})
	if !hasPartition(req, "tool.intents", 0) || hasPartition(req, "tool.intents", 1) || hasPartition(req, "tool.control", 0) {
		t.Fatalf("hasPartition disagrees with the request: %+v", req.Topics)
	}
	addPartition(req, "tool.intents", 1, kgo.EpochOffset{Epoch: 3, Offset: 7})
	addPartition(req, "tool.control", 1, kgo.EpochOffset{Epoch: 1, Offset: 2})
	if len(req.Topics) != 2 || len(req.Topics[0].Partitions) != 2 {
		t.Fatalf("entries not grouped by topic: %+v", req.Topics)
	}
	p := req.Topics[0].Partitions[1]
	if p.Partition != 1 || p.Offset != 7 || p.LeaderEpoch != 3 || p.Metadata == nil || *p.Metadata != "m-1" {
		t.Fatalf("fence entry: %+v", p)
	}
}
