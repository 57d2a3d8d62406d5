package executor

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/topics"
)

// TestRecordAtFault: only errors about the record itself isolate its
// origin; an error of a broker's restart must not, or its intents are
// answered `unproducible` (or, isolated twice, not at all).
func TestRecordAtFault(t *testing.T) {
	n := topics.NamesWithPrefix("tool.")
	cases := []struct {
		name  string
		err   error
		topic string
		want  bool
	}{
		{"caught before produce", fmt.Errorf("%w: 2 MB", errRecordTooLarge), n.Events, true},
		{"broker: message too large", kerr.MessageTooLarge, n.Results, true},
		{"broker: invalid record", kerr.InvalidRecord, n.DeadLetter, true},
		{"reply_to gone", kerr.UnknownTopicOrPartition, "agent.replies", true},
		{"reply_to not ours to write", kerr.TopicAuthorizationFailed, "agent.replies", true},
		{"results topic unknown during a restart", kerr.UnknownTopicOrPartition, n.Results, false},
		{"events topic unknown during a restart", kerr.UnknownTopicOrPartition, n.Events, false},
		{"not leader", kerr.NotLeaderForPartition, n.Events, false},
		{"fenced", kerr.InvalidProducerEpoch, n.Events, false},
		{"connection lost", errors.New("broker closed the connection"), "agent.replies", false},
		{"record timeout", kgo.ErrRecordTimeout, n.Results, false},
		{"cancelled", context.Canceled, n.Events, false},
	}
	for _, c := range cases {
		if got := recordAtFault(fmt.Errorf("produce: %w", c.err), c.topic, n); got != c.want {
			t.Errorf("%s: at fault %v, want %v", c.name, got, c.want)
		}
	}
}
