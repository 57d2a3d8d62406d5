package executor

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/atmostonce/toolexec/topicadmin"
	"github.com/atmostonce/toolexec/topics"
)

// replyTopics knows which topics may receive answers and their partition
// counts. A reply_to naming a topic that does not exist would make the
// whole transaction fail on every retry and wedge the partition, so it is
// checked before the intent is decided. Bounded: at most maxReplyTopics
// names are remembered.
type replyTopics struct {
	adm   *kadm.Client
	names topics.Names

	mu struct {
		sync.Mutex
		known   map[string]int32     // topic -> partitions
		missing map[string]time.Time // topic -> when it was last found missing
	}
}

const (
	maxReplyTopics = 1024
	missingTTL     = 10 * time.Second
)

func newReplyTopics(adm *kadm.Client, n topics.Names, l topicadmin.Layout) *replyTopics {
	r := &replyTopics{adm: adm, names: n}
	r.mu.known = map[string]int32{n.Results: l.ResultPartitions, n.DeadLetter: l.DeadLetterPartitions}
	r.mu.missing = map[string]time.Time{}
	return r
}

// check returns "" when topic can take answers, else why not.
func (r *replyTopics) check(topic string) string {
	if r.names.Internal(topic) {
		return "reply_to names an internal topic of the executor"
	}
	if r.partitions(topic) == 0 {
		return "reply_to names a topic that does not exist: " + topic
	}
	return ""
}

// forget drops what is known of topic: a produce to it failed because it
// is gone (deleted while an answer to it was owed). Before this the cache
// was never invalidated, and every transaction carrying an answer to the
// deleted topic aborted, one per transaction timeout (issue 12).
func (r *replyTopics) forget(topic string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if topic == r.names.Results || topic == r.names.DeadLetter {
		return
	}
	delete(r.mu.known, topic)
	r.mu.missing[topic] = time.Now()
}

// partitions returns topic's partition count, 0 if it does not exist.
func (r *replyTopics) partitions(topic string) int32 {
	r.mu.Lock()
	n, ok := r.mu.known[topic]
	at, miss := r.mu.missing[topic]
	r.mu.Unlock()
	if ok {
		return n
	}
	if miss && time.Since(at) < missingTTL {
		return 0
	}
	return r.lookup(topic)
}

func (r *replyTopics) lookup(topic string) int32 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	td, err := r.adm.ListTopics(ctx, topic)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.mu.known) >= maxReplyTopics {
		clear(r.mu.missing)
		return 0
	}
	d, ok := td[topic]
	if err != nil || !ok || d.Err != nil || len(d.Partitions) == 0 {
		if len(r.mu.missing) >= maxReplyTopics {
			clear(r.mu.missing)
		}
		r.mu.missing[topic] = time.Now()
		return 0
	}
	n := int32(len(d.Partitions))
	r.mu.known[topic] = n
	return n
}
