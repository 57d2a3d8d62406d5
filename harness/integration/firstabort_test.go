package integration

import (
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFirstTransactionAbortedIsDecidedAgain: the first transaction of a
// fresh group cannot flush its records (the broker does not answer the
// produce) before its end gives up, and is aborted. kgo rewinds a
// partition to its committed offset after an abort, and not at all when
// the end gave up during the flush; a partition the group never committed
// then stays where the aborted tick left it, and its records would never
// be decided (a leader killed seconds after the start does this). The
// member moves such partitions back to their start: the intent is decided again and
// answered, and the tool runs once.
//
// On a private kfake: the fault needs its request control.
func TestFirstTransactionAbortedIsDecidedAgain(t *testing.T) {
	u := newUnconfirmed(t, "fa", "")
	td, err := u.adm.ListTopics(u.ctx, u.names.Events)
	if err != nil {
		t.Fatal(err)
	}
	sw := &produceSwallower{cluster: u.cluster, topic: u.names.Events, id: td[u.names.Events].ID, window: 8 * time.Second}
	u.cluster.ControlKey(int16(kmsg.Produce), sw.control)
	u.callOK(t, "fa-1")
	if !sw.fired() {
		t.Fatal("no produce was swallowed: the test did not exercise the fault")
	}
	if n := u.ledger.total(); n != 1 {
		t.Fatalf("the tool saw %d requests, want 1", n)
	}
}

// produceSwallower never answers a produce to topic for window after the
// first one (the client times the request out); others pass.
type produceSwallower struct {
	cluster *kfake.Cluster
	topic   string
	id      [16]byte // produce names topics by id from version 13
	window  time.Duration

	mu    sync.Mutex
	first time.Time
}

func (s *produceSwallower) fired() bool { s.mu.Lock(); defer s.mu.Unlock(); return !s.first.IsZero() }

func (s *produceSwallower) control(req kmsg.Request) (kmsg.Response, error, bool) {
	s.cluster.KeepControl()
	pr := req.(*kmsg.ProduceRequest)
	s.mu.Lock()
	defer s.mu.Unlock()
	hit := false
	for _, t := range pr.Topics {
		hit = hit || t.Topic == s.topic || t.TopicID == s.id
	}
	if !hit {
		return nil, nil, false
	}
	if s.first.IsZero() {
		s.first = time.Now()
	}
	if time.Since(s.first) > s.window {
		return nil, nil, false
	}
	return nil, nil, true
}
