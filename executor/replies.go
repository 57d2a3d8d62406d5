package executor

import (
	"container/list"
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
// answers go to the results topic instead (with the reason).
//
// Every name a tick needs is looked up before it is used, in one bounded
// request per step of the tick: the names its intents give before the
// decisions (prepare), the names its answers go to before they are
// encoded (encode, for the waiters stored in records), so a name is
// looked up at most once a tick and no lookup waits in the middle of
// encoding. What is known is kept in a cache bounded by eviction of the
// least recently used name, never by refusal: a new name always gets its
// lookup, however many names agents have used (a refusal past the bound
// sent every answer to a new gateway's topic to the results topic until
// the executor restarted). The results and dead-letter topics are always
// known.
type replyTopics struct {
	list   func(ctx context.Context, topics ...string) (kadm.TopicDetails, error)
	names  topics.Names
	pinned map[string]int32 // results and dead letters: never evicted

	mu struct {
		sync.Mutex
		entries map[string]*list.Element // of *replyEntry
		lru     *list.List               // front: most recently used
	}
}

// replyEntry is what is known of one topic: its partitions, or (0) that
// it was found missing at missingAt.
type replyEntry struct {
	topic      string
	partitions int32
	missingAt  time.Time
}

func newReplyTopics(adm *kadm.Client, n topics.Names, l topicadmin.Layout) *replyTopics {
	r := &replyTopics{list: adm.ListTopics, names: n,
		pinned: map[string]int32{n.Results: l.ResultPartitions, n.DeadLetter: l.DeadLetterPartitions}}
	r.mu.entries = map[string]*list.Element{}
	r.mu.lru = list.New()
	return r
}

// check returns topic's partitions when it can take answers, else why
// not. It reads
// what is known (resolve looked the names up): a name still unknown is
// taken as missing.
func (r *replyTopics) check(topic string) (partitions int32, why string) {
	if r.names.Internal(topic) {
		return 0, "reply_to names an internal topic of the executor"
	}
	if n := r.partitions(topic); n > 0 {
		return n, ""
	}
	return 0, "reply_to names a topic that does not exist: " + topic
}

// partitions returns topic's partition count as known, 0 if it does not
// exist or is not known.
func (r *replyTopics) partitions(topic string) int32 {
	n, _ := r.cached(topic)
	return n
}

// forget drops what is known of topic: a produce to it failed because it
// is gone (deleted while an answer to it was owed). It is taken as missing
// for replyMissingTTL, then looked up again.
func (r *replyTopics) forget(topic string) {
	if _, pinned := r.pinned[topic]; pinned {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.putLocked(topic, 0)
}

// cached returns what is known of topic: its partitions (0: missing) and
// whether anything is known; a use makes it the most recently used.
func (r *replyTopics) cached(topic string) (int32, bool) {
	if n, pinned := r.pinned[topic]; pinned {
		return n, true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	el, ok := r.mu.entries[topic]
	if !ok {
		return 0, false
	}
	en := el.Value.(*replyEntry)
	if en.partitions == 0 && time.Since(en.missingAt) >= replyMissingTTL {
		r.removeLocked(el)
		return 0, false
	}
	r.mu.lru.MoveToFront(el)
	return en.partitions, true
}

// resolve looks up, in one request, every name of topics not known yet
// (and not internal).
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
	td, err := r.list(ctx, names...)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, topic := range names {
		d, ok := td[topic]
		if err != nil || !ok || d.Err != nil || len(d.Partitions) == 0 {
			r.putLocked(topic, 0)
			continue
		}
		r.putLocked(topic, int32(len(d.Partitions)))
	}
}

// putLocked records what is known of topic as the most recently used,
// and evicts the least recently used names past maxReplyTopics.
func (r *replyTopics) putLocked(topic string, partitions int32) {
	en := &replyEntry{topic: topic, partitions: partitions}
	if partitions == 0 {
		en.missingAt = time.Now()
	}
	if el, ok := r.mu.entries[topic]; ok {
		el.Value = en
		r.mu.lru.MoveToFront(el)
	} else {
		r.mu.entries[topic] = r.mu.lru.PushFront(en)
	}
	for r.mu.lru.Len() > maxReplyTopics {
		r.removeLocked(r.mu.lru.Back())
	}
}

func (r *replyTopics) removeLocked(el *list.Element) {
	r.mu.lru.Remove(el)
	delete(r.mu.entries, el.Value.(*replyEntry).topic)
}
