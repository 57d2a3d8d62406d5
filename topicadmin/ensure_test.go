package topicadmin

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/atmostonce/toolexec/kafkaretry"
	"github.com/atmostonce/toolexec/topics"
)

// TestALayoutNeedsEveryTopicWithItsPartitions: a listing that lacks a
// topic, or carries one with an error and no partitions (leaders moving
// on a cluster), is refused with a retriable error, never taken as a
// layout with no partitions.
func TestALayoutNeedsEveryTopicWithItsPartitions(t *testing.T) {
	n := topics.NamesWithPrefix("t.")
	full := func() kadm.TopicDetails {
		td := kadm.TopicDetails{}
		for _, name := range n.All() {
			td[name] = kadm.TopicDetail{Topic: name, Partitions: kadm.PartitionDetails{0: {Topic: name, Partition: 0}}}
		}
		return td
	}
	if err := complete(full(), n); err != nil {
		t.Fatalf("a full listing: %v", err)
	}
	cases := map[string]func(kadm.TopicDetails){
		"missing":       func(td kadm.TopicDetails) { delete(td, n.Results) },
		"no partitions": func(td kadm.TopicDetails) { td[n.Results] = kadm.TopicDetail{Topic: n.Results} },
		"an error": func(td kadm.TopicDetails) {
			td[n.Results] = kadm.TopicDetail{Topic: n.Results, Err: kerr.LeaderNotAvailable}
		},
	}
	for name, mod := range cases {
		td := full()
		mod(td)
		err := complete(td, n)
		if err == nil || !kafkaretry.Retriable(err) {
			t.Errorf("%s: %v, want a retriable error", name, err)
		}
		if name == "an error" && !errors.Is(err, kerr.LeaderNotAvailable) {
			t.Errorf("%s: %v does not carry the topic's error", name, err)
		}
	}
}
