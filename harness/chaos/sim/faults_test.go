package sim

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestNoFaultMakesTheBrokerLie: a Produce is answered only as Kafka can
// answer it (truthfulWay says why), and other requests keep their way.
func TestNoFaultMakesTheBrokerLie(t *testing.T) {
	cases := []struct {
		kind string
		key  kmsg.Key
		code *kerr.Error
		want string
	}{
		{FaultRefused, kmsg.Produce, kerr.DuplicateSequenceNumber, FaultErrored},
		{FaultErrored, kmsg.Produce, kerr.DuplicateSequenceNumber, FaultErrored},
		{FaultErrored, kmsg.Produce, kerr.ClusterAuthorizationFailed, FaultRefused},
		{FaultErrored, kmsg.Produce, kerr.NotLeaderForPartition, FaultRefused},
		{FaultErrored, kmsg.Produce, kerr.NotEnoughReplicasAfterAppend, FaultErrored},
		{FaultErrored, kmsg.Produce, kerr.RequestTimedOut, FaultErrored},
		{FaultRefused, kmsg.Produce, kerr.ClusterAuthorizationFailed, FaultRefused},
		{FaultLost, kmsg.Produce, nil, FaultLost},
		{FaultErrored, kmsg.EndTxn, kerr.UnknownServerError, FaultErrored},
		{FaultRefused, kmsg.TxnOffsetCommit, kerr.DuplicateSequenceNumber, FaultRefused},
	}
	for _, c := range cases {
		if got := truthfulWay(c.kind, c.key, c.code); got != c.want {
			t.Errorf("%s %s %v: %s, want %s", c.kind, c.key.Name(), c.code, got, c.want)
		}
	}
}
