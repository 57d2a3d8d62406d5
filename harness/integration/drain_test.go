package integration

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/atmostonce/toolexec/executor"
	"github.com/atmostonce/toolexec/wire"
)

// TestDrainThatCannotRecordEndsCleanly: a member drains (here for a
// shutdown; a rebalance drains the same way) while its partition must
// first catch up from the log (its last transaction's end was not
// confirmed) and the broker does not answer the restore's offset requests
// (a leader moving, a node away). The drain must not return the deferred
// tick's error (on a rebalance the member would exit: "retry tick:
// restore partition 2"): it ends as if timed out: the call's key stays in doubt
// for the next owner, and the member goes on (here: stops cleanly).
//
// On a private kfake: the fault needs its request control.
func TestDrainThatCannotRecordEndsCleanly(t *testing.T) {
	var mu sync.Mutex
	var logs bytes.Buffer
	u := newUnconfirmed(t, "dr", "", func(c *executor.Config) {
		c.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(testWriter{t}, lockedWriter{&mu, &logs}), &slog.HandlerOptions{Level: logLevel()}))
	})
	u.callOK(t, "dr-0") // restored, and a first commit went through
	go func() {
		_, _ = u.client.Call(u.ctx, wire.Intent{Tool: "t.block", Key: "dr-1", Args: map[string]any{}})
	}()
	u.ledger.waitArrivals(t, 2, 30*time.Second) // dr-0, and dr-1 in flight: the drain has work
	refuse := &offsetsRefuser{cluster: u.cluster, topic: u.names.Events}
	u.cluster.ControlKey(int16(kmsg.ListOffsets), refuse.control)
	u.drop.arm() // dr-2's commit is applied, its answer lost: the partition must catch up
	go func() { _, _ = u.client.Call(u.ctx, wire.Intent{Tool: "t.ok", Key: "dr-2", Args: map[string]any{}}) }()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(logged(&mu, &logs), "partitions catch up from the log"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no transaction end was left unconfirmed")
		}
	}
	u.stop()
	u.ledger.releaseAll() // dr-1 finishes during the drain: its outcome needs the restore
	select {
	case <-u.ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the member did not stop within 30 s")
	}
	if u.runErr != nil {
		t.Fatalf("the drain failed the member: %v", u.runErr)
	}
	if !strings.Contains(logged(&mu, &logs), "drain cut short") {
		t.Fatalf("the drain never met a restore it could not do (%d offset requests refused): the test did not exercise the fault", refuse.count())
	}
}

func logged(mu *sync.Mutex, b *bytes.Buffer) string {
	mu.Lock()
	defer mu.Unlock()
	return b.String()
}

// offsetsRefuser closes the connection of every ListOffsets request for
// topic.
type offsetsRefuser struct {
	cluster *kfake.Cluster
	topic   string
	mu      sync.Mutex
	n       int
}

func (r *offsetsRefuser) control(req kmsg.Request) (kmsg.Response, error, bool) {
	r.cluster.KeepControl()
	hit := false
	for _, t := range req.(*kmsg.ListOffsetsRequest).Topics {
		hit = hit || t.Topic == r.topic
	}
	if !hit {
		return nil, nil, false
	}
	r.mu.Lock()
	r.n++
	r.mu.Unlock()
	return nil, errDropped, true
}

func (r *offsetsRefuser) count() int { r.mu.Lock(); defer r.mu.Unlock(); return r.n }
