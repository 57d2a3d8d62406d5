package executor

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/atmostonce/toolexec/executor/partition"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/topicadmin"
	"github.com/atmostonce/toolexec/topics"
)

// fakeTopics answers ListTopics from a set of existing topics and counts
// the requests and the names asked.
type fakeTopics struct {
	exist    map[string]bool
	requests int
	asked    map[string]int
}

func (f *fakeTopics) list(_ context.Context, names ...string) (kadm.TopicDetails, error) {
	f.requests++
	td := kadm.TopicDetails{}
	for _, n := range names {
		f.asked[n]++
		if f.exist[n] {
			td[n] = kadm.TopicDetail{Topic: n, Partitions: kadm.PartitionDetails{0: {}}}
		}
	}
	return td, nil
}

func newFakeReplies() (*replyTopics, *fakeTopics) {
	f := &fakeTopics{exist: map[string]bool{}, asked: map[string]int{}}
	r := newReplyTopics(nil, topics.NamesWithPrefix("tool."), topicadmin.Layout{ResultPartitions: 3, DeadLetterPartitions: 1})
	r.list = f.list
	return r, f
}

// The cache is bounded by eviction, never by refusal: once more reply
// topics than maxReplyTopics were used, a new one that exists still
// takes its answers (a refusal sent every answer to a gateway started
// after that point to the results topic until the executor restarted),
// and one evicted is looked up again when used.
func TestReplyTopicsPastTheBoundAreEvictedNotRefused(t *testing.T) {
	r, f := newFakeReplies()
	for i := range maxReplyTopics + 10 {
		name := fmt.Sprintf("agent.replies-%d", i)
		f.exist[name] = true
		r.resolve(map[string]bool{name: true})
	}
	f.exist["tool.gateway.late"] = true
	r.resolve(map[string]bool{"tool.gateway.late": true})
	if _, why := r.check("tool.gateway.late"); why != "" {
		t.Fatalf("a new gateway's topic after %d names: %s", maxReplyTopics+10, why)
	}
	if len(r.mu.entries) > maxReplyTopics || r.mu.lru.Len() != len(r.mu.entries) {
		t.Fatalf("cache holds %d names (%d in the list), the bound is %d", len(r.mu.entries), r.mu.lru.Len(), maxReplyTopics)
	}
	r.resolve(map[string]bool{"agent.replies-0": true}) // evicted: looked up again
	if _, why := r.check("agent.replies-0"); f.asked["agent.replies-0"] != 2 || why != "" {
		t.Fatalf("an evicted name: asked %d times, check %q", f.asked["agent.replies-0"], why)
	}
	if r.partitions("tool.results") != 3 || r.partitions("tool.deadletter") != 1 {
		t.Fatal("the results and dead-letter topics were evicted")
	}
}

// A name is looked up at most once a tick: the answers' topics in one
// request before they are encoded, and never again while encoding; a
// missing one is not asked again within replyMissingTTL.
func TestReplyTopicsOneLookupPerTick(t *testing.T) {
	r, f := newFakeReplies()
	f.exist["agent.a"], f.exist["agent.b"] = true, true
	e := &encoder{replies: r}
	var answers []partition.Answer
	for _, to := range []string{"agent.a", "agent.b", "agent.gone", "agent.a", ""} {
		answers = append(answers, answerTo(to))
	}
	e.resolveReplyTopics(answers)
	if f.requests != 1 || f.asked["agent.a"] != 1 || f.asked["agent.gone"] != 1 {
		t.Fatalf("%d requests, asked %v; want one request, each name once", f.requests, f.asked)
	}
	for range 3 {
		_, _ = r.check("agent.a")
		_, _ = r.check("agent.gone")
		e.resolveReplyTopics(answers)
	}
	if f.requests != 1 {
		t.Fatalf("%d requests: a known name, or one found missing, was asked again", f.requests)
	}
	_, gone := r.check("agent.gone")
	n, b := r.check("agent.b")
	if gone == "" || b != "" || n == 0 {
		t.Fatal("wrong answers from the cache")
	}
}

func answerTo(replyTo string) partition.Answer {
	return partition.Answer{Answer: saga.Answer{To: saga.Waiter{IntentID: "i", ReplyTo: replyTo}}}
}
