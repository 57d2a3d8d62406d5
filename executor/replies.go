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
// whole transaction fail on every retry and wedge the partition, so its
// answers go to the results topic instead (with the reason). The names a
// tick's intents give are looked up before the tick decides, in one
// bounded request (resolve), so that no lookup waits in the middle of
// encoding; a name only a stored waiter gives is looked up when its
// answer is encoded. Bounded: at most maxReplyTopics names are
// remembered.
type replyTopics struct {
	adm   *kadm.Client
	names topics.Names

	mu struct {
		sync.Mutex
		known   map[string]int32     // topic -> partitions
		missing map[string]time.Time // topic -> when it was last found missing
	}
}

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
// deleted topic aborted, one per transaction timeout.
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
	if n, known := r.cached(topic); known {
		return n
	}
	r.lookup(topic)
	n, _ := r.cached(topic)
	return n
}

// cached returns what is known of topic: its partitions (0: missing) and
// whether anything is known.
func (r *replyTopics) cached(topic string) (int32, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n, ok := r.mu.known[topic]; ok {
		return n, true
	}
	if at, miss := r.mu.missing[topic]; miss && time.Since(at) < replyMissingTTL {
		return 0, true
	}
	return 0, false
}

// resolve looks up, in one request, every name of topics not known yet
// (and not internal): the reply_to topics of a tick's intents.
func (r *replyTopics) resolve(names map[string]bool) {
	var unknown []string
	for t := range names {
		if _, known := r.cached(t); !known && !r.names.Internal(t) {
			unknown = append(unknown, t)
		}
	}
	if len(unknown) > 0 {
		r.lookup(unknown...)
	}
}

func (r *replyTopics) lookup(names ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), replyLookupTimeout)
	defer cancel()
	td, err := r.adm.ListTopics(ctx, names...)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, topic := range names {
		r.noteLocked(topic, td, err)
	}
}

func (r *replyTopics) noteLocked(topic string, td kadm.TopicDetails, err error) {
	if len(r.mu.known) >= maxReplyTopics {
		clear(r.mu.missing)
		return
	}
	d, ok := td[topic]
	if err != nil || !ok || d.Err != nil || len(d.Partitions) == 0 {
		if len(r.mu.missing) >= maxReplyTopics {
			clear(r.mu.missing)
		}
		r.mu.missing[topic] = time.Now()
		return
	}
	r.mu.known[topic] = int32(len(d.Partitions))
}
