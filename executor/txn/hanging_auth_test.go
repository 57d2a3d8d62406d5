package txn

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// A member without ClusterAction cannot close a hanging transaction: the
// broker refuses the marker, and the refusal is counted as not_authorized
// (the alert ToolexecHangingTransactionUnclosed), never as closed. A
// member without Read on a topic cannot look at its producers: those
// partitions are counted as unreadable (ToolexecHangingCheckBlind).
func TestARefusedRepairIsCountedNotClosed(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("PLAIN", "admin", "admin-pw"),
		kfake.User("PLAIN", "executor", "ex-pw",
			kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: "tool.", Pattern: kmsg.ACLResourcePatternTypePrefixed, Operation: kmsg.ACLOperationRead, Allow: true},
			kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: "tool.", Pattern: kmsg.ACLResourcePatternTypePrefixed, Operation: kmsg.ACLOperationDescribe, Allow: true}),
		kfake.SeedTopics(1, "tool.events", "other.topic"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.SASL(plain.Auth{User: "executor", Pass: "ex-pw"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	err = markersErr(adm.WriteTxnMarkers(ctx, kadm.TxnMarkers{ProducerID: 7, ProducerEpoch: 1, Commit: true, Topics: kadm.TopicsSet{"tool.events": {0: {}}}}))
	if err == nil || unclosedReason(err) != "not_authorized" {
		t.Fatalf("marker without ClusterAction: %v (reason %q), want not_authorized", err, unclosedReason(err))
	}
	if unclosedReason(context.DeadlineExceeded) != "error" {
		t.Fatal("any other failure is an error")
	}

	set := kadm.TopicsSet{"tool.events": {0: {}}, "other.topic": {0: {}}}
	described, err := adm.DescribeProducers(ctx, set)
	if n := blind(set, described, err); n != 2 {
		t.Fatalf("%d partitions not looked at (err %v), want 2: kadm fails the whole request when one topic is refused", n, err)
	}
	readable := kadm.TopicsSet{"tool.events": {0: {}}}
	described, err = adm.DescribeProducers(ctx, readable)
	if n := blind(readable, described, err); err != nil || n != 0 {
		t.Fatalf("readable topic: %d blind, err %v", n, err)
	}
}
